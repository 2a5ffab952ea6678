"""wgmma.mma_async.sp on a real sm_90a GPU: every case of the sparse sweep, diffed register by register, every
negative control (wrong metadata, wrong selector, wrong descriptor) caught as the model predicts.

As tests/test_wgmma_gpu.py: the whole plan goes through the sweep's engine once, each kernel is a test.
Without an sm_90a GPU every test here skips with the reason. Cases that rest on an unsettled reading (2:4 metadata
with decreasing indices) are tests too: a failure there settles the reading the other way (results/FINDINGS.md
section 8), and the failure says so (tests/gpu_sweep.py).
"""
import pytest

from tests.gpu_sweep import session_sweep

ARCH = "sm_90a"
pytestmark = pytest.mark.gpu(ARCH)


@pytest.mark.parametrize("kernel", session_sweep().params("wgmma_sp"))
def test_wgmma_sp(kernel, tmp_path_factory):
    session_sweep().check_kernel(kernel, tmp_path_factory)
