"""tcgen05 on a Blackwell GPU (B200: sm_100a, B300: sm_103a): every case of every form, diffed cell by cell
of Tensor Memory against the reference. No Blackwell GPU was available where this harness was built: these
tests have never run; on any other machine they skip with the reason (see conftest.py)."""
import pytest

from harness import plan
from harness.families.tcgen05 import forms as tcgen05
from harness.run import gpu
from tests.gpu_sweep import ShardedSweep

ARCH = next((a for a in tcgen05.ARCHS if gpu.skip_reason(a) is None), None)
SWEEP = ShardedSweep("tcgen05", plan.make(plan.Selection(families=("tcgen05",)), {"tcgen05": ARCH}) if ARCH else None)
pytestmark = pytest.mark.gpu(*tcgen05.ARCHS)


@pytest.mark.parametrize("case", SWEEP.params())
def test_tcgen05(case, tmp_path_factory):
    rec = SWEEP.record(case, tmp_path_factory)
    assert rec["status"] == "pass", rec
