"""Batched harness vs the naive way, side by side on one subset, same machine, same run.

The naive way: for every case, compile a module holding just that case's instruction (NVRTC, no cache),
load it, launch one CTA, wait, diff. The harness: one kernel per instruction form compiled in parallel into
an empty cache, every case of a form in one launch, GPU workers and host preparation overlapped. Both
include compilation, preparation, launch and diff; both must get every case right.

Run by hand on the GPU machine, from the repo root:
    python3 benchmarks/bench_naive.py --out results/<run>/bench-naive.json [--n 64]
"""
import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_sweep import caches  # noqa: E402
from harness import plan, sweep  # noqa: E402
from harness.families.wgmma import kernel as wgmma_kernel, readback, reference  # noqa: E402
from harness.run import compile as C, launch  # noqa: E402


def naive(work) -> dict:
    t0 = time.time()
    compile_s = 0.0
    statuses = []
    with tempfile.TemporaryDirectory() as d:
        for key, cases in work:
            for case in cases:
                tc = time.time()
                cubin, log = C.nvrtc_compile(wgmma_kernel.source(key.form, case.variant_index), key.name,
                                             str(key.arch), C.DEFAULT_OPTIONS)
                compile_s += time.time() - tc
                path = os.path.join(d, f"{case.seed:08x}.cubin")
                Path(path).write_bytes(cubin)
                prep = reference.prepare(case)
                regs = launch.run(path, key.name, wgmma_kernel.pack([prep]))["d_out"]
                statuses.append(readback.diff(prep.slim(), regs[0])["status"])
    return {"wall_s": round(time.time() - t0, 2), "compile_s": round(compile_s, 2),
            "pass": statuses.count("pass"), "cases": len(statuses)}


def batched(work, out: Path) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        os.environ.update(caches(cache))
        t0 = time.time()
        cold = sweep.execute(plan.Plan(work), sweep.SweepConfig(out_path=out), log=lambda m: None)
        cold_wall = time.time() - t0
        t0 = time.time()
        warm = sweep.execute(plan.Plan(work), sweep.SweepConfig(out_path=out), log=lambda m: None)
        warm_wall = time.time() - t0
    return {"cold_wall_s": round(cold_wall, 2), "warm_wall_s": round(warm_wall, 2),
            "pass": cold.get("pass", 0), "warm_pass": warm.get("pass", 0), "cold_summary": cold}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, action="append", help="N values of the subset (default 64)")
    a = ap.parse_args()
    work = plan.make(plan.Selection(families=("wgmma",), n_values=tuple(a.n or [64]))).work
    ncases = sum(len(cs) for _, cs in work)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        b = batched(work, Path(d) / "batched.jsonl")
    with tempfile.TemporaryDirectory() as cache:  # NVIDIA's compute cache empty for the naive way too
        os.environ.update(caches(cache))
        n = naive(work)
    report = {"subset": f"every wgmma case with N in {sorted(a.n or [64])}", "kernels": len(work),
              "cases": ncases, "naive": n, "batched": b, "cpus": os.cpu_count(),
              "ratio_cold": round(n["wall_s"] / b["cold_wall_s"], 1),
              "ratio_warm": round(n["wall_s"] / b["warm_wall_s"], 1)}
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"{ncases} cases, {len(work)} kernels: naive {n['wall_s']} s ({n['pass']} pass), batched cold "
          f"{b['cold_wall_s']} s / warm {b['warm_wall_s']} s ({b['pass']} pass): "
          f"{report['ratio_cold']}x cold, {report['ratio_warm']}x warm")


if __name__ == "__main__":
    main()
