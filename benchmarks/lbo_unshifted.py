"""A launch backend for benchmarks/bench_mass_faults.py: the real device (harness.run.launch), every path of it
(staging, outputs through pinned stagings), with a plausible descriptor bug planted in the launch parameters where
TC_BENCH_PLANT=lbo-unshifted: each wgmma shared-memory descriptor's leading byte offset written unshifted (its 14-bit
field holds the byte count, not the byte count >> 4, so the LBO the hardware reads is 16x too large, wrapped to 14
bits). Most launches of the dense family then read past their shared-memory window and fault; swizzled K-major
operands, whose LBO the hardware ignores, still pass. With TC_BENCH_PLANT unset or empty it plants nothing: the same
code path, clean, for the baseline. Nothing in the harness reads the variable: only a sweep whose launches go through
this module (benchmarks/sweep_with_backend.py) is affected, and the package is never edited."""
import os

import numpy as np

from harness.run import launch as device
from harness.contract import LaunchInput

PLANT = "lbo-unshifted"
DESCRIPTORS = ("desc_a", "desc_b")
LBO_SHIFT, LBO_MASK = 16, 0x3FFF

STAGINGS = device.STAGINGS
OUTPUT_STAGINGS = device.OUTPUT_STAGINGS
_planted: dict[int, np.ndarray] = {}  # the params arrays planted already (a staged launch is planted once)


def planting() -> bool:
    plant = os.environ.get("TC_BENCH_PLANT", "")
    if plant not in ("", PLANT):
        raise ValueError(f"TC_BENCH_PLANT={plant!r}: give {PLANT} or nothing")
    return plant == PLANT


def unshifted(desc: np.ndarray) -> np.ndarray:
    """Descriptors with their LBO field rewritten as an encoder that forgot the >> 4 would write it (0: no operand)."""
    d = desc.astype(np.uint64)
    field = (d >> np.uint64(LBO_SHIFT)) & np.uint64(LBO_MASK)
    wrong = ((field << np.uint64(4)) & np.uint64(LBO_MASK)) << np.uint64(LBO_SHIFT)
    out = (d & ~np.uint64(LBO_MASK << LBO_SHIFT)) | wrong
    return np.where(d != 0, out, d).astype(desc.dtype)


def plant(inp: LaunchInput) -> LaunchInput:
    if not planting() or id(inp.params) in _planted:
        return inp
    params = inp.params.copy()
    for name in DESCRIPTORS:
        if name in (params.dtype.names or ()):
            params[name] = unshifted(params[name])
    inp.params = params  # past LaunchInput's own check, on purpose
    _planted[id(params)] = params
    while len(_planted) > 8:
        _planted.pop(next(iter(_planted)))
    return inp


def _input(launch) -> LaunchInput:
    return plant(LaunchInput.load(launch) if isinstance(launch, str) else launch)


def use_device(index: int) -> None:
    planting()  # a wrong value: the worker's start fails, with the reason, before any launch
    device.use_device(index)


def reserve_for_launches() -> None:
    device.reserve_for_launches()


def stage(path: str, slot: int) -> LaunchInput:
    return plant(device.stage(path, slot))


def run(cubin_path, kernel_name, launch):
    return device.run(cubin_path, kernel_name, _input(launch))


def run_to_host(cubin_path, kernel_name, launch, slot: int):
    return device.run_to_host(cubin_path, kernel_name, _input(launch), slot)
