"""The GPU the toy family (tests/simulated/toy_family.py) runs on: it executes a LaunchInput as the toy kernel
would, from the launch's raw buffers. TC_SIM_LAUNCH_S: seconds each launch takes (a sweep long enough to interrupt);
TC_SIM_DROP: rows of outputs lost at the end of each launch (the toy read-back zips them with the cases: a case per
lost row goes without a record); TC_SIM_FAULT_PCT: the share of kernels (by a hash of the name) whose every launch
faults; TC_SIM_LAUNCH_LOG: a file that gets a line per worker start and per launch."""
import os
import time
import zlib

import numpy as np

from harness.contract import LaunchInput


def use_device(index: int) -> None:
    _log(f"start {os.getpid()}")


def _log(line: str) -> None:
    """TC_SIM_LAUNCH_LOG: a line per worker start and per launch, across processes (the mass-fault tests count them)."""
    path = os.environ.get("TC_SIM_LAUNCH_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(line + "\n")


def run(cubin_path, kernel_name, launch):
    inp = LaunchInput.load(launch)
    _log(f"launch {os.getpid()} {kernel_name}")
    time.sleep(float(os.environ.get("TC_SIM_LAUNCH_S", "0")))
    pct = int(os.environ.get("TC_SIM_FAULT_PCT", "0"))  # this share of the kernels fault, chosen by name
    if pct and zlib.crc32(str(kernel_name).encode()) % 100 < pct:
        raise RuntimeError("CUDARuntimeError: cudaErrorIllegalAddress: an illegal memory access was encountered "
                           "(simulated: TC_SIM_FAULT_PCT)")
    out = np.full((inp.ctas, 128), -1, np.int32)
    for i, p in enumerate(inp.params):
        words = inp.images[int(p["image_offset"]):int(p["image_offset"]) + int(p["image_bytes"])].view(np.int32)
        out[i] = words[:128] + words[128:] + p["bias"]
    drop = int(os.environ.get("TC_SIM_DROP", "0"))  # a device (or read-back) that loses the last cases' rows
    return {"out": out[:len(out) - drop] if drop else out}
