"""Probe mode on the GPU: the tensor core's reads, recovered element by element, are where the layout model
says, and a wrong descriptor is explained by the one setting it changed."""
import pytest

from harness.run import compile as C, gpu
from harness.families.wgmma import probe as diagnose
from harness.experiments import probes
from harness.families.wgmma import kernel as wgmma_kernel
from harness.run.worker import GpuWorker

ARCH = "sm_90a"
pytestmark = pytest.mark.gpu(ARCH)
CASES = [] if gpu.skip_reason(ARCH) else probes.address_cases()


@pytest.fixture(scope="module")
def records():
    keys = sorted({c.key for c in CASES}, key=lambda k: k.name)
    cubins = {c.name: c.cubin_path for c in C.compile_many([C.CompileJob(k.name, wgmma_kernel.source(k), ARCH)
                                                            for k in keys])}
    worker = GpuWorker()
    try:
        yield diagnose.diagnose(CASES, lambda k: cubins[k.name], worker)
    finally:
        worker.close()


def test_every_probed_operand_reads_as_the_model_says(records):
    bad = [r for r in records if not r.get("reads_as_model") and r["status"] != "not-probed"]
    assert not bad, bad[:3]
    assert len(records) >= len(CASES)


def test_positive_cases_read_the_intended_layout_and_controls_are_explained(records):
    by_id = {c.id: c for c in CASES}
    for r in records:
        c = by_id[r["id"]]
        if r["status"] == "not-probed":
            assert c.control.startswith("swapped"), r["summary"]  # an aliasing descriptor on the other operand
        elif not c.control:
            assert r["reads_as_intended"], r["summary"]
        elif r["operand"] == ("A" if c.control.endswith("@A") else "B"):
            assert r["wrong"] > 0 and r.get("observed_change"), r["summary"]
