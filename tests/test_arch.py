"""Which GPUs run a kernel of an arch: one relation in the vocabulary (harness.enums.runs_on), from the GPU's compute
capability, that the GPU detection, the sweep's devices and the engine ask; no module keeps an arch-by-compute-
capability list of its own."""
import pytest

from harness import enums, sweep
from harness.enums import Arch, runs_on
from harness.run import gpu
from harness.run.engine import Engine
from tests.simulated import fake_gpus


@pytest.mark.parametrize("arch,cc,ptx,runs", [
    ("sm_90a", "9.0", False, True), ("sm_90a", "9.0", True, True),
    ("sm_90a", "10.0", False, False), ("sm_90a", "10.0", True, False),  # an 'a' target: its own compute capability
    ("sm_100a", "10.0", False, True), ("sm_100a", "10.3", False, False),
    ("sm_103a", "10.3", False, True), ("sm_103a", "10.0", False, False),
    ("sm_100f", "10.3", False, True), ("sm_100f", "11.0", True, False),  # family-specific: the same major
    ("sm_80", "8.6", False, True), ("sm_89", "8.6", False, False),  # a cubin: the same major, a later minor
    ("sm_80", "9.0", False, False), ("sm_80", "9.0", True, True),  # PTX: every later compute capability
    ("sm_89", "12.0", True, True), ("sm_89", "8.0", True, False),
    ("sm_777x", "77.7", False, False),  # neither NVIDIA's spelling nor declared: nothing runs it
])
def test_which_compute_capabilities_run_an_arch(arch, cc, ptx, runs, monkeypatch):
    monkeypatch.setattr(enums, "_DECLARED", {})  # none declared (a family loaded in this process may have)
    assert runs_on(arch, cc, ptx) is runs
    assert runs_on(arch, enums.compute_capability(cc), ptx) is runs


def test_the_vocabulary_archs_answer_for_themselves():
    assert [a for a in Arch if a.runs_on("9.0")] == [Arch.SM_90A]
    assert [a for a in Arch if a.runs_on((10, 3))] == [Arch.SM_103A]
    assert not any(a.runs_on("8.0") for a in Arch)


def test_a_declared_arch_runs_on_what_it_declares(monkeypatch):
    monkeypatch.setattr(enums, "_DECLARED", {})
    enums.declare_arch("sm_1x", ["1.1", (1, 2)])
    enums.declare_arch("sm_1x", ["1.2", "1.1"])  # the same again: nothing to refuse
    assert runs_on("sm_1x", "1.1") and runs_on("sm_1x", "1.2") and not runs_on("sm_1x", "1.3")
    assert enums.is_known_arch("sm_1x") and enums.is_known_arch("sm_80") and not enums.is_known_arch("x")
    for arch, ccs, says in [("sm_1x", ["1.3"], "declared twice"), ("sm_90a", ["9.0"], "follow from its name"),
                            ("sm_2x", [], "no compute capability"), ("sm_2x", ["nine"], "major.minor")]:
        with pytest.raises(ValueError, match=says):
            enums.declare_arch(arch, ccs)


def test_a_gpu_is_selected_for_every_arch_it_runs(monkeypatch):
    fake_gpus.install(monkeypatch, ["sm_90a", "sm_100a"])
    assert gpu.select("all", "sm_90a") == [0] and gpu.select("all", "sm_100a") == [1]
    assert gpu.select("all", "sm_80") == [] and gpu.select("all", "sm_80", ptx=True) == [0, 1]
    assert gpu.skip_reason("sm_103a").startswith("needs a sm_103a GPU; this is Simulated sm_90a")
    assert gpu.skip_reason("sm_80", ptx=True) is None
    cfg = sweep.SweepConfig()
    assert sweep.devices(cfg, ["sm_90a", "sm_100a", "sm_103a"]) == [(0, "sm_90a"), (1, "sm_100a")]


def test_a_gpu_that_runs_two_archs_has_one_worker_that_takes_both(monkeypatch):
    engine = Engine([(0, "sm_80"), (0, "sm_90a")], workers=1, backend="tests.simulated.toy_device")
    try:
        assert [w.device for w in engine.gpu_workers] == [0]
        assert engine.archs_of[engine.gpu_workers[0]] == {"sm_80", "sm_90a"}
    finally:
        engine.close()
