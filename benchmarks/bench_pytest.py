"""The tests as their users run them: the README's test command (`python -m pytest -n auto`), timed end to end,
on a fresh compile cache and again on the warm one; and `-m gpu` alone. Each run's pass/skip/fail counts and its
slowest tests go to one JSON file, so a GPU node's "pytest in under a minute" (issue: fast where its users run
it) is a committed number, not a claim.

Run by hand on the GPU machine (or anywhere), from the repo root:
    python3 benchmarks/bench_pytest.py --out results/<run>/bench-pytest.json [--runs readme,readme-warm,gpu]
(each run's whole output beside it: bench-pytest-<run>.log, and which xdist worker ran each test when:
bench-pytest-<run>.timeline.gz, from this folder's pytest_timeline plugin). A cold run starts with the harness's
compile cache and NVIDIA's compute cache empty (bench_sweep.caches); `bytecode_cached` says whether the checkout's
modules had been compiled by an earlier run.
"""
import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_sweep  # noqa: E402  (its caches(): a cold run starts with NVIDIA's compute cache empty too)
import pytest_timeline  # noqa: E402  (this folder's plugin: which worker ran what, and when)

RUNS = {
    "readme": ["-n", "auto"],  # the README's test command, on an empty compile cache
    "readme-warm": ["-n", "auto"],  # the same, with the cache the first run left
    "gpu": ["-m", "gpu", "-n", "auto"],
}


def bytecode_cached() -> bool:
    """Whether the checkout's modules were compiled by an earlier run (the test session writes __pycache__ even
    under PYTHONDONTWRITEBYTECODE, conftest.py): a cold run's compile caches are empty either way, but its
    collection takes seconds longer on a node without them."""
    return any((Path.cwd() / d / "__pycache__").is_dir() for d in ("tests", "harness"))  # the tree pytest runs in


def timed(args: list[str], cache: str, log: Path) -> dict:
    """One pytest run; its whole output goes to `log` (where the time went, test by test: --durations=0), and
    which worker ran each test when to `<log>.timeline.gz` (gzipped JSON lines, summarised in the record's
    `timeline`; not named .jsonl.gz, which in a results folder means a sweep's or a timing bench's records)."""
    here = str(Path(__file__).resolve().parent)
    with tempfile.TemporaryDirectory() as timeline:
        env = dict(os.environ, PYTHONUNBUFFERED="1", **bench_sweep.caches(cache),
                   PYTHONPATH=os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p),
                   **{pytest_timeline.FOLDER: timeline})
        bytecode = bytecode_cached()
        t = time.time()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_timeline",
                               "--durations=0", "--tb=short", *args],
                              env=env, capture_output=True, text=True)
        wall = time.time() - t
        where = pytest_timeline.summary(Path(timeline), t)
        with gzip.open(log.with_suffix(".timeline.gz"), "wt") as fh:
            for f in sorted(Path(timeline).glob("*.jsonl")):
                fh.write(f.read_text())
    log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    tail = proc.stdout.strip().splitlines()
    counts = {m[1]: int(m[0]) for m in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)",
                                                   tail[-1] if tail else "")}
    slowest = [ln.strip() for ln in proc.stdout.splitlines()
               if re.match(r"\s*\d+\.\d+s (call|setup|teardown)", ln)][:30]
    not_passing = [ln for ln in proc.stdout.splitlines() if ln.startswith(("FAILED ", "ERROR "))]
    # why they failed: the report's FAILURES/ERRORS sections, cut short (a GPU node may be where only this survives)
    sections = re.split(r"\n=+ (?:FAILURES|ERRORS) =+\n", proc.stdout, maxsplit=1)
    why = re.split(r"\n=+ (?:slowest|warnings summary|short test summary)", sections[1])[0][:8000] \
        if len(sections) > 1 else ""
    return {"args": args, "exit": proc.returncode, "wall_s": round(wall, 1), "bytecode_cached": bytecode,
            "counts": counts, "slowest": slowest,
            "not_passing": not_passing, "why": why, "last_line": tail[-1] if tail else proc.stderr[-500:], "timeline": where}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", default="readme,readme-warm,gpu")
    ap.add_argument("--cache", help="the compile cache the runs use and leave behind (default: a fresh one, so that the "
                                    "first run is cold); benchmarks/ab_pytest.sh gives each tree its own")
    a = ap.parse_args()
    names = [r for r in a.runs.split(",") if r]
    unknown = [r for r in names if r not in RUNS]
    if unknown:
        sys.exit(f"bench_pytest: unknown run {unknown[0]!r}; one of {', '.join(RUNS)}")
    report = {"cpus": os.cpu_count(), "runs": {}}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as fresh:
        cache = a.cache or fresh
        for name in names:
            report["runs"][name] = timed(RUNS[name], cache, Path(a.out).with_name(f"{Path(a.out).stem}-{name}.log"))
            r = report["runs"][name]
            print(f"{name:<12} {' '.join(r['args']):<22} {r['wall_s']:>7} s  exit {r['exit']}  {r['last_line']}")
            Path(a.out).write_text(json.dumps(report, indent=1) + "\n")  # after each run: a later one may be cut off


if __name__ == "__main__":
    main()
