"""tcgen05 on a Blackwell GPU (B200: sm_100a, B300: sm_103a): every case of every form, diffed cell by cell
of Tensor Memory against the reference. No Blackwell GPU was available where this harness was built: these
tests have never run; on any other machine they skip with the reason (see conftest.py)."""
import pytest

from harness.run import gpu
from harness.families.tcgen05 import forms as tcgen05, cases as T
from harness import tcgen05_run

ARCH = next((a for a in tcgen05.ARCHS if gpu.skip_reason(a) is None), None)
CASES = [c for _, cs in T.all_cases(ARCH) for c in cs] if ARCH else []
pytestmark = pytest.mark.gpu(*tcgen05.ARCHS)


@pytest.fixture(scope="session")
def tcgen05_records():
    recs, _ = tcgen05_run.run(lambda m: None)
    return {r["id"]: r for r in recs}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=pytest.mark.xdist_group(c.form.name))
                                  for c in CASES] or [pytest.param(None, id="tcgen05-cases")])
def test_tcgen05(case, tcgen05_records):
    rec = tcgen05_records[case.id]
    assert rec["status"] == "pass", rec
