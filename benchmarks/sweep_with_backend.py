"""`python benchmarks/sweep_with_backend.py BACKEND sweep ARGS...`: the command line (harness.cli.entry, in its own
process, as `python -m harness` runs it: its GPU worker forked ahead, its helpers, two GPU workers on one GPU) with
every launch through the module BACKEND (benchmarks/lbo_unshifted.py) instead of harness.run.launch. For
benchmarks/bench_mass_faults.py; the package is not edited, and nothing else changes."""
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the GPU workers import the backend from here

from harness import sweep  # noqa: E402


def main() -> None:
    if len(sys.argv) < 3:
        print("usage: sweep_with_backend.py BACKEND sweep ARGS...", file=sys.stderr)
        sys.exit(2)
    backend = sys.argv.pop(1)
    run, ahead = sweep.run, sweep.worker_ahead
    sweep.run = lambda sel, cfg, log=sweep._log: run(sel, dataclasses.replace(cfg, backend=backend), log)
    sweep.worker_ahead = lambda cfg, fork=False: ahead(dataclasses.replace(cfg, backend=backend), fork)
    from harness.cli import entry
    entry()


if __name__ == "__main__":
    main()
