"""wgmma.mma_async.sp on a real sm_90a GPU: every case of the sparse sweep, diffed register by register, every
negative control (wrong metadata, wrong selector, wrong descriptor) caught as the model predicts.

As tests/test_wgmma_gpu.py: the whole plan goes through the sweep's engine once, then each case is its own test.
Without an sm_90a GPU every test here skips with the reason. Cases that rest on an unsettled reading (2:4 metadata
with decreasing indices) are tests too: a failure there settles the reading the other way (results/FINDINGS.md
section 8), and the test says so.
"""
import json

import pytest

from harness import plan, sweep
from harness.records import results
from harness.run import gpu

ARCH = "sm_90a"
PLAN = None if gpu.skip_reason(ARCH) else plan.make(plan.Selection(families=("wgmma_sp",)))
CASES = [c for _, cs in PLAN.work for c in cs] if PLAN else []
pytestmark = pytest.mark.gpu(ARCH)


@pytest.fixture(scope="session")
def sparse_records(tmp_path_factory):
    out = tmp_path_factory.mktemp("wgmma_sp") / "sweep.jsonl"
    sweep.execute(PLAN, sweep.SweepConfig(out_path=out, diagnose=0), log=lambda m: None)
    return results.load(out)[1].__getitem__


def _explain(rec: dict) -> str:
    return json.dumps({k: rec[k] for k in rec if k in ("mismatches", "bad_rows", "bad_cols", "bad_threads",
                                                       "first_mismatches", "unwritten_registers", "caught", "why",
                                                       "error", "unsettled")}, indent=1)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=pytest.mark.xdist_group("wgmma_sp")) for c in CASES]
                         or [pytest.param(None, id="wgmma_sp-cases")])
def test_wgmma_sp(case, sparse_records):
    rec = sparse_records(case.id)
    assert rec["status"] == "pass", _explain(rec)
    if case.control:
        assert rec["caught"] and rec["matches_model_prediction"], _explain(rec)
