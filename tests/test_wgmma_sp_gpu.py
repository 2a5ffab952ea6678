"""wgmma.mma_async.sp on a real sm_90a GPU: every case of the sparse sweep, diffed register by register, every
negative control (wrong metadata, wrong selector, wrong descriptor) caught as the model predicts.

As tests/test_wgmma_gpu.py: the whole plan goes through the sweep's engine once, then each case is its own test.
Without an sm_90a GPU every test here skips with the reason. Cases that rest on an unsettled reading (2:4 metadata
with decreasing indices) are tests too: a failure there settles the reading the other way (results/FINDINGS.md
section 8), and the test says so.
"""
import json

import pytest

from harness import plan
from harness.run import gpu
from tests.gpu_sweep import ShardedSweep

ARCH = "sm_90a"
SWEEP = ShardedSweep("wgmma_sp", None if gpu.skip_reason(ARCH) else
                     plan.make(plan.Selection(families=("wgmma_sp",)), cache=True))
pytestmark = pytest.mark.gpu(ARCH)


def _explain(rec: dict) -> str:
    return json.dumps({k: rec[k] for k in rec if k in ("mismatches", "bad_rows", "bad_cols", "bad_threads",
                                                       "first_mismatches", "unwritten_registers", "caught", "why",
                                                       "error", "unsettled")}, indent=1)


@pytest.mark.parametrize("case", SWEEP.params())
def test_wgmma_sp(case, tmp_path_factory):
    rec = SWEEP.record(case, tmp_path_factory)
    assert rec["status"] == "pass", _explain(rec)
    if case.control:
        assert rec["caught"] and rec["matches_model_prediction"], _explain(rec)
