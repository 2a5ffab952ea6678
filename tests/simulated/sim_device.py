"""One simulated GPU backend for every family: a launch goes to the simulator of its kernel's family by the
kernel name's prefix (wgmma_sp_* -> wgmma_sp_device, wgmmaseq_* -> wgmma_seq_device, wgmma_* -> wgmma_device,
tcgen05_* -> tcgen05_device, mmasync120_* -> mma_sync_sm120_device), so one engine can drive an sm_90a and an
sm_100a simulated GPU side by side."""
from tests.simulated import mma_sync_sm120_device, tcgen05_device, wgmma_device, wgmma_seq_device, wgmma_sp_device
from tests.simulated.sim_common import use_device  # noqa: F401


def run(cubin_path, kernel_name, launch):
    if str(kernel_name).startswith("mmasync120_"):
        return mma_sync_sm120_device.run(cubin_path, kernel_name, launch)
    if str(kernel_name).startswith("tcgen05_"):
        return tcgen05_device.run(cubin_path, kernel_name, launch)
    if str(kernel_name).startswith("wgmmaseq_"):
        return wgmma_seq_device.run(cubin_path, kernel_name, launch)
    if str(kernel_name).startswith("wgmma_sp_"):
        return wgmma_sp_device.run(cubin_path, kernel_name, launch)
    return wgmma_device.run(cubin_path, kernel_name, launch)
