"""A launch backend for benchmarks/bench_mass_faults.py: the real device (harness.run.launch), every path of it
(staging, outputs through pinned stagings), with a plausible descriptor bug planted in the launch parameters where
TC_BENCH_PLANT=lbo-unshifted: each wgmma shared-memory descriptor's leading byte offset written unshifted (its 14-bit
field holds the byte count, not the byte count >> 4, so the LBO the hardware reads is 16x too large, wrapped to 14
bits). Most launches of the dense family then read past their shared-memory window and fault; swizzled K-major
operands, whose LBO the hardware ignores, still pass. With TC_BENCH_PLANT unset or empty it plants nothing: the same
code path, clean, for the baseline. Nothing in the harness reads the variable: only a sweep whose launches go through
this module (benchmarks/sweep_with_backend.py) is affected, and the package is never edited.
Where TC_BENCH_WORKER_LOG names a file, each worker process appends to it one JSON line when it began importing this
module and when its device was ready, and one a launch (kernel, start, seconds, whether it raised), with the time
since the epoch and its pid: where a storm's diagnosis waits (for a worker's CUDA context, its probes' launches)."""
import json
import os
import time

IMPORTED = time.time()  # the worker's process is up and imports its backend (this module) from here

import numpy as np  # noqa: E402

from harness.run import launch as device  # noqa: E402
from harness.contract import LaunchInput  # noqa: E402

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


def _note(event: str, t: float, **more) -> None:
    path = os.environ.get("TC_BENCH_WORKER_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps({"t": round(t, 4), "event": event, "pid": os.getpid(), **more}) + "\n")


def use_device(index: int) -> None:
    planting()  # a wrong value: the worker's start fails, with the reason, before any launch
    first, t = not getattr(use_device, "done", False), time.time()
    device.use_device(index)
    if first:  # the worker's own call (its reading thread calls it again)
        use_device.done = True
        _note("imported", IMPORTED)
        _note("device ready", time.time(), use_device_s=round(time.time() - t, 4))


def reserve_for_launches() -> None:
    device.reserve_for_launches()


def stage(path: str, slot: int) -> LaunchInput:
    return plant(device.stage(path, slot))


def _timed(kernel_name: str, call):
    t, raised = time.time(), True
    try:
        out = call()
        raised = False
        return out
    finally:
        _note("launch", t, kernel=kernel_name, seconds=round(time.time() - t, 4), raised=raised)


def run(cubin_path, kernel_name, launch):
    return _timed(kernel_name, lambda: device.run(cubin_path, kernel_name, _input(launch)))


def run_to_host(cubin_path, kernel_name, launch, slot: int):
    return _timed(kernel_name, lambda: device.run_to_host(cubin_path, kernel_name, _input(launch), slot))
