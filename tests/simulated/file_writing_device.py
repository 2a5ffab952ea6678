"""The stand-in backend of passthrough_device.py, with the GPU worker's two ways of harness.run.launch: each launch's
outputs copied into one of its output stagings (`run_to_host`, `OUTPUT_STAGINGS`; the worker writes the outputs'
file behind the next launch, and must never call `run`), and launch files read ahead into staging slots (`stage`,
`STAGINGS`). Ordinary memory here, page-locked on a GPU. Every output takes WRITE_DELAY_S to be written, so that a
launch's answer comes after the next launch has run, as it may on a GPU; a launch holding a planted misaligned load
ends the worker's process at once (os._exit), as a crashing driver would, while the launch before is being written."""
import os
import time

import numpy as np

from harness.families.wgmma.kernel import INJECT
from harness.contract import LaunchInput
from harness.run.launch import PinnedStaging
from tests.simulated import passthrough_device

use_device = passthrough_device.use_device
STAGINGS = (PinnedStaging(allocate=bytearray), PinnedStaging(allocate=bytearray))
OUTPUT_STAGINGS = (PinnedStaging(allocate=bytearray), PinnedStaging(allocate=bytearray))
WRITE_DELAY_S = 0.2


class SlowToWrite:
    """An output array (a view of an output staging) that takes WRITE_DELAY_S to be pickled into its file."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def __reduce__(self):
        time.sleep(WRITE_DELAY_S)
        return np.asarray, (self.array,)


def stage(path, slot):
    return LaunchInput.load(path, STAGINGS[slot])


def run(cubin_path, kernel_name, launch):
    raise AssertionError("the GPU worker called run, though its backend copies the outputs into its stagings")


def run_to_host(cubin_path, kernel_name, launch, slot):
    launch = LaunchInput.load(launch)
    if (launch.params["inject"] == INJECT["misaligned"]).any():
        os._exit(1)
    outputs = passthrough_device.run(cubin_path, kernel_name, launch)
    views = OUTPUT_STAGINGS[slot].slices([v.nbytes for v in outputs.values()])
    host = {}
    for (name, v), m in zip(outputs.items(), views):
        host[name] = np.frombuffer(m, v.dtype).reshape(v.shape)
        host[name][...] = v
    return {name: SlowToWrite(v) for name, v in host.items()}
