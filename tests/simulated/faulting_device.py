"""A stand-in GPU backend on which every launch faults, like a sticky CUDA error (a broken driver, or a bug in
an encoder that every kernel shares). With TC_SIM_LAUNCH_LOG set, each launch appends a line to that file, so
a test can count the launches across worker processes. For the engine's bound on bisection (tests/test_mass_faults.py)."""
import os

from harness.contract import LaunchInput


def use_device(index: int) -> None:
    pass


def run(cubin_path, kernel_name, launch):
    inp = LaunchInput.load(launch)
    log = os.environ.get("TC_SIM_LAUNCH_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(f"{kernel_name} {inp.cases}\n")
    raise RuntimeError("CUDARuntimeError: cudaErrorIllegalInstruction: an illegal instruction was encountered "
                       "(simulated: every launch faults)")
