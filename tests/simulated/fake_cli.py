"""`python -m tests.simulated.fake_cli ARGS`: the command line's own process (harness.cli.entry, its signal handlers
and exit included) on simulated GPUs, for tests that signal a real process part way through its launches
(tests/test_interrupts.py, tests/test_fuzz_environment.py). TC_SIM_GPUS: the simulated GPUs' archs (default one
sm_90a); TC_SIM_BACKEND: the module that launches (default tests.simulated.toy_device). Nothing is compiled (the
simulated devices never read a cubin), as with fake_gpus.install."""
import dataclasses
import os
import signal
from pathlib import Path

if __name__ == "__main__":  # as harness/__main__.py: killed outright by a signal before cli.entry's handlers
    signal.signal(signal.SIGINT, signal.SIG_DFL)

from harness import sweep  # noqa: E402
from harness.run import gpu  # noqa: E402
from harness.run.compile import Compiled  # noqa: E402
from tests.simulated.fake_gpus import CC  # noqa: E402

ARCHS = os.environ.get("TC_SIM_GPUS", "sm_90a").split(",")
BACKEND = os.environ.get("TC_SIM_BACKEND", "tests.simulated.toy_device")
INFOS = {i: {"index": i, "name": f"Simulated {a}", "compute_capability": CC[a], "arch": a, "uuid": f"GPU-sim-{i}",
             "multiprocessors": 1, "driver": 0, "runtime": 0} for i, a in enumerate(ARCHS)}


def compile_kernels(kernels, cfg, log, helpers=None, submitted=None):
    if submitted is not None:
        submitted()
    return {k: Compiled(k.name, str(k.arch), Path(f"/nonexistent/simulated/{k.name}.cubin"), True) for k in kernels}


def main() -> None:
    gpu.device_count = lambda: len(INFOS)
    gpu.device_info = lambda index=0: INFOS.get(index)
    gpu.unusable = lambda: None
    sweep.compile_kernels = compile_kernels
    run = sweep.run
    sweep.run = lambda sel, cfg, log=sweep._log: run(sel, dataclasses.replace(cfg, backend=BACKEND), log)
    from harness.cli import entry
    entry()


if __name__ == "__main__":
    main()
