"""Proof that the fragment diagnosis names a wrong register-fragment model, on the GPU (the truth).

For each edit of harness/families/wgmma/fragments_probe.py's catalogue (D edits on the SS and RS f16 kernels, A edits
on the RS kernel), the edit is planted in this process's model (harness.spec.fragments, lru caches cleared),
the ordinary cases of the kernel are prepared here with the planted model and run on a GPU worker through the
engine's own `run_isolated` (prepare, launch, read back: the worker only launches, so the plant needs no hook in
the harness), and the first failing case is diagnosed with the wgmma family's `diagnose` (address probe +
fragment probes). One JSON line per edit: failing cases, the fragment records' summaries, and whether the
planted edit was named. A baseline without a plant must pass every case and both probes.

    python3 benchmarks/fragment_diagnosis_proof.py --out results/<run>/probe-fragment-proof.jsonl
    python3 benchmarks/fragment_diagnosis_proof.py --simulated   # CPU: the simulated wgmma device

Exit 0 when every edit was named (and the baseline is clean), 1 otherwise.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.families.wgmma import fragments_probe as FP  # noqa: E402
from harness.families import wgmma as W  # noqa: E402
from harness.families.wgmma import cases as C, forms, readback  # noqa: E402
from harness.run.engine import run_isolated  # noqa: E402
from harness.run.worker import GpuWorker  # noqa: E402
from harness.spec import fragments  # noqa: E402


def _clear():
    for f in (fragments.wgmma_d_fragment, fragments.wgmma_a_fragment, readback._d_owner, readback._d_gather):
        if hasattr(f, "cache_clear"):
            f.cache_clear()


@contextlib.contextmanager
def planted(edit: FP.Edit | None):
    """The model's fragment (D or A) becomes edit(model) for the duration."""
    if edit is None:
        yield
        return
    name = "wgmma_d_fragment" if edit.operand == "D" else "wgmma_a_fragment"
    orig = getattr(fragments, name)
    _clear()

    def edited(*args):
        f = orig(*args)
        row, col = edit.apply(FP.as_slots(f, FP.Slots(edit.operand, f.row.shape[1], f.bits, f.regs_per_thread)))
        return fragments.Fragment(row, col, f.reg, f.shift, f.bits, f.regs_per_thread)
    setattr(fragments, name, edited)
    try:
        yield
    finally:
        setattr(fragments, name, orig)
        _clear()


def cubins(keys, simulated: bool) -> dict:
    if simulated:
        return {k: f"/nonexistent/simulated/{k.name}.cubin" for k in keys}
    from harness.families.wgmma import kernel as wk
    from harness.run import compile as nvrtc
    got = nvrtc.compile_many([nvrtc.CompileJob(k.name, wk.source(k), "sm_90a") for k in keys])
    return {k: str(c.cubin_path) for k, c in zip(keys, got)}


def run_one(key, edit, cases, cubin_of, worker, timeout, png_dir, log) -> dict:
    kernel = W.FAMILY.kernel_of(key)
    t = time.time()
    with planted(edit):
        launch, expectations = W.FAMILY.prepare(kernel, cases)
        recs = run_isolated(worker, kernel, expectations, launch, cubin_of(key), timeout, log)
        failing = [r for r in recs if r["status"] != "pass"]
        by_id = {c.id: c for c in cases}
        diag = []
        if failing or edit is None:
            probe = [by_id[failing[0]["id"]]] if failing else cases[:1]
            diag = W.FAMILY.diagnose(kernel, probe, cubin_of(key), worker, timeout, png_dir)
    frag = [r for r in diag if r.get("probe")]
    if edit is None:
        named = not failing and bool(frag) and all(r["status"] == "pass" for r in frag)
    else:
        named = any(r.get("edit") == edit.id or edit.id in r.get("equivalent_edits", []) for r in frag)
    return {"kernel": key.name, "edit": edit.id if edit else None, "cases": len(cases), "failing": len(failing),
            "fragment_diagnosis": [{k: r.get(k) for k in ("probe", "status", "edit", "summary", "png")}
                                   for r in frag],
            "address_diagnosis": [r.get("summary") for r in diag if not r.get("probe")][:2],
            "named": named, "seconds": round(time.time() - t, 2)}


PICTURED = {("D:slots^2", "SS"), ("A:slots^4", "RS")}  # the two examples


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/fragment-diagnosis-proof.jsonl")
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--max-cases", type=int, default=120, help="ordinary cases per kernel (every variant first)")
    ap.add_argument("--simulated", action="store_true", help="run on the simulated wgmma device (CPU)")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--png-all", action="store_true",
                    help="draw pictures for every edit (default: only D:slots^2 and A:slots^4, the issue's examples)")
    ap.add_argument("--budget-s", type=float, default=225.0,
                    help="stop planting new edits after this many seconds (those left count as not named)")
    args = ap.parse_args(argv)
    ss, rs = forms.KernelKey("f16", args.n, "f32", "SS"), forms.KernelKey("f16", args.n, "f16", "RS")
    keys = [ss, rs, FP.sibling(rs)]
    t0 = time.time()
    paths = cubins(keys, args.simulated)
    print(f"compiled {len(keys)} kernels in {time.time() - t0:.1f}s", flush=True)
    cubin_of = paths.__getitem__
    cases = {k: [c for c in C.cases_for_key(k, ("exact",), False)][:args.max_cases] for k in (ss, rs)}
    plan = [(ss, None), (rs, None)]
    plan += [(ss, e) for e in FP.edits("D", FP.d_slots(ss))]
    plan += [(rs, e) for e in FP.edits("D", FP.d_slots(rs))]
    plan += [(rs, e) for e in FP.edits("A", FP.a_slots("f16"))]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    png_dir = out.parent / f"{out.stem}-png"
    worker = GpuWorker(0, "tests.simulated.wgmma_device" if args.simulated else "harness.run.launch")
    worker.start()
    ok = True
    try:
        with out.open("w") as fh:
            for key, edit in plan:
                if time.time() - t0 > args.budget_s:
                    rec = {"kernel": key.name, "edit": edit.id if edit else None, "named": False,
                           "error": f"not run: past the {args.budget_s:g} s budget"}
                    fh.write(json.dumps(rec) + "\n")
                    ok = False
                    print(f"BAD {key.name} {rec['edit']}: {rec['error']}", flush=True)
                    continue
                draw = args.png_all or (edit is not None and (edit.id, key.a_src) in PICTURED)
                rec = run_one(key, edit, cases[key], cubin_of, worker, args.timeout, png_dir if draw else None,
                              lambda m: print(m, flush=True))
                fh.write(json.dumps(rec) + "\n")
                fh.flush()
                ok &= rec["named"]
                head = rec["fragment_diagnosis"][0]["summary"] if rec["fragment_diagnosis"] else "-"
                named = [r["summary"] for r in rec["fragment_diagnosis"] if r.get("edit")]
                print(f"{'OK ' if rec['named'] else 'BAD'} {key.name} {rec['edit'] or 'baseline'}: "
                      f"{rec['failing']}/{rec['cases']} fail; {named[0] if named else head} ({rec['seconds']}s)",
                      flush=True)
    finally:
        worker.close()
    print(f"{'every edit named' if ok else 'NOT every edit named'}; {time.time() - t0:.0f}s; {out}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
