"""wgmma on a real sm_90a GPU: every case of the sweep, diffed register by register.

One kernel per kernel key is compiled (in parallel, cached) and launched once with all of its cases (one CTA
per case) the first time any of its cases is asked for; each case is then its own test with a readable id.
Without an sm_90a GPU every test here skips with the reason (see conftest.py). Under `pytest -n N` each
worker holds one GPU and runs the shards of kernels it was handed (tests/gpu_sweep.py).
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
SWEEP = ShardedSweep("wgmma", None if gpu.skip_reason(ARCH) else
                     plan.make(plan.Selection(families=("wgmma",)), cache=True))
pytestmark = pytest.mark.gpu(ARCH)


def _explain(rec: dict) -> str:
    return json.dumps({k: rec[k] for k in rec if k in ("mismatches", "bad_rows", "bad_cols", "first_mismatches",
                                                       "unwritten_registers", "caught", "why", "error")},
                      indent=1)


@pytest.mark.parametrize("case", SWEEP.params())
def test_wgmma(case, tmp_path_factory):
    rec = SWEEP.record(case, tmp_path_factory)
    assert rec["status"] == "pass", _explain(rec)
    if case.control:
        assert rec["caught"], "a deliberately wrong descriptor must change the result"


def test_sweep_command_writes_a_results_file(tmp_path):
    out = tmp_path / "r.jsonl"
    proc = subprocess.run([sys.executable, "-m", "harness", "sweep", "--family", "wgmma", "--kind", "f16", "--n", "64", "--a-src",
                           "SS", "--data", "exact", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, recs, summary = results.load(out)
    assert env["gpu"] and env["compute_capability"] == "9.0" and env["nvrtc"] and env["driver"]
    assert summary["fail"] == 0 and summary["pass"] == len(recs) > 0
