"""A stand-in GPU backend (same `use_device` and `run` as harness.run.launch) for the engine's orchestration
tests: spool files, workers, read-backs in the pool, bisection of a faulting launch. It is no model of a
tensor core: it returns each wgmma case's C registers unchanged (which the diff must reject unless a case
expects exactly C), and it raises like a sticky CUDA error for a launch holding a planted trap. With
TC_SIM_LAUNCH_LOG set, each launch appends "<worker pid> <kernel> <cases>" to that file."""
import os

import numpy as np

from harness.families.wgmma.kernel import INJECT
from harness.contract import LaunchInput


def use_device(index: int) -> None:
    pass


def run(cubin_path, kernel_name, launch):
    inp = LaunchInput.load(launch)
    log = os.environ.get("TC_SIM_LAUNCH_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()} {kernel_name} {inp.cases}\n")
    if (inp.params["inject"] == INJECT["trap"]).any():
        raise RuntimeError("CUDARuntimeError: cudaErrorLaunchFailure: unspecified launch failure (simulated)")
    return {"d_out": np.asarray(inp.inputs["c_regs"], dtype=np.uint32).copy()}
