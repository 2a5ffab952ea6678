"""Under `pytest -n N` on a node with several GPUs, each xdist worker sees exactly one GPU (conftest.py pins
it before CUDA starts), so the wgmma cases spread over the node's GPUs."""
import os
from pathlib import Path

import pytest

from harness.run import gpu

pytestmark = pytest.mark.gpu("sm_90a")


@pytest.mark.parametrize("i", range(4))
def test_xdist_worker_sees_one_gpu(i):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        pytest.skip("not under pytest-xdist")
    if os.environ.get("TC_HARNESS_PINNED"):
        assert gpu.device_count() == 1
    log = os.environ.get("TC_HARNESS_PIN_LOG")  # where a multi-GPU check collects who ran where
    if log:
        Path(log).mkdir(parents=True, exist_ok=True)
        (Path(log) / f"{worker}.txt").write_text(f"{os.environ.get('CUDA_VISIBLE_DEVICES')} {gpu.device_info(0)['uuid']}\n")
