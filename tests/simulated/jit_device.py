"""A simulated GPU whose "driver" loads PTX: launches go to the simulated devices (sim_device), but a module path
must end in .ptx (anything else is a fault: the sweep handed the worker something other than PTX), and a kernel
named in TC_SIM_JIT_REJECT (comma list) is rejected as the driver's JIT rejects PTX it cannot compile."""
from __future__ import annotations

import os

from harness.run.launch import ModuleLoadError
from tests.simulated import sim_device
from tests.simulated.sim_common import use_device  # noqa: F401


def run(cubin_path, kernel_name, launch):
    if not str(cubin_path).endswith(".ptx"):
        raise RuntimeError(f"simulated JIT device: handed {cubin_path}, not PTX")
    if kernel_name in os.environ.get("TC_SIM_JIT_REJECT", "").split(","):
        raise ModuleLoadError(f"the driver's JIT rejected the PTX {os.path.basename(str(cubin_path))}: "
                              f"CUDADriverError: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed (simulated)")
    return sim_device.run(cubin_path, kernel_name, launch)
