"""The main job as users run it, on a GPU node: `python -m harness sweep` in a fresh process, beside the kernel tests.

The kernel tests (tests/test_families_gpu.py) run the families' cases through the engine inside the test process. A
defect on the command's own path (its process's imports, its interpreter state, its arguments) once let pytest stay
green while the command compiled nothing: NVRTC had overwritten the interpreter's shared `b" "`, so the command's
process compiled its f-strings without their spaces. So the suite runs the README's command itself, in a process of
its own, and fails unless every case the kernel tests check passes there too: the same case ids, each `pass`.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.records import results
from tests.gpu_sweep import gpu_plan

ROOT = Path(__file__).resolve().parent.parent
# the families whose archs a GPU here has: any of them makes the command launch (conftest.py skips without one)
pytestmark = pytest.mark.gpu("sm_90a", "sm_100a", "sm_103a")

# what the test session sets for its own processes (conftest.py): the command gets the user's environment instead
SESSION_ONLY = ("TC_HARNESS_WORKERS", "TC_HARNESS_PINNED", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
                "PYTEST_CURRENT_TEST", "PYTEST_VERSION")


def users_environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in SESSION_ONLY}
    if os.environ.get("TC_HARNESS_PINNED"):  # conftest pinned this xdist worker to one GPU: give the node back
        env.pop("CUDA_VISIBLE_DEVICES", None)
        if os.environ.get("TC_HARNESS_USER_CUDA_VISIBLE_DEVICES") is not None:
            env["CUDA_VISIBLE_DEVICES"] = os.environ["TC_HARNESS_USER_CUDA_VISIBLE_DEVICES"]
    return env


def test_the_main_job_passes_every_case_the_kernel_tests_check(tmp_path):
    plan = gpu_plan()
    assert plan is not None and plan.cases > 0
    expected = {c.id for _, cs in plan.work for c in cs}
    out = tmp_path / "sweep.jsonl"
    proc = subprocess.run([sys.executable, "-m", "harness", "sweep", "--out", str(out)], cwd=ROOT,
                          env=users_environment(), capture_output=True, text=True, timeout=900)
    assert out.exists(), f"the command wrote no results file (exit {proc.returncode}): {proc.stderr[-3000:]}"
    env, recs, summary = results.load(out)
    passed = {i for i, r in recs.items() if r.get("status") == "pass"}
    missing, extra = expected - passed, passed - expected
    not_passing = sorted((i, recs[i].get("status")) for i in expected if i in recs and i not in passed)
    assert not missing, (f"{len(missing)} of the {len(expected)} cases the kernel tests check did not pass in "
                         f"`python -m harness sweep` ({len(not_passing)} recorded otherwise, e.g. {not_passing[:5]}; "
                         f"{len(missing) - len(not_passing)} not recorded); its log: {proc.stderr[-3000:]}")
    assert not extra, f"the command passed cases the kernel tests do not plan: {sorted(extra)[:5]}"
    assert summary is not None and summary["pass"] == len(expected), summary
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert env["python"] and env["nvrtc"]
