"""wgmma on a real sm_90a GPU: every case of the sweep, diffed register by register.

One kernel per kernel key is compiled (in parallel, cached) and launched once with all of its cases (one CTA
per case) the first time any of its cases is asked for; each case is then its own test with a readable id.
Without an sm_90a GPU every test here skips with the reason (see conftest.py). Under `pytest -n N` each
worker holds one GPU and the cases of a kernel stay together (xdist groups).
"""
import json
import subprocess
import sys

import pytest

from harness import plan, sweep
from harness.records import results
from harness.run import gpu

ARCH = "sm_90a"
PLAN = None if gpu.skip_reason(ARCH) else plan.make(plan.Selection(families=("wgmma",)), cache=True)
CASES = [c for _, cs in PLAN.work for c in cs] if PLAN else []
pytestmark = pytest.mark.gpu(ARCH)


@pytest.fixture(scope="session")
def wgmma_records(tmp_path_factory):
    """The whole plan through the sweep's engine once (parallel cached compile, batched launches on this
    worker's GPU); each case is then its own test, with its own record."""
    out = tmp_path_factory.mktemp("wgmma") / "sweep.jsonl"
    sweep.execute(PLAN, sweep.SweepConfig(out_path=out, diagnose=0), log=lambda m: None)
    recs = results.load(out)[1]
    return recs.__getitem__


def _explain(rec: dict) -> str:
    return json.dumps({k: rec[k] for k in rec if k in ("mismatches", "bad_rows", "bad_cols", "first_mismatches",
                                                       "unwritten_registers", "caught", "why", "error")},
                      indent=1)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=pytest.mark.xdist_group("wgmma")) for c in CASES]
                         or [pytest.param(None, id="wgmma-cases")])
def test_wgmma(case, wgmma_records):
    rec = wgmma_records(case.id)
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
