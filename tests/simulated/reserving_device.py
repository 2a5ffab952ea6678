"""file_writing_device.py with `reserve_for_launches`, as harness.run.launch has it: the GPU worker must call it once,
before its first launch, and a launch within the reserve must find its stagings as reserved (not grown). Either broken
fails the launch: `stage` and `run_to_host` raise, and the worker answers `error`."""
from tests.simulated import file_writing_device as base

use_device, run, SlowToWrite = base.use_device, base.run, base.SlowToWrite
STAGINGS, OUTPUT_STAGINGS = base.STAGINGS, base.OUTPUT_STAGINGS
RESERVE = 1 << 20  # larger than the test launches' inputs and outputs
RESERVED: dict[int, object] = {}  # id of a staging -> the memory it was given by the reserve


def reserve_for_launches() -> None:
    if RESERVED:
        raise AssertionError("reserve_for_launches called twice")
    for staging in (*STAGINGS, *OUTPUT_STAGINGS):
        staging.reserve(RESERVE)
        RESERVED[id(staging)] = staging.memory


def still_reserved(staging) -> None:
    if RESERVED.get(id(staging)) is not staging.memory:
        raise AssertionError("a launch within the reserve found its staging unreserved or grown")


def stage(path, slot):
    staged = base.stage(path, slot)
    still_reserved(STAGINGS[slot])
    return staged


def run_to_host(cubin_path, kernel_name, launch, slot):
    host = base.run_to_host(cubin_path, kernel_name, launch, slot)
    still_reserved(OUTPUT_STAGINGS[slot])
    return host
