"""tests/gpu_sweep.py, the GPU test modules' sharded run of a plan, on simulated GPUs: the shards partition the
plan by whole kernels and are balanced, each shard runs through the engine once, and every case gets its record."""
import pytest

from harness import plan, sweep
from tests.gpu_sweep import ShardedSweep
from tests.simulated import fake_gpus

PLAN = plan.make(plan.Selection(families=("wgmma",), kinds=("f16",), n_values=(8, 16, 24), a_srcs=("SS",),
                                data_modes=("exact",)))


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
