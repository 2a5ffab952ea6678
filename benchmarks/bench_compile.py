"""A cold sweep's compile alone: every kernel a default sweep compiles (823, three archs; the plan of a machine without
a GPU, which compiles the same kernels as one with any) compiled and SASS-checked on an empty cache as the sweep does
it (sweep.compile_kernels), with nothing else running: its wall time, and the machine's CPU over it (the compile's
processes come from a fork server, not from this process, so no `time` of this process counts them: run nothing else
meanwhile).

    python benchmarks/bench_compile.py [--workers N] [--family F ...] [--kind K ...] [--out FILE.json]
"""
import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's harness, run from anywhere


def cpu_seconds_of_all() -> float:
    """User and system CPU of every process on the machine (from /proc/stat), in core-seconds: the compile's processes
    are not this process's children, so this machine-wide count is the one that sees them (run nothing else)."""
    fields = open("/proc/stat").readline().split()[1:]
    user, nice, system = (int(x) for x in fields[:3])
    return (user + nice + system) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--family", action="append", help="default: every family")
    ap.add_argument("--kind", action="append", help="the sweep's --kind: kernels of these kinds only (default: all)")
    ap.add_argument("--out")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as cache:
        os.environ["TC_HARNESS_CACHE"] = cache
        out = measure(a)
    print(json.dumps(out))
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


def measure(a) -> dict:
    from harness import plan as planning, sweep
    p = planning.make(planning.Selection(families=tuple(a.family or ()), kinds=tuple(a.kind or ())), {}, None)
    kernels = sweep.plan_kernels(p)
    cpu0, t0 = cpu_seconds_of_all(), time.perf_counter()
    compiled = sweep.compile_kernels(kernels, sweep.SweepConfig(workers=a.workers), lambda m: None)
    wall, cpu = time.perf_counter() - t0, cpu_seconds_of_all() - cpu0
    return {"kernels": len(kernels), "errors": sum(c.error is not None for c in compiled.values()),
            "wall_s": round(wall, 2), "machine_cpu_s": round(cpu, 1), "cores": os.cpu_count()}


if __name__ == "__main__":
    main()
