"""Proof that the tcgen05 Tensor Memory and scale-factor probes name a wrong model, on a Blackwell GPU (the truth).

For each planted edit, the edit goes into this process's model -- where D sits (datapaths.d_position, as seen by
the reference, the read-back and tmem_probe) or where a scale factor sits in its shared-memory tile
(datapaths.sf_smem_offset, as seen by the reference and sf_probe; the same edit for A's and B's factors) --; the
form's ordinary cases are prepared here with the planted model and run on a GPU worker through the engine's own
`run_isolated` (the worker only launches, so the plant needs no hook in the harness); the first failing case is
diagnosed with the tcgen05 family's `diagnose` (address probe, tmem-d, scale-factors). A D edit is named when the
tmem-d record says the hardware places D as the unplanted data path and the model as the planted edit; a
scale-factor edit when the scale-factors record names that edit of A's and B's factors (all are involutions, so
the hardware's reading is the planted model with the same edit). One JSON line per edit; a baseline per form
without a plant must pass every case and both probes.

    python3 benchmarks/tcgen05_probe_proof.py --out results/<run>/probe-tcgen05-proof.jsonl            # B200
    python3 benchmarks/tcgen05_probe_proof.py --arch sm_103a --out results/<run>/probe-tcgen05-proof.jsonl  # B300
    python3 benchmarks/tcgen05_probe_proof.py --simulated   # CPU: the simulated probe device

Exit 0 when every edit was named (and every baseline is clean), 1 otherwise.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.families import tcgen05 as TC  # noqa: E402
from harness.families.tcgen05 import datapaths, readback, reference  # noqa: E402
from harness.families.tcgen05.forms import Form  # noqa: E402
from harness.run.engine import run_isolated  # noqa: E402
from harness.run.worker import GpuWorker  # noqa: E402

D_PATH = {"D": "data path D (lane = row)", "F": "data path F (rows 16 per 32-lane quarter)",
          "A": "data path A (M=256 pair: 128 rows per CTA)",
          "B": "data path B (M=128 pair: 64 rows per CTA, column halves on lanes +64)",
          "E": "data path E (.ws M=64: column halves on lanes +64)",
          "G": "data path G (.ws M=32: column quarters on lanes +32)"}


@dataclass(frozen=True)
class Plant:
    id: str
    form: Form
    m: int  # the cases of this M
    what: str  # 'D', 'SF' or 'baseline'
    change: Callable | None = None  # D: (m, n, cta, lane, col) -> (cta, lane, col); SF: (mn, block) -> (mn, block)
    hardware: str = ""  # D: the words the record must give for the hardware (the unplanted data path)
    model: str = ""  # D: the words for the planted model; SF: the edit id the record must name


def _quarters(m, n, cta, lane, col):
    return cta, 32 * (3 - lane // 32) + lane % 32, col


def _plants() -> list[Plant]:
    f16, f16_pair, ws = Form("f16"), Form("f16", 2), Form("f16", ws=True)
    out = [Plant("baseline", f, m, "baseline") for f, m in
           ((f16, 128), (f16_pair, 256), (f16_pair, 128), (ws, 64), (ws, 32), (Form("mxf8f6f4"), 128),
            (Form("mxf4"), 128), (Form("mxf4nvf4"), 128), (Form("mxf8f6f4", 2), 256))]
    out += [
        Plant("D:quarters-reversed", f16, 128, "D", _quarters, D_PATH["D"],
              f"{D_PATH['D']} with the 32-lane quarters in reverse order"),
        Plant("D:rows^8", f16, 64, "D", lambda m, n, t, l, c: (t, l ^ 8, c), D_PATH["F"],
              f"{D_PATH['F']} with rows r and r+8 exchanged"),
        Plant("D:ctas-exchanged", f16_pair, 256, "D", lambda m, n, t, l, c: (1 - t, l, c), D_PATH["A"],
              f"{D_PATH['A']} with the pair's CTAs exchanged"),
        Plant("D:pair-by-columns", f16_pair, 128, "D", _pair_by_columns, D_PATH["B"],
              "the pair split by columns (CTA c // (N/2) holds every row of its columns)"),
        Plant("D:halves-reversed", ws, 64, "D", _halves_reversed, D_PATH["E"],
              f"{D_PATH['E']} with the column halves in reverse order"),
        Plant("D:interleaved", ws, 32, "D", _interleaved, D_PATH["G"],
              f"{D_PATH['G']} with columns interleaved over the four lane quarters (column c on quarter c % 4)"),
        Plant("D:columns^1", Form("mxf4"), 128, "D", lambda m, n, t, l, c: (t, l, c ^ 1), D_PATH["D"],
              f"{D_PATH['D']} with columns c and c+1 exchanged"),
    ]
    rows = {"rows-reversed": lambda mn, b: (32 * (mn // 32) + 31 - mn % 32, b),
            "rows^1": lambda mn, b: (mn ^ 1, b), "rows^16": lambda mn, b: (mn ^ 16, b),
            "groups-reversed": lambda mn, b: (32 * (3 - (mn % 128) // 32) + mn % 32 + 128 * (mn // 128), b)}
    for kind, cg, m in (("mxf8f6f4", 1, 128), ("mxf4", 1, 128), ("mxf4nvf4", 1, 128), ("mxf8f6f4", 2, 256)):
        for name, f in rows.items():
            out.append(Plant(f"SF:{name}", Form(kind, cg), m, "SF", f, model=f"sf:{name}@A,B"))
    out.append(Plant("SF:blocks-reversed", Form("mxf4"), 128, "SF", lambda mn, b: (mn, 1 - b),
                     model="sf:blocks-reversed@A,B"))
    out.append(Plant("SF:blocks-reversed", Form("mxf4nvf4"), 128, "SF", lambda mn, b: (mn, 3 - b),
                     model="sf:blocks-reversed@A,B"))
    out.append(Plant("SF:blocks-pairs", Form("mxf4nvf4"), 128, "SF", lambda mn, b: (mn, b ^ 1),
                     model="sf:blocks-pairs@A,B"))
    return out


def _pair_by_columns(m, n, cta, lane, col):
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return c // (n // 2), r, c % (n // 2)


def _halves_reversed(m, n, cta, lane, col):
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return cta, r + 64 * (1 - c // (n // 2)), col


def _interleaved(m, n, cta, lane, col):
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return cta, r + 32 * (c % 4), c // 4


@contextlib.contextmanager
def planted(p: Plant):
    """The model's D placement or scale-factor offsets become the edited ones for the duration."""
    if p.what == "baseline":
        yield
        return
    if p.what == "D":
        orig, name, mods = datapaths.d_position, "d_position", (datapaths, reference, readback)

        def edited(m, n, cg, ws, dtype):
            cta, lane, col, half = orig(m, n, cg, ws, dtype)
            return (*p.change(m, n, cta, lane, col), half)
    else:
        orig, name, mods = datapaths.sf_smem_offset, "sf_smem_offset", (datapaths, reference)

        def edited(mn, block):
            return orig(*p.change(np.asarray(mn), np.asarray(block)))
    for mod in mods:
        setattr(mod, name, edited)
    try:
        yield
    finally:
        for mod in mods:
            setattr(mod, name, orig)


