"""Every family on a GPU of its arch: each case of the sweep diffed register by register (wgmma, wgmma_sp,
wgmma_seq on sm_90a) or cell by cell of Tensor Memory (tcgen05 on sm_100a/sm_103a), every negative control caught as
its model predicts. One module for every family, parametrized by family and kernel: the family's GPU marker is on
each of its parameters, so a machine without a GPU of a family's arch skips that family's tests with the reason.

The whole plan goes through the sweep's engine (parallel cached compile, SASS check, batched launches) once, in
shards (tests/gpu_sweep.py); each kernel is a test, which names and explains every case of it that fails. `-k`
picks families or kernels by id (`-k wgmma_sp`; `-k "wgmma_ and not wgmma_sp"` for the dense family alone): only the
selected families' kernels are launched (conftest.py tells the sweep which were selected). Cases that rest on an
unsettled reading (2:4 metadata with decreasing indices) are tests too: a failure there settles the reading the other
way (results/FINDINGS.md), and the failure says so. No Blackwell GPU was available where this harness was built: the
tcgen05 tests have never run.
"""
import subprocess
import sys

import pytest

from harness import registry
from harness.records import results
from tests.gpu_sweep import session_sweep

# a small selection of each family the sweep command runs in a process of its own, as a user types it
COMMAND_SAMPLES = {
    "wgmma": ("--kind", "f16", "--n", "64", "--a-src", "SS", "--data", "exact"),
    "wgmma_seq": ("--match", "rspipe"),
}


def _gpu_mark(family: str):
    return pytest.mark.gpu(*map(str, registry.get(family).archs))


def _kernel_params() -> list:
    """Each family's kernels (session_sweep().params: one per kernel, grouped by shard), with the family's marker."""
    return [pytest.param(*p.values, id=p.id, marks=(*p.marks, _gpu_mark(str(fam.name))))
            for fam in registry.all_families() for p in session_sweep().params(str(fam.name))]


@pytest.mark.parametrize("kernel", _kernel_params())
def test_every_case_of_the_kernel_passes_and_every_control_is_caught(kernel, tmp_path_factory):
    session_sweep().check_kernel(kernel, tmp_path_factory)


@pytest.mark.parametrize("family", [pytest.param(f, marks=_gpu_mark(f), id=f) for f in COMMAND_SAMPLES])
def test_the_sweep_command_runs_a_sample_of_the_family(family, tmp_path):
    out = tmp_path / "r.jsonl"
    proc = subprocess.run([sys.executable, "-m", "harness", "sweep", "--family", family, *COMMAND_SAMPLES[family],
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, recs, summary = results.load(out)
    assert env["gpu"] and env["compute_capability"] and env["nvrtc"] and env["driver"]
    assert {r["family"] for r in recs.values()} == {family}
    assert summary["fail"] == 0 and summary["pass"] == len(recs) > 0
