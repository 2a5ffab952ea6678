"""tests/gpu_sweep.py, the GPU test modules' sharded run of a plan, on simulated GPUs: the shards partition the
plan by whole kernels and are balanced, each shard runs through the engine once, and every case gets its record."""
import pytest

from harness import plan, sweep
from tests.gpu_sweep import ShardedSweep
from tests.simulated import fake_gpus

PLAN = plan.make(plan.Selection(families=("wgmma",), kinds=("f16",), n_values=(8, 16), a_srcs=("SS",),
                                data_modes=("exact",)), cache=True)


def test_shards_partition_the_plan_by_whole_kernels_and_balance_it():
    s = ShardedSweep("wgmma", PLAN, shards=3)
    per_shard = [sum(len(cs) for k, cs in PLAN.work if s.shard_of_kernel[k.name] == i) for i in range(3)]
    assert sum(per_shard) == PLAN.cases and min(per_shard) > 0
    assert max(per_shard) - min(per_shard) <= max(len(cs) for _, cs in PLAN.work)
    groups = {}
    for p in s.params():
        (mark,) = [m for m in p.marks if m.name == "xdist_group"]
        groups.setdefault(p.values[0].id, mark.args[0])
    assert len(groups) == PLAN.cases and set(groups.values()) == {"wgmma-0", "wgmma-1", "wgmma-2"}
    for k, cs in PLAN.work:  # a kernel's cases share a group: it is compiled and launched once
        assert len({groups[c.id] for c in cs}) == 1


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_every_case_gets_its_record_and_each_shard_runs_once(tmp_path_factory, monkeypatch):
    fake_gpus.install(monkeypatch, ["sm_90a"])
    runs = []
    real = sweep.execute
    monkeypatch.setattr(sweep, "execute", lambda p, cfg, **kw: runs.append(p.cases) or real(p, cfg, **kw))
    s = ShardedSweep("wgmma", PLAN, shards=3, config=sweep.SweepConfig(diagnose=0, backend=fake_gpus.BACKEND))
    for _, cs in PLAN.work:
        for c in cs:
            rec = s.record(c, tmp_path_factory)
            assert rec["id"] == c.id and rec["status"] == "pass", rec
    assert len(runs) == 3 and sum(runs) == PLAN.cases


def test_without_a_plan_there_is_one_placeholder_parameter():
    (p,) = ShardedSweep("wgmma", None).params()
    assert p.values == (None,) and p.id == "wgmma-cases"


def _fake_execute(drop=(), compile_errors=(), calls=None):
    """sweep.execute writing a pass record for each case of the plan but those in `drop`."""
    from harness.records import results

    def execute(p, cfg, **kw):
        if calls is not None:
            calls.append(p.cases)
        w = results.ResultsWriter(cfg.out_path, {"type": "environment", "schema": results.SCHEMA, "date": "x"})
        w.write_cases([{"id": c.id, "kernel": k.name, "status": "pass", "mismatches": 0}
                       for k, cs in p.work for c in cs if c.id not in drop])
        w.close({"cases": p.cases})
        return {"compile_errors": list(compile_errors)}
    return execute


def test_a_case_the_sweep_wrote_no_record_for_fails(tmp_path_factory, monkeypatch):
    (k, cs), = PLAN.work[:1]
    monkeypatch.setattr(sweep, "execute", _fake_execute(drop={cs[1].id}))
    s = ShardedSweep("wgmma", PLAN, shards=1)
    assert s.record(cs[0], tmp_path_factory)["status"] == "pass"
    with pytest.raises(AssertionError, match="wrote no record"):
        s.record(cs[1], tmp_path_factory)


def test_a_shard_whose_run_raised_is_not_run_again_for_each_case(tmp_path_factory, monkeypatch):
    calls = []

    def broken(p, cfg, **kw):
        calls.append(p.cases)
        raise RuntimeError("the GPU worker died")
    monkeypatch.setattr(sweep, "execute", broken)
    s = ShardedSweep("wgmma", PLAN, shards=1)
    for c in [c for _, cs in PLAN.work for c in cs][:5]:
        with pytest.raises(RuntimeError, match="worker died"):
            s.record(c, tmp_path_factory)
    assert len(calls) == 1


def test_a_compile_only_kernel_that_did_not_build_fails_the_shards_cases(tmp_path_factory, monkeypatch):
    """Kernels built for another arch only (tcgen05's other Blackwell) have no cases to fail: the shard does."""
    err = {"kernel": "tcgen05_f16_cg1_SS", "arch": "sm_103a", "error": "NVRTC rejected it"}
    monkeypatch.setattr(sweep, "execute", _fake_execute(compile_errors=[err]))
    s = ShardedSweep("wgmma", PLAN, shards=1)
    with pytest.raises(AssertionError, match="compile-only kernels of shard 0 did not build"):
        s.record(PLAN.work[0][1][0], tmp_path_factory)
