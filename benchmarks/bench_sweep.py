"""The benchmark: the full sweep from the command line, cold (empty compile cache) and warm, and the
batched harness against the naive way (one module and one launch per case) on a subset, side by side.

Run by hand on the GPU machine, from the repo root:
    python3 benchmarks/bench_sweep.py --out-dir results/<run-name> [--naive-n 64 --naive-n 128] [-- sweep args]
Writes <out-dir>/sweep.jsonl (the cold run's results), <out-dir>/sweep-warm.jsonl, <out-dir>/bench.json and
(unless --no-naive) <out-dir>/bench-naive.json; prints one table.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


# NVIDIA's compute cache: on the H100 node, NVRTC 13.0 compiled a module it had compiled before (in another process,
# into another TC_HARNESS_CACHE) in a fraction of the time (bench3 in docs/performance.md), so a cold
# run empties both caches: the harness's, and this one, in the same temporary folder
def caches(folder: str) -> dict:
    return {"TC_HARNESS_CACHE": folder, "CUDA_CACHE_PATH": os.path.join(folder, "nv-compute-cache")}


def with_cpu_seconds(run):
    """(run(), the CPU seconds, user and system, of the processes it started and waited for: theirs and those of
    every descendant they waited for in turn, as the sweep's pools, GPU workers and disassemblers are)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = run()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2)


def usable_cores() -> int:
    """The cores this process may run on (its affinity, as a container or taskset narrows it), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def timed_sweep(cache: str, out: Path, extra) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1", **caches(cache))
    t = time.time()
    proc, cpu = with_cpu_seconds(lambda: subprocess.run([sys.executable, "-m", "harness", "sweep", "--out", str(out),
                                                         *extra], env=env, capture_output=True, text=True))
    wall = time.time() - t
    # the sweep's own account (plan, compile, SASS, GPUs, counts), without its line per kernel
    sys.stderr.write("".join(ln for ln in proc.stderr.splitlines(keepends=True) if not ln.startswith("[")))
    summary = {}
    for line in (out.read_text().splitlines()[::-1] if out.exists() else []):
        rec = json.loads(line)
        if rec.get("type") == "summary":
            summary = rec
            break
    # cpu_s / the cores it may run on: the wall time the run could not beat here, however well its work were spread
    # (the GPU workers' waits for their kernels count as CPU too: a floor a little above the work's own)
    return {"wall_s": round(wall, 2), "cpu_s": cpu, "cpu_floor_s": round(cpu / usable_cores(), 2),
            "exit": proc.returncode, "stdout": proc.stdout.strip(), "summary": summary}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--naive-n", type=int, action="append", help="N values of the naive-vs-batched subset")
    ap.add_argument("--no-naive", action="store_true")
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as cache:
        cold = timed_sweep(cache, out / "sweep.jsonl", a.extra)
        warm = timed_sweep(cache, out / "sweep-warm.jsonl", a.extra)
    report = {"cases": cold["summary"].get("cases"), "kernels": cold["summary"].get("kernels"),
              "cold": cold, "warm": warm, "cpus": os.cpu_count(), "usable_cores": usable_cores()}
    if not a.no_naive:
        args = [sys.executable, str(Path(__file__).parent / "bench_naive.py"), "--out", str(out / "bench-naive.json")]
        for n in a.naive_n or [64, 128]:
            args += ["--n", str(n)]
        subprocess.run(args, check=True)
        naive = json.loads((out / "bench-naive.json").read_text())
        report["naive"] = {k: naive[k] for k in ("subset", "cases", "ratio_cold", "ratio_warm")}
        report["naive"]["naive_wall_s"] = naive["naive"]["wall_s"]
    (out / "bench.json").write_text(json.dumps(report, indent=1) + "\n")
    cs, ws = cold["summary"], warm["summary"]
    rows = [("cases (run / recorded not run)", f"{cs.get('ran')} / {cs.get('not-run')}"),
            ("kernels (+ other archs, compile only)", f"{cs.get('kernels')} + {cs.get('compile_only_kernels', 0)}"),
            ("compile, cold / warm (s)", f"{cs.get('compile_s')} / {ws.get('compile_s')}"),
            ("GPU worker time, warm (s)", ws.get("timing", {}).get("gpu_worker_s")),
            ("wall, cold (s)", cold["wall_s"]), ("wall, warm (s)", warm["wall_s"]),
            (f"CPU, cold / warm (core-s; / {usable_cores()} cores = the floor)",
             f"{cold['cpu_s']} / {warm['cpu_s']} ({cold['cpu_floor_s']} s / {warm['cpu_floor_s']} s)")]
    if "naive" in report:
        nv = report["naive"]
        rows.append((f"naive vs batched on {nv['cases']} cases ({nv['subset']})",
                     f"{nv['naive_wall_s']} s naive: {nv['ratio_cold']}x cold, {nv['ratio_warm']}x warm"))
    for k, v in rows:
        print(f"{k:<48} {v}")


if __name__ == "__main__":
    main()