def named(p: Plant, diag: list[dict], failing: int) -> bool:
    by = {r.get("probe"): r for r in diag if r.get("probe") in ("tmem-d", "scale-factors")}
    if p.what == "baseline":
        want = {"tmem-d"} | ({"scale-factors"} if p.form.block_scaled else set())
        return not failing and set(by) == want and all(r["status"] == "pass" for r in by.values())
    if p.what == "D":
        r = by.get("tmem-d", {})
        return r.get("explanation") == p.hardware and r.get("model_is") == p.model
    r = by.get("scale-factors", {})
    return r.get("edit") == p.model or p.model in r.get("equivalent_edits", [])


def run_one(p: Plant, kernel, cases, cubin, worker, timeout, png_dir, log) -> dict:
    t = time.time()
    with planted(p):
        launch, expectations = TC.FAMILY.prepare(kernel, cases)
        recs = run_isolated(worker, kernel, expectations, launch, cubin, timeout, log)
        failing = [r for r in recs if r["status"] != "pass"]
        by_id = {c.id: c for c in cases}
        probe = [by_id[failing[0]["id"]]] if failing else cases[:1]
        diag = TC.FAMILY.diagnose(kernel, probe, cubin, worker, timeout, png_dir)
    probes = [r for r in diag if r.get("probe") in ("tmem-d", "scale-factors")]
    return {"form": kernel.name, "m": p.m, "plant": p.id, "cases": len(cases), "failing": len(failing),
            "diagnosis": [{k: r.get(k) for k in ("probe", "status", "edit", "explanation", "model_is", "summary",
                                                 "png")} for r in probes],
            "named": named(p, diag, len(failing)), "seconds": round(time.time() - t, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/scratch/probe-tcgen05-proof.jsonl")
    ap.add_argument("--arch", default="sm_100a", choices=("sm_100a", "sm_103a"))
    ap.add_argument("--simulated", action="store_true", help="run on the simulated tcgen05 probe device (CPU)")
    ap.add_argument("--max-cases", type=int, default=24, help="ordinary cases per form and M")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--png-all", action="store_true", help="draw pictures for every plant (default: none)")
    ap.add_argument("--budget-s", type=float, default=300.0,
                    help="stop planting after this many seconds (those left count as not named)")
    ap.add_argument("--only", default="", help="comma-separated plant ids (e.g. SF:rows^1,baseline): only these")
    args = ap.parse_args(argv)
    t0 = time.time()
    only = {x for x in args.only.split(",") if x}
    plants = [p for p in _plants() if not only or p.id in only]
    forms = {p.form for p in plants}
    kernels = {k.form: (k, cs) for k, cs in TC.FAMILY.kernels(args.arch) if k.form in forms}
    if args.simulated:
        cubin = {f: f"/nonexistent/simulated/{f.name}.cubin" for f in forms}
    else:
        from harness.families.tcgen05 import kernel as tk
        from harness.run import compile as nvrtc
        fs = sorted(forms, key=lambda f: f.name)
        got = nvrtc.compile_many([nvrtc.CompileJob(f.name, tk.source(f), args.arch) for f in fs])
        cubin = {f: str(c.cubin_path) for f, c in zip(fs, got)}
    print(f"compiled {len(forms)} kernels in {time.time() - t0:.1f}s", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    png_dir = out.parent / f"{out.stem}-png"
    worker = GpuWorker(0, "tests.simulated.tcgen05_probe_device" if args.simulated else "harness.run.launch")
    worker.start()
    ok = True
    try:
        with out.open("w") as fh:
            for p in plants:
                kernel, cs = kernels[p.form]
                # ordinary cases of this M (the simulated device does not apply .ws zero-column masks)
                cases = [c for c in cs if not c.control and c.m == p.m and c.zero_mask is None][:args.max_cases]
                if time.time() - t0 > args.budget_s:
                    rec = {"form": kernel.name, "plant": p.id, "named": False,
                           "error": f"not run: past the {args.budget_s:g} s budget"}
                else:
                    rec = run_one(p, kernel, cases, cubin[p.form], worker, args.timeout,
                                  png_dir if args.png_all else None, lambda msg: print(msg, flush=True))
                fh.write(json.dumps(rec) + "\n")
                fh.flush()
                ok &= rec["named"]
                said = [d["summary"] for d in rec.get("diagnosis", []) if d["status"] != "pass"]
                print(f"{'OK ' if rec['named'] else 'BAD'} {kernel.name} M={p.m} {p.id}: "
                      f"{rec.get('failing', '-')}/{rec.get('cases', '-')} fail; "
                      f"{said[0] if said else rec.get('error', 'probes pass')} ({rec.get('seconds', '-')}s)", flush=True)
    finally:
        worker.close()
    print(f"{'every edit named' if ok else 'NOT every edit named'}; {time.time() - t0:.0f}s; {out}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
