"""wgmma_seq on a real sm_90a GPU: every sequence case (K-loops with add and or advances, the RS pipeline, two
warpgroups), diffed register by register, and every negative control caught as the model predicts.

The whole plan runs once through the sweep's engine (parallel cached compile, batched launches); each case is
then its own test with a readable id. Without an sm_90a GPU every test here skips with the reason.
"""
import json
import subprocess
import sys

import pytest

from harness import plan
from harness.records import results
from harness.run import gpu
from tests.gpu_sweep import ShardedSweep

ARCH = "sm_90a"
SWEEP = ShardedSweep("wgmma_seq", None if gpu.skip_reason(ARCH) else
                     plan.make(plan.Selection(families=("wgmma_seq",)), cache=True))
pytestmark = pytest.mark.gpu(ARCH)


@pytest.mark.parametrize("case", SWEEP.params())
def test_wgmma_seq(case, tmp_path_factory):
    rec = SWEEP.record(case, tmp_path_factory)
    detail = json.dumps({k: rec[k] for k in rec if k in ("mismatches", "bad_rows", "bad_cols", "first_mismatches",
                                                         "unwritten_registers", "caught", "why", "error")}, indent=1)
    assert rec["status"] == "pass", detail
    if case.control is not None:
        assert rec["caught"] and rec["matches_model_prediction"], detail


def test_sweep_command_runs_the_family(tmp_path):
    out = tmp_path / "r.jsonl"
    proc = subprocess.run([sys.executable, "-m", "harness", "sweep", "--family", "wgmma_seq", "--match", "rspipe",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, recs, summary = results.load(out)
    assert env["compute_capability"] == "9.0" and {r["family"] for r in recs.values()} == {"wgmma_seq"}
    assert summary["fail"] == 0 and summary["pass"] == len(recs) > 0
