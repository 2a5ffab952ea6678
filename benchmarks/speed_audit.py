"""Issue 55's audit of the speed machinery: each mechanism switched off in turn, on one machine, against the code as
it is. A mechanism stays where it buys about 10% or more of a cold or a warm run; docs/performance.md keeps the
numbers.

    python3 benchmarks/speed_audit.py --out-dir DIR [--rounds 2] [--only NAME,...] [--workloads sweep,pytest]
                                      [-- SWEEP-ARGS]

Round by round, the sweep command (cold: the harness's cache and NVIDIA's compute cache empty; then warm: the same
caches again, as benchmarks/bench_sweep.py times them) runs as it is and with each mechanism off; with the pytest
workload the README test command (`python -m pytest -n auto`, cold and warm) does too, for the mechanisms that act
in a test session (on a GPU node a round of it takes minutes: tools/device_cycle.sh runs the two workloads as
steps of their own). Writes DIR/audit.json (every run: wall and CPU seconds, exit, the sweep's own timing) and DIR/audit.txt, a
line a mechanism and workload: the median wall time with it and without it, and its share, (without - with) /
without.

A mechanism is switched off by a patch in the process that uses it, never by editing the package:
  * the sweep command runs through this file (`speed_audit.py --without NAME sweep ARGS...`: the patch, then the
    command line, harness.cli.entry, in its own process as `python -m harness` runs it);
  * a test session loads this file as a plugin (`-p speed_audit`, TC_SPEED_AUDIT_WITHOUT=NAME), which patches every
    pytest process, the xdist workers too;
  * BLAS-thread control is off where the thread counts are set to every core in the environment (a count the user
    set is the user's: harness/run/cores.py).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]  # bench_sweep beside it; the harness of this tree
ENV = "TC_SPEED_AUDIT_WITHOUT"
KEEP_SHARE = 0.10  # issue 55: keep a mechanism that buys about this share of a cold or warm run


# each patch takes `put` (setattr, or a test's monkeypatch.setattr, which fails on a name the package no longer has)
def _spawned_helpers(put) -> None:
    from harness.run import processes
    put(processes, "start_method", "spawn")


def _modules_in_plan_order(put) -> None:
    from harness.run import compile as nvrtc

    def in_plan_order(todo, tc, workers):
        if tc.kind.module_suffix != ".cubin":
            return [[t] for t in todo]
        groups: dict = {}
        for t in todo:
            groups.setdefault((t[1].arch, t[1].options_for(tc)) if nvrtc.shares_a_module(t[1]) else id(t), []).append(t)
        return [g[i:i + nvrtc.KERNELS_PER_MODULE] for g in groups.values()
                for i in range(0, len(g), nvrtc.KERNELS_PER_MODULE)]
    put(nvrtc, "modules_to_compile", in_plan_order)


def _no_plan_cache(put) -> None:
    from harness import plan
    put(plan, "plan_files", lambda fam, arch: None)


def _no_checked_set(put) -> None:
    from harness.run import checked_set
    put(checked_set, "recorded", lambda *a, **k: None)
    put(checked_set, "record", lambda *a, **k: None)


def _no_early_compile(put) -> None:
    from harness import sweep
    put(sweep, "compile_first", lambda *a, **k: None)


def _no_worker_ahead(put) -> None:
    from harness import sweep
    put(sweep, "worker_ahead", lambda cfg, fork=False: None)


def _nothing(put) -> None:  # noqa: ARG001  (off by the sweep's own switch, or by the environment)
    pass


def _blas_threads_on_every_core() -> dict:
    """BLAS's thread counts set to every core: set by the user, they stand (harness/run/cores.py); a patch would
    come after numpy read its count."""
    from harness.run.cores import BLAS_THREADS
    return {v: str(os.cpu_count() or 1) for v in BLAS_THREADS}


@dataclass(frozen=True)
class Mechanism:
    name: str
    what: str  # what it does, and where it lives
    off: str  # what runs instead
    patch: object  # patch(put): the "off" patch, in the process it is called in
    sweep: bool = True  # acts in the sweep command
    pytest: bool = True  # acts in a test session
    sweep_args: tuple[str, ...] = ()  # the sweep command's own switch for it, where it has one
    environment_off: object = None  # () -> the environment that switches it off, where that is how

    def environment(self) -> dict:
        return self.environment_off() if self.environment_off else {}


MECHANISMS = {m.name: m for m in (
    Mechanism("fork-server", "helpers started by a fork server with the engine preloaded (harness/run/processes.py; "
              "the command line spawns its own already)", "every helper spawned", _spawned_helpers, sweep=False),
    Mechanism("one-blas-thread", "numpy's BLAS on one thread in every helper (harness/run/cores.py)",
              "BLAS on every core in every process", _nothing, environment_off=_blas_threads_on_every_core),
    Mechanism("module-balancing", "compile modules balanced by cost, two a worker (harness/run/compile.py "
              "modules_to_compile)", "modules of 32 kernels in plan order", _modules_in_plan_order, pytest=False),
    Mechanism("plan-cache", "the plan kept in files under the harness's source digest (harness/plan.py plan_files)",
              "every case planned again", _no_plan_cache),
    Mechanism("checked-set", "a list of kernels compiled and SASS-checked, remembered (harness/run/checked_set.py)",
              "every cubin's key and verdict looked up", _no_checked_set, pytest=False),
    Mechanism("launch-cache", "prepared launches kept in the cache (harness/run/launch_cache.py)",
              "every launch prepared again (--no-keep-launches)", _nothing, pytest=False,
              sweep_args=("--no-keep-launches",)),
    Mechanism("early-compile", "kernels compiled while the cases are planned (harness/sweep.py compile_first)",
              "the compile after the plan", _no_early_compile, pytest=False),
    Mechanism("worker-ahead", "the GPU worker forked as the command begins (harness/sweep.py worker_ahead)",
              "the worker started with the engine", _no_worker_ahead, pytest=False),
)}


# ---------------------------------------------------------------------------------------- the patched processes

def pytest_configure(config):  # noqa: ARG001  (as a pytest plugin: every pytest process, xdist workers too)
    name = os.environ.get(ENV)
    if name:
        MECHANISMS[name].patch(setattr)


def run_without(name: str, argv: list[str]) -> None:
    """The command line with mechanism `name` off, in this process (`--without NAME sweep ARGS...`)."""
    MECHANISMS[name].patch(setattr)
    from harness.cli import entry
    sys.argv = ["harness", *argv]
    entry()


# -------------------------------------------------------------------------------------------------- the audit

def timed(argv: list[str], env: dict, out: Path | None) -> dict:
    from bench_sweep import with_cpu_seconds
    import time
    t = time.time()
    proc, cpu = with_cpu_seconds(lambda: subprocess.run(argv, env=env, capture_output=True, text=True, cwd=ROOT))
    rec = {"wall_s": round(time.time() - t, 2), "cpu_s": cpu, "exit": proc.returncode}
    if proc.returncode not in (0, 3):
        rec["stderr"] = proc.stderr[-2000:]
    if out is not None and out.exists():
        last = json.loads(out.read_text().splitlines()[-1])
        rec["timing"] = last.get("timing", {}) if last.get("type") == "summary" else {}
    return rec


def sweep_argv(m: Mechanism | None, out: Path, extra: list[str]) -> list[str]:
    head = [sys.executable, "-m", "harness"] if m is None else [sys.executable, str(Path(__file__)), "--without",
                                                                 m.name]
    return [*head, "sweep", "--out", str(out), *(m.sweep_args if m else ()), *extra]


def audit(out_dir: Path, rounds: int, names: list[str], workloads: set[str], extra: list[str]) -> list[dict]:
    from bench_sweep import caches
    runs = []
    variants = [None, *(MECHANISMS[n] for n in names)]
    for r in range(rounds):
        for m in variants:
            label = "as-is" if m is None else f"without-{m.name}"
            for workload in [w for w in ("sweep", "pytest") if w in workloads and (m is None or getattr(m, w))]:
                with tempfile.TemporaryDirectory(prefix="tc-audit-") as cache:
                    env = dict(os.environ, PYTHONUNBUFFERED="1", **caches(cache), **(m.environment() if m else {}))
                    if m is not None and workload == "pytest":
                        env.update({ENV: m.name, "PYTHONPATH": os.pathsep.join(filter(None, [
                            str(HERE), env.get("PYTHONPATH")]))})
                    for temperature in ("cold", "warm"):
                        out = out_dir / f"{label}-{workload}-{temperature}-{r}.jsonl"
                        argv = (sweep_argv(m, out, extra) if workload == "sweep" else
                                [sys.executable, "-m", "pytest", "-n", "auto", "-q", "-p", "no:cacheprovider",
                                 *(["-p", "speed_audit"] if m is not None else [])])
                        rec = {"round": r, "variant": label, "workload": workload, "temperature": temperature,
                               **timed(argv, env, out if workload == "sweep" else None)}
                        runs.append(rec)
                        print(json.dumps(rec), flush=True)
                        with contextlib.suppress(OSError):
                            out.unlink()
    return runs


def table(runs: list[dict]) -> list[str]:
    """A line a mechanism, workload and temperature: the median wall with and without it, and its share."""
    def median(variant, workload, temperature):
        walls = [r["wall_s"] for r in runs if (r["variant"], r["workload"], r["temperature"]) ==
                 (variant, workload, temperature) and r["exit"] in (0, 3)]
        return statistics.median(walls) if walls else None
    lines = [f"{'mechanism':<18} {'workload':<7} {'run':<5} {'with':>8} {'without':>8} {'share':>7}  verdict"]
    for name in MECHANISMS:
        for workload in ("sweep", "pytest"):
            for temperature in ("cold", "warm"):
                with_, without = median("as-is", workload, temperature), median(f"without-{name}", workload,
                                                                                  temperature)
                if with_ is None or without is None:
                    continue
                share = (without - with_) / without
                lines.append(f"{name:<18} {workload:<7} {temperature:<5} {with_:>7.2f}s {without:>7.2f}s "
                             f"{share:>6.1%}  {'keep' if share >= KEEP_SHARE else 'below 10%'}")
    return lines


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--without"]:
        if len(argv) < 3 or argv[1] not in MECHANISMS:
            print(f"speed_audit.py --without NAME sweep ARGS: NAME one of {', '.join(MECHANISMS)}", file=sys.stderr)
            return 2
        run_without(argv[1], argv[2:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", required=True, type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", default=",".join(MECHANISMS), help="mechanisms to switch off, comma-separated")
    ap.add_argument("--workloads", default="sweep", help="sweep, pytest (the README test command), or both")
    ap.add_argument("extra", nargs="*", help="after --: the sweep's own arguments")
    a = ap.parse_args(argv)
    names = [n for n in a.only.split(",") if n]
    workloads = set(a.workloads.split(","))
    unknown = [n for n in names if n not in MECHANISMS]
    problem = (f"unknown mechanism {', '.join(unknown)} (known: {', '.join(MECHANISMS)})" if unknown else
               "--rounds is at least 1" if a.rounds < 1 else
               f"--workloads {a.workloads!r}: sweep, pytest or both" if not workloads <= {"sweep", "pytest"} else None)
    if problem:
        print(f"speed_audit.py: {problem}", file=sys.stderr)
        return 2
    a.out_dir.mkdir(parents=True, exist_ok=True)
    runs = audit(a.out_dir, a.rounds, names, workloads, a.extra)
    (a.out_dir / "audit.json").write_text(json.dumps(runs, indent=1) + "\n")
    lines = table(runs)
    (a.out_dir / "audit.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
