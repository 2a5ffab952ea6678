"""tcgen05 on a Blackwell GPU (B200: sm_100a, B300: sm_103a): every case of every form, diffed cell by cell
of Tensor Memory against the reference, one test per kernel (tests/gpu_sweep.py). No Blackwell GPU was available
where this harness was built: these tests have never run; on any other machine they skip with the reason (see
conftest.py)."""
import pytest

from harness.families.tcgen05 import forms as tcgen05
from tests.gpu_sweep import session_sweep

pytestmark = pytest.mark.gpu(*tcgen05.ARCHS)


@pytest.mark.parametrize("kernel", session_sweep().params("tcgen05"))
def test_tcgen05(kernel, tmp_path_factory):
    session_sweep().check_kernel(kernel, tmp_path_factory)
