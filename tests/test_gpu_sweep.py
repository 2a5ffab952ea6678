"""tests/gpu_sweep.py, the GPU test modules' sharded run of a plan, on simulated GPUs: the shards partition the
plan by whole kernels and are balanced, each shard runs through the engine once, every case gets its record, and a
kernel's test fails naming each case that does not pass (or a control not caught as predicted)."""
import dataclasses
import re

import pytest

from harness import plan, sweep
from tests.gpu_sweep import ShardedSweep
from tests.simulated import fake_gpus

PLAN = plan.make(plan.Selection(families=("wgmma",), kinds=("f16",), n_values=(8, 16), a_srcs=("SS",),
                                data_modes=("exact",)), cache=True)


def test_shards_partition_the_plan_by_whole_kernels_and_balance_it():
    s = ShardedSweep(PLAN, shards=3)
    per_shard = [sum(len(cs) for k, cs in PLAN.work if s.shard_of_kernel[k.name] == i) for i in range(3)]
    assert sum(per_shard) == PLAN.cases and min(per_shard) > 0
    assert max(per_shard) - min(per_shard) <= max(len(cs) for _, cs in PLAN.work)
    groups = {}
    for p in s.params("wgmma"):
        (mark,) = [m for m in p.marks if m.name == "xdist_group"]
        groups[p.values[0].name] = mark.args[0]
        assert p.id == p.values[0].name
    assert sorted(groups) == sorted(k.name for k, _ in PLAN.work)  # one test per kernel
    assert set(groups.values()) == {"gpu-sweep-0", "gpu-sweep-1", "gpu-sweep-2"}


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_every_case_gets_its_record_and_each_shard_runs_once(tmp_path_factory, monkeypatch):
    fake_gpus.install(monkeypatch, ["sm_90a"])
    runs = []
    real = sweep.execute
    monkeypatch.setattr(sweep, "execute", lambda p, cfg, **kw: runs.append(p.cases) or real(p, cfg, **kw))
    s = ShardedSweep(PLAN, shards=3, config=sweep.SweepConfig(diagnose=0, backend=fake_gpus.BACKEND))
    assert sum(s.check_kernel(k, tmp_path_factory) for k, _ in PLAN.work) == PLAN.cases
    assert len(runs) == 3 and sum(runs) == PLAN.cases


def test_without_a_plan_there_is_one_placeholder_parameter():
    (p,) = ShardedSweep(None).params("wgmma")
    assert p.values == (None,) and p.id == "wgmma-kernels"


def _fake_execute(drop=(), compile_errors=(), calls=None, records=None):
    """sweep.execute writing a pass record for each case of the plan but those in `drop` (and those `records`
    gives: case id -> the record's other fields)."""
    from harness.records import results

    def execute(p, cfg, **kw):
        if calls is not None:
            calls.append(p.cases)
        w = results.ResultsWriter(cfg.out_path, {"type": "environment", "schema": results.SCHEMA, "date": "x"})
        caught = {"caught": True, "matches_model_prediction": True}  # a control's pass: caught as predicted
        w.write_lines(results.CaseLines([{"id": c.id, "kernel": k.name, "status": "pass", "mismatches": 0,
                        **(caught if c.control else {}), **(records or {}).get(c.id, {})}
                       for k, cs in p.work for c in cs if c.id not in drop]))
        w.close({"cases": p.cases})
        return {"compile_errors": list(compile_errors)}
    return execute


def test_a_case_the_sweep_wrote_no_record_for_fails_its_kernel(tmp_path_factory, monkeypatch):
    (k, cs), (k2, _) = PLAN.work[:2]
    monkeypatch.setattr(sweep, "execute", _fake_execute(drop={cs[1].id}))
    s = ShardedSweep(PLAN, shards=1)
    want = f"wrote no record for 1 of {k.name}'s {len(cs)} cases (shard 0 of 1): {cs[1].id}"
    with pytest.raises(AssertionError, match=re.escape(want)):
        s.check_kernel(k, tmp_path_factory)
    s.check_kernel(k2, tmp_path_factory)


def test_a_kernel_fails_naming_and_explaining_each_failing_case(tmp_path_factory, monkeypatch):
    (k, cs), (k2, _) = PLAN.work[:2]
    control = next(c for c in cs if c.control)
    ordinary = [c for c in cs if not c.control]
    bad = {ordinary[0].id: {"status": "fail", "mismatches": 3, "first_mismatches": [{"thread": 5, "register": 2}]},
           ordinary[1].id: {"status": "fault", "error": "illegal instruction"},
           control.id: {"caught": True, "matches_model_prediction": False}}
    monkeypatch.setattr(sweep, "execute", _fake_execute(records=bad))
    s = ShardedSweep(PLAN, shards=1)
    with pytest.raises(pytest.fail.Exception) as e:
        s.check_kernel(k, tmp_path_factory)
    msg = str(e.value)
    assert msg.startswith(f"3 of {k.name}'s {len(cs)} cases fail")
    assert f"{ordinary[0].id}: fail" in msg and '"thread": 5' in msg and '"register": 2' in msg
    assert f"{ordinary[1].id}: fault" in msg and "illegal instruction" in msg
    assert f"{control.id}: control not caught as predicted" in msg
    assert not any(f"{c.id}:" in msg for c in cs if c.id not in bad)
    s.check_kernel(k2, tmp_path_factory)  # the other kernel's cases all pass


