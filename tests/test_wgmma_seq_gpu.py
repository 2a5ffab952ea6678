"""wgmma_seq on a real sm_90a GPU: every sequence case (K-loops with add and or advances, the RS pipeline, two
warpgroups), diffed register by register, and every negative control caught as the model predicts.

The whole plan runs once through the sweep's engine (parallel cached compile, batched launches); each kernel is
a test, naming and explaining each case of it that fails. Without an sm_90a GPU every test here skips with the reason.
"""
import subprocess
import sys

import pytest

from harness.records import results
from tests.gpu_sweep import session_sweep

ARCH = "sm_90a"
pytestmark = pytest.mark.gpu(ARCH)


@pytest.mark.parametrize("kernel", session_sweep().params("wgmma_seq"))
def test_wgmma_seq(kernel, tmp_path_factory):
    session_sweep().check_kernel(kernel, tmp_path_factory)


def test_sweep_command_runs_the_family(tmp_path):
    out = tmp_path / "r.jsonl"
    proc = subprocess.run([sys.executable, "-m", "harness", "sweep", "--family", "wgmma_seq", "--match", "rspipe",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, recs, summary = results.load(out)
    assert env["compute_capability"] == "9.0" and {r["family"] for r in recs.values()} == {"wgmma_seq"}
    assert summary["fail"] == 0 and summary["pass"] == len(recs) > 0
