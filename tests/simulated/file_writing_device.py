"""The stand-in backend of passthrough_device.py, writing each launch's outputs' file itself (`run_to_file`, as
harness.run.launch does on a GPU): the GPU worker must hand it the file, and never call its `run`."""
from harness.run.launch import save_outputs
from tests.simulated import passthrough_device

use_device = passthrough_device.use_device


def run(cubin_path, kernel_name, launch):
    raise AssertionError("the GPU worker called run, though its backend writes the outputs' file itself")


def run_to_file(cubin_path, kernel_name, launch, out_path):
    save_outputs(passthrough_device.run(cubin_path, kernel_name, launch), out_path)
