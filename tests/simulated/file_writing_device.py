"""The stand-in backend of passthrough_device.py, with the GPU worker's two ways of harness.run.launch: each launch's
outputs' file written by the backend itself (`run_to_file`; the worker must never call its `run`), and launch files
read ahead into staging slots (`stage`, `STAGINGS`: ordinary memory here, page-locked on a GPU)."""
from harness.run.launch import LaunchInput, PinnedStaging, save_outputs
from tests.simulated import passthrough_device

use_device = passthrough_device.use_device
STAGINGS = (PinnedStaging(allocate=bytearray), PinnedStaging(allocate=bytearray))


def stage(path, slot):
    return LaunchInput.load(path, STAGINGS[slot])


def run(cubin_path, kernel_name, launch):
    raise AssertionError("the GPU worker called run, though its backend writes the outputs' file itself")


def run_to_file(cubin_path, kernel_name, launch, out_path):
    save_outputs(passthrough_device.run(cubin_path, kernel_name, launch), out_path)
