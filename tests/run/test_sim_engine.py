"""The engine on simulated GPUs, for both families: bisection of a fault and of a hang, resume, shards,
several GPUs, diagnosis of a planted hardware/model disagreement."""
from collections import Counter

import pytest

from harness import plan
from harness.plan import Plan
from tests.run import simsweep
from tests.simulated import fake_gpus
from harness.records import results
from tests.simulated.sim_common import read_log

pytestmark = pytest.mark.cute  # the simulated GPUs read their layouts from CuTe DSL

SMALL = plan.Selection(families=("wgmma",), kinds=("f16", "s8"), n_values=(32,), a_srcs=("SS",))


@pytest.fixture(scope="module")
def small_plan():
    p = plan.make(SMALL, {"wgmma": "sm_90a"})
    simsweep.warm_wgmma_oracle(p)
    return p


def _smallest(p):
    return min(p.work, key=lambda kc: len(kc[1]))


def test_a_trap_in_one_cta_faults_exactly_that_case(small_plan, monkeypatch, tmp_path):
    kernel, cases = small_plan.work[0]
    victim = cases[len(cases) // 3]
    monkeypatch.setenv("TC_SIM_FAULTS", f"{kernel.name}:#{simsweep.case_fingerprint(kernel, victim)}:trap")
    fake_gpus.install(monkeypatch, ["sm_90a"])
    summary, recs, _, logs = simsweep.sweep(Plan([(kernel, cases)]), tmp_path / "r.jsonl")
    assert set(recs) == {c.id for c in cases}
    assert recs[victim.id]["status"] == "fault" and "unspecified launch failure" in recs[victim.id]["error"]
    assert all(r["status"] == "pass" for i, r in recs.items() if i != victim.id)
    assert any("isolating" in m for m in logs) and summary["fault"] == 1


def test_a_hang_gives_timeout_within_the_configured_timeout(small_plan, monkeypatch, tmp_path):
    kernel, cases = _smallest(small_plan)
    cases = cases[:2]  # two, not three: each bisection level waits the whole timeout (idle, 2 s of a CI worker's)
    victim = cases[1]
    monkeypatch.setenv("TC_SIM_FAULTS", f"{kernel.name}:#{simsweep.case_fingerprint(kernel, victim)}:hang")
    fake_gpus.install(monkeypatch, ["sm_90a"])
    summary, recs, _, _ = simsweep.sweep(Plan([(kernel, cases)]), tmp_path / "r.jsonl", timeout=2.0)
    assert recs[victim.id]["status"] == "timeout" and "2 s" in recs[victim.id]["error"]
    assert all(r["status"] == "pass" for i, r in recs.items() if i != victim.id)
    # one hang per bisection level (2 -> 1 cases), the timeout each, then it stops
    assert summary["timeout"] == 1 and summary["wall_s"] < 2 * 2.0 + 20


def test_a_hang_is_bisected_with_a_timeout_scaled_to_the_launches_seen(small_plan, monkeypatch, tmp_path):
    """After a launch has come back, a hung launch's sub-launches get FACTOR x the slowest launch (at least MIN),
    not the sweep's timeout: the victim is found in a few short timeouts."""
    from harness.run import engine
    (k0, c0), (k1, c1) = small_plan.work[:2]
    victim = c1[3]
    monkeypatch.setenv("TC_SIM_FAULTS", f"{k1.name}:#{simsweep.case_fingerprint(k1, victim)}:hang")
    monkeypatch.setattr(engine, "ISOLATION_TIMEOUT_FACTOR", 1.0)
    monkeypatch.setattr(engine, "ISOLATION_TIMEOUT_MIN_S", 1.5)
    fake_gpus.install(monkeypatch, ["sm_90a"])
    # one preparing process: k0 is launched, and has come back, before k1 (with two, k1's preparation could finish
    # first and hang before any launch was seen: CI, stop 24)
    summary, recs, _, _ = simsweep.sweep(Plan([(k0, c0[:4]), (k1, c1[:4])]), tmp_path / "r.jsonl", timeout=3.0,
                                         workers=1)
    iso = summary["timing"]["isolation_timeout_s"]
    assert 1.5 <= iso < 3.0
    assert recs[victim.id]["status"] == "timeout" and f"within {iso:g} s" in recs[victim.id]["error"]
    assert [r["status"] for i, r in recs.items() if i != victim.id] == ["pass"] * 7
    assert summary["wall_s"] < 3.0 + 3 * iso + 20  # the first launch's 3 s, then one short timeout per level


def test_a_workers_start_up_does_not_count_against_its_launchs_timeout():
    from harness.run.worker import GpuWorker
    from tests.simulated import slow_start_device
    w = GpuWorker(0, "tests.simulated.slow_start_device")
    try:
        assert w.run("none.cubin", "k", None, timeout=1.0) == {"echo": "k"}  # start-up 2 s, timeout 1 s
        assert slow_start_device.SLOW_START_S > 1.0
    finally:
        w.close()


def test_a_worker_that_cannot_start_records_errors_not_faults_and_exits_4(small_plan, monkeypatch, tmp_path):
    """A GPU worker whose start-up fails never takes a launch up: every case is `error` (the environment, exit 4),
    nothing is bisected, and no undefined-outcome control could be settled as caught by that 'fault'."""
    from harness import sweep
    from harness.enums import ExitCode
    fake_gpus.install(monkeypatch, ["sm_90a"])
    kernel, cases = _smallest(small_plan)
    cfg = sweep.SweepConfig(out_path=tmp_path / "r.jsonl", workers=2, backend="tests.simulated.broken_start_device")
    logs = []
    summary = sweep.execute(Plan([(kernel, cases)]), cfg, log=logs.append)
    _, recs, _ = results.load(tmp_path / "r.jsonl")
    assert {r["status"] for r in recs.values()} == {"error"} and len(recs) == len(cases)
    assert "before it took the launch up" in next(iter(recs.values()))["error"]
    assert not any("isolating" in m for m in logs) and sweep.exit_code(summary) == ExitCode.ENVIRONMENT


def test_resume_never_reruns_a_finished_case(small_plan, monkeypatch, tmp_path):
    log = tmp_path / "launches.jsonl"
    monkeypatch.setenv("TC_SIM_LOG", str(log))
    fake_gpus.install(monkeypatch, ["sm_90a"])
    out = tmp_path / "r.jsonl"
    first = Plan(small_plan.work[:1])
    simsweep.sweep(first, out)  # 'interrupted' after the first kernel
    _, recs, raw, _ = simsweep.sweep(small_plan, out, resume=True)
    ids = [r["id"] for r in raw if r.get("type") == "case"]
    assert sorted(ids) == sorted(c.id for _, cs in small_plan.work for c in cs)  # every case once
    launched = Counter(f for rec in read_log(log) for f in rec["fingerprints"])
    prints = {simsweep.case_fingerprint(k, c) for k, cs in small_plan.work for c in cs}
    assert set(launched) == prints and set(launched.values()) == {1}, launched.most_common(3)
    assert {r["status"] for r in recs.values()} == {"pass"}


def test_shards_partition_the_kernels_of_every_family():
    sel = plan.Selection(n_values=(64, 128))
    archs = {"wgmma": "sm_90a", "wgmma_sp": "sm_90a", "wgmma_seq": "sm_90a", "tcgen05": "sm_100a"}
    whole = plan.make(sel, archs)
    assert {str(k.family) for k, _ in whole.work} == set(archs)
    n = 3
    shards = [plan.make(sel, archs, shard=(i, n)) for i in range(n)]
    names = [k.name for s in shards for k, _ in s.work]
    assert len(names) == len(set(names))  # no overlap
    assert sorted(names) == sorted(k.name for k, _ in whole.work)  # nothing lost
    cases = [c.id for s in shards for _, cs in s.work for c in cs]
    assert sorted(cases) == sorted(c.id for _, cs in whole.work for c in cs)
    for s in shards:
        assert {str(k.family) for k, _ in s.work} == set(archs)


def test_two_simulated_gpus_both_get_launches(small_plan, monkeypatch, tmp_path):
    log = tmp_path / "launches.jsonl"
    monkeypatch.setenv("TC_SIM_LOG", str(log))
    fake_gpus.install(monkeypatch, ["sm_90a", "sm_90a"])
    summary, recs, _, _ = simsweep.sweep(small_plan, tmp_path / "r.jsonl")
    assert summary["gpus"] == [0, 1]
    assert {r["gpu"] for r in recs.values()} == {0, 1}
    assert {rec["device"] for rec in read_log(log)} == {0, 1}
    assert {r["status"] for r in recs.values()} == {"pass"}


def test_a_swizzle_disagreement_is_diagnosed_as_a_swizzle(monkeypatch, tmp_path):
    p = plan.make(plan.Selection(families=("wgmma",), kinds=("f16",), n_values=(32,), a_srcs=("RS",),
                                 dtypes=("f32",), controls=False, match="B:K/128B"), {"wgmma": "sm_90a"})
    simsweep.warm_wgmma_oracle(p)
    monkeypatch.setenv("TC_SIM_BUG", "swizzle")  # the simulated hardware swizzles 128B tiles like 64B
    fake_gpus.install(monkeypatch, ["sm_90a"])
    summary, recs, raw, _ = simsweep.sweep(p, tmp_path / "r.jsonl", diagnose=2)
    assert summary["fail"] == len(recs) > 0
    every = [r for r in raw if r.get("type") == "diagnosis"]
    assert every and summary["diagnosed"] == len(every)
    assert summary["timing"]["diagnose_s"] > 0  # the diagnosis's own wall time, apart from the engine's
    diags = [r for r in every if not r.get("probe")]  # the address probe's
    frags = [r for r in every if r.get("probe")]  # the fragment probes': a swizzle bug is no fragment's
    assert diags and {r["probe"] for r in frags} == {"accumulator", "a-registers"}
    assert all(r["status"] == "pass" for r in frags), [r["summary"] for r in frags]
    for d in diags:
        assert d["id"] in recs and d["operand"] == "B" and d["reads_as_model"] is False
        assert "swizzle" in d["summary"] and "64B" in d["summary"], d["summary"]


def test_two_planted_faults_and_the_inject_field_each_fault_only_their_case(small_plan, monkeypatch, tmp_path):
    import dataclasses
    kernel, cases = small_plan.work[1]
    cases = list(cases[:12])
    cases[9] = dataclasses.replace(cases[9], inject="misaligned")  # the kernel's own fault switch (params.inject)
    planted = [cases[2], cases[3]]  # neighbours: bisection must split them apart
    monkeypatch.setenv("TC_SIM_FAULTS", ",".join(f"{kernel.name}:#{simsweep.case_fingerprint(kernel, c)}:trap"
                                                 for c in planted))
    fake_gpus.install(monkeypatch, ["sm_90a"])
    _, recs, _, _ = simsweep.sweep(Plan([(kernel, cases)]), tmp_path / "r.jsonl")
    faulted = {i for i, r in recs.items() if r["status"] == "fault"}
    assert faulted == {cases[2].id, cases[3].id, cases[9].id}
    assert "misaligned" in recs[cases[9].id]["error"]
    assert all(r["status"] == "pass" for i, r in recs.items() if i not in faulted) and len(recs) == 12


def test_resume_after_a_kill_mid_record(small_plan, monkeypatch, tmp_path):
    """A run killed while writing a record (the writer's buffer reached the disk part way through a line)
    leaves a truncated last line; resuming must keep every whole record and run the rest."""
    fake_gpus.install(monkeypatch, ["sm_90a"])
    out = tmp_path / "r.jsonl"
    simsweep.sweep(Plan(small_plan.work[:1]), out)
    text = out.read_text()
    out.write_text(text + text.splitlines()[1][:57])  # a case record cut off part way: no newline
    _, recs, _, _ = simsweep.sweep(small_plan, out, resume=True)
    assert set(recs) == {c.id for _, cs in small_plan.work for c in cs}
