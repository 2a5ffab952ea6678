"""tcgen05 on a Blackwell GPU (B200: sm_100a, B300: sm_103a): every case of every form, diffed cell by cell
of Tensor Memory against the reference. No Blackwell GPU was available where this harness was built: these
tests have never run; on any other machine they skip with the reason (see conftest.py)."""
import pytest

from harness import plan, sweep
from harness.families.tcgen05 import forms as tcgen05
from harness.records import results
from harness.run import gpu

ARCH = next((a for a in tcgen05.ARCHS if gpu.skip_reason(a) is None), None)
PLAN = plan.make(plan.Selection(families=("tcgen05",)), {"tcgen05": ARCH}) if ARCH else None
CASES = [c for _, cs in PLAN.work for c in cs] if ARCH else []
pytestmark = pytest.mark.gpu(*tcgen05.ARCHS)


@pytest.fixture(scope="session")
def tcgen05_records(tmp_path_factory):
    out = tmp_path_factory.mktemp("tcgen05") / "sweep.jsonl"
    sweep.execute(PLAN, sweep.SweepConfig(out_path=out, diagnose=0), log=lambda m: None)
    return results.load(out)[1]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=pytest.mark.xdist_group(c.form.name))
                                  for c in CASES] or [pytest.param(None, id="tcgen05-cases")])
def test_tcgen05(case, tcgen05_records):
    rec = tcgen05_records[case.id]
    assert rec["status"] == "pass", rec