def test_a_shard_whose_run_raised_is_not_run_again_for_each_case(tmp_path_factory, monkeypatch):
    calls = []

    def broken(p, cfg, **kw):
        calls.append(p.cases)
        raise RuntimeError("the GPU worker died")
    monkeypatch.setattr(sweep, "execute", broken)
    s = ShardedSweep(PLAN, shards=1)
    for k, _ in PLAN.work[:3]:
        with pytest.raises(RuntimeError, match="worker died"):
            s.check_kernel(k, tmp_path_factory)
    assert len(calls) == 1


def test_a_compile_only_kernel_that_did_not_build_fails_the_shards_kernels(tmp_path_factory, monkeypatch):
    """Kernels built for another arch only (tcgen05's other Blackwell) have no cases to fail: the shard does."""
    err = {"kernel": "tcgen05_f16_cg1_SS", "arch": "sm_103a", "error": "NVRTC rejected it"}
    monkeypatch.setattr(sweep, "execute", _fake_execute(compile_errors=[err]))
    s = ShardedSweep(PLAN, shards=1)
    with pytest.raises(AssertionError, match="compile-only kernels of shard 0 did not build"):
        s.check_kernel(PLAN.work[0][0], tmp_path_factory)


def test_a_control_whose_result_is_undefined_passes_when_caught_and_one_not_caught_fails(tmp_path_factory, monkeypatch):
    """tcgen05 records a caught control whose result the PTX ISA leaves undefined with matches_model_prediction None:
    caught is all it can be; a control that was not caught fails."""
    (k, cs), (k2, cs2) = PLAN.work[:2]
    undefined = next(c for c in cs if c.control)
    missed = next(c for c in cs2 if c.control)
    monkeypatch.setattr(sweep, "execute", _fake_execute(records={
        undefined.id: {"caught": True, "matches_model_prediction": None},
        missed.id: {"caught": False, "matches_model_prediction": None}}))
    s = ShardedSweep(PLAN, shards=1)
    s.check_kernel(k, tmp_path_factory)
    with pytest.raises(pytest.fail.Exception, match=re.escape(f"{missed.id}: control not caught as predicted")):
        s.check_kernel(k2, tmp_path_factory)


def test_a_record_under_another_kernel_fails(tmp_path_factory, monkeypatch):
    (k, cs), = PLAN.work[:1]
    monkeypatch.setattr(sweep, "execute", _fake_execute(records={cs[0].id: {"kernel": "wgmma_other"}}))
    with pytest.raises(pytest.fail.Exception, match=re.escape(f"{cs[0].id}: recorded under kernel 'wgmma_other'")):
        ShardedSweep(PLAN, shards=1).check_kernel(k, tmp_path_factory)


def test_only_the_selected_families_kernels_are_launched(tmp_path_factory, monkeypatch):
    """`pytest -k rspipe tests/test_families_gpu.py`: conftest.py hands the sweep the families of the kernel tests
    left after -k (items without a kernel parameter count for none), and a shard launches their kernels alone."""
    import types

    import conftest
    import tests.gpu_sweep as gpu_sweep
    seq = plan.make(plan.Selection(families=("wgmma_seq",), match="rspipe"), cache=True)
    both = dataclasses.replace(PLAN, work=PLAN.work + seq.work)
    calls = []
    monkeypatch.setattr(sweep, "execute", _fake_execute(calls=calls))
    s = ShardedSweep(both, shards=1)
    monkeypatch.setattr(gpu_sweep, "session_sweep", lambda: s)
    selected = [types.SimpleNamespace(callspec=types.SimpleNamespace(params={"kernel": k})) for k, _ in seq.work]
    conftest.tell_the_gpu_sweep_its_families(types.SimpleNamespace(items=[*selected, types.SimpleNamespace()]))
    assert s.families_selected == {"wgmma_seq"}
    s.check_kernel(seq.work[0][0], tmp_path_factory)
    assert calls == [seq.cases]


def test_a_family_planning_every_arch_has_kernel_tests_only_for_the_archs_a_gpu_here_runs(monkeypatch):
    """mma_sync plans sm_120a's cases beside sm_90a's (plans_every_arch): on an H100 the kernel tests are sm_90a's
    alone; sm_120a's cases are the sweep's to record not run, not tests that would ask them to pass."""
    from tests import gpu_sweep
    fake_gpus.install(monkeypatch, ["sm_90a"])
    p = gpu_sweep.gpu_plan()
    archs = {(str(k.family), str(k.arch)) for k, _ in p.work}
    assert ("mma_sync", "sm_90a") in archs and ("mma_sync", "sm_120a") not in archs
