"""The host side of a sweep, on any machine (no GPU): per case, what preparing a launch costs one core (drawing the
matrices, writing the shared-memory image, packing registers, the reference), and what moving a launch and its
outputs through the engine's spool files costs (written by a preparing process, read by the GPU worker, which reads
every launch in turn; outputs the other way). A warm sweep on a GPU node is bounded by these and the GPU worker.

    python benchmarks/bench_host.py --out results/<run>/bench-host.json [--kernels 20] [--repeat 3] [--family ...]

`digest` in the output is a sha256 of every sampled launch and its expectations: equal at two commits, their
preparation gives the same bytes (a speed-up must not change what is launched or expected).
"""
import argparse
import dataclasses
import hashlib
import json
import os
import random
import tempfile
import time
from pathlib import Path

import sys

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's harness, run from anywhere

from harness import plan as planning, registry  # noqa: E402
from harness.run import engine  # noqa: E402
from harness.contract import LaunchInput  # noqa: E402
from harness.run.launch import load_outputs, save_outputs  # noqa: E402


def feed(digest, value) -> None:
    """Hash what a value is, not how it is pickled: a pickle also records which sub-objects are shared, and a plan
    built afresh shares them otherwise than one read back from the plan cache (the same preparation digested two
    ways after a change of the harness's source, which is what the plan cache is keyed on)."""
    if isinstance(value, np.ndarray):
        digest.update(f"array {value.dtype.str} {value.shape}".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        digest.update(type(value).__name__.encode())
        for f in dataclasses.fields(value):
            feed(digest, getattr(value, f.name))
    elif isinstance(value, dict):
        digest.update(b"dict")
        for k in sorted(value, key=repr):
            feed(digest, k)
            feed(digest, value[k])
    elif isinstance(value, (list, tuple)):
        digest.update(f"{type(value).__name__} {len(value)}".encode())
        for v in value:
            feed(digest, v)
    else:
        digest.update(repr(value).encode())
    digest.update(b"\0")


def measure(family: str, kernels: int, spool: str, repeat: int) -> dict:
    fam = registry.get(family)
    arch = str(fam.archs[0])
    work = planning.make(planning.Selection(families=(family,)), {family: arch}, None, cache=True).work
    random.Random(1).shuffle(work)
    work = work[:kernels]
    prep_s = float("inf")
    for _ in range(repeat):  # the least of `repeat` passes: this machine's other load only ever adds time
        t = time.perf_counter()
        prepared = [engine.prepare(kernel, cs) for kernel, cs in work]
        prep_s = min(prep_s, time.perf_counter() - t)
    digest = hashlib.sha256()
    for inp, expectations in prepared:
        for arr in (inp.images, inp.params, *inp.inputs.values()):
            digest.update(np.ascontiguousarray(arr).tobytes())
        feed(digest, expectations)
    save_s = load_s = out_save_s = out_load_s = 0.0
    cases = nbytes = out_bytes = 0
    for (kernel, cs), (inp, _) in zip(work, prepared):
        cases += len(cs)
        nbytes += inp.images.nbytes + inp.params.nbytes + sum(v.nbytes for v in inp.inputs.values())
        path = os.path.join(spool, "launch.pkl")
        t = time.perf_counter()
        inp.save(path)
        save_s += time.perf_counter() - t
        t = time.perf_counter()
        LaunchInput.load(path)
        load_s += time.perf_counter() - t
        outputs = {k: np.full((inp.ctas, *o.shape), o.fill, dtype=o.dtype) for k, o in inp.outputs.items()}
        out_bytes += sum(v.nbytes for v in outputs.values())
        t = time.perf_counter()
        save_outputs(outputs, os.path.join(spool, "out.pkl"))
        out_save_s += time.perf_counter() - t
        t = time.perf_counter()
        load_outputs(os.path.join(spool, "out.pkl"))
        out_load_s += time.perf_counter() - t
    per_case_ms = lambda s: round(1e3 * s / cases, 4)  # noqa: E731
    return {"kernels": len(work), "cases": cases, "digest": digest.hexdigest(), "repeat": repeat,
            "prepare_ms_per_case": per_case_ms(prep_s),
            "launch_kb_per_case": round(nbytes / cases / 1024, 1),
            "outputs_kb_per_case": round(out_bytes / cases / 1024, 1),
            "spool_write_ms_per_case": per_case_ms(save_s), "spool_read_ms_per_case": per_case_ms(load_s),
            "outputs_write_ms_per_case": per_case_ms(out_save_s), "outputs_read_ms_per_case": per_case_ms(out_load_s)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels", type=int, default=20, help="kernels sampled per family (seeded)")
    ap.add_argument("--repeat", type=int, default=3, help="preparation passes; the least time counts")
    ap.add_argument("--family", action="append", help="default: wgmma and wgmma_sp")
    a = ap.parse_args()
    known = registry.registry()
    fams = a.family or ["wgmma", "wgmma_sp"]
    bad = [f for f in fams if f not in known]
    if bad or a.kernels < 1 or a.repeat < 1:
        why = f"unknown family {bad[0]!r}" if bad else "--kernels and --repeat must be >= 1"
        raise SystemExit(f"bench_host: {why}")
    report = {"cpus": os.cpu_count(), "families": {}}
    with tempfile.TemporaryDirectory(dir=engine.spool_dir()) as spool:
        for f in fams:
            report["families"][f] = r = measure(f, a.kernels, spool, a.repeat)
            print(f"{f:<10} {r['cases']:>6} cases: prepare {r['prepare_ms_per_case']} ms, launch "
                  f"{r['launch_kb_per_case']} KB (spool write {r['spool_write_ms_per_case']} ms, read "
                  f"{r['spool_read_ms_per_case']} ms), outputs {r['outputs_kb_per_case']} KB (write "
                  f"{r['outputs_write_ms_per_case']} ms, read {r['outputs_read_ms_per_case']} ms) per case; "
                  f"digest {r['digest'][:16]}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
