"""A launch backend for benchmarks/bench_faults.py: the real device (harness.run.launch), with a fault planted in
every launch, so that a sweep in which every launch faults can be timed on a GPU.

The plant replaces each CTA's image offset with one 4 GB past the image buffer: the kernel's first global load of
its shared-memory image reads an unmapped address (cudaErrorIllegalAddress), for every family (each kernel
copies its image in before anything else). wgmma kernels also get their planted `trap` (illegal instruction),
whichever comes first. Nothing in the harness reads an environment variable for this: only a sweep given
`SweepConfig(backend="benchmarks.fault_everywhere")` uses it.
"""
import numpy as np

from harness.run import launch as device
from harness.contract import LaunchInput

FAR = 0xFFFF0000  # a 16-byte aligned uint32 offset far past any image buffer


def plant(inp: LaunchInput) -> LaunchInput:
    params = inp.params.copy()
    params["image_offset"] = np.asarray(FAR, params["image_offset"].dtype)
    if "inject" in (params.dtype.names or ()):
        from harness.families.wgmma.kernel import INJECT
        params["inject"] = INJECT["trap"]
    inp.params = params  # past LaunchInput's own check, on purpose
    return inp


def use_device(index: int) -> None:
    device.use_device(index)


def run(cubin_path, kernel_name, launch):
    return device.run(cubin_path, kernel_name, plant(LaunchInput.load(launch)))
