"""wgmma on a real sm_90a GPU: every case of the sweep, diffed register by register.

One kernel per kernel key is compiled (in parallel, cached) and launched once with all of its cases (one CTA
per case); each kernel is a test, which names and explains every case of it that fails. Without an sm_90a GPU
every test here skips with the reason (see conftest.py). Under `pytest -n N` each worker holds one GPU and runs
the shards of kernels it was handed (tests/gpu_sweep.py).
"""
import subprocess
import sys

import pytest

from harness.records import results
from tests.gpu_sweep import session_sweep

ARCH = "sm_90a"
pytestmark = pytest.mark.gpu(ARCH)


@pytest.mark.parametrize("kernel", session_sweep().params("wgmma"))
def test_wgmma(kernel, tmp_path_factory):
    """Every case passes; every negative control (a deliberately wrong descriptor) is caught as predicted."""
    session_sweep().check_kernel(kernel, tmp_path_factory)


def test_sweep_command_writes_a_results_file(tmp_path):
    out = tmp_path / "r.jsonl"
    proc = subprocess.run([sys.executable, "-m", "harness", "sweep", "--family", "wgmma", "--kind", "f16", "--n", "64", "--a-src",
                           "SS", "--data", "exact", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, recs, summary = results.load(out)
    assert env["gpu"] and env["compute_capability"] == "9.0" and env["nvrtc"] and env["driver"]
    assert summary["fail"] == 0 and summary["pass"] == len(recs) > 0
