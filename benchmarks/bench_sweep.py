"""Wall time of the full wgmma sweep from the command line, cold (empty compile cache) and warm.

Run by hand on the GPU machine, from the repo root:
    python3 benchmarks/bench_sweep.py --out-dir results/<run-name> [-- extra sweep arguments]
Writes <out-dir>/sweep.jsonl (the cold run's results), <out-dir>/sweep-warm.jsonl and <out-dir>/bench.json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed_sweep(cache: str, out: Path, extra) -> dict:
    env = dict(os.environ, TC_HARNESS_CACHE=cache, PYTHONUNBUFFERED="1")
    t = time.time()
    proc = subprocess.run([sys.executable, "-m", "harness", "sweep", "--out", str(out), *extra], env=env,
                          capture_output=True, text=True)
    wall = time.time() - t
    sys.stderr.write(proc.stderr[-3000:])
    summary = {}
    for line in (out.read_text().splitlines()[::-1] if out.exists() else []):
        rec = json.loads(line)
        if rec.get("type") == "summary":
            summary = rec
            break
    return {"wall_s": round(wall, 2), "exit": proc.returncode, "stdout": proc.stdout.strip(), "summary": summary}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as cache:
        cold = timed_sweep(cache, out / "sweep.jsonl", a.extra)
        warm = timed_sweep(cache, out / "sweep-warm.jsonl", a.extra)
    report = {"cases": cold["summary"].get("cases"), "kernels": cold["summary"].get("kernels"),
              "cold": cold, "warm": warm, "cpus": os.cpu_count()}
    (out / "bench.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"cases {report['cases']} kernels {report['kernels']}: cold {cold['wall_s']} s, warm {warm['wall_s']} s")
    print(cold["stdout"])
    print(warm["stdout"])


if __name__ == "__main__":
    main()
