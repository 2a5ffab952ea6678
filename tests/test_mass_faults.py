"""Mass faults: a sweep in which every launch faults ends in bounded time with every case accounted for.

The backend is a stand-in on which every launch faults (tests/simulated/faulting_device.py) on three fake
devices. Bisection of each faulting launch is bounded per kernel (widespread faults stop it early) and over
the whole sweep (IsolationBudget.total): the launches are counted, the wall time is bounded, and every case has
exactly one record, `fault`, saying whether it was launched alone and if not why."""
import json
import time

import pytest

from harness import plan
from harness.run.engine import Engine, IsolationBudget, Job

pytestmark = pytest.mark.spread  # no module-scoped fixture: under pytest -n, each test on any free worker

BACKEND = "tests.simulated.faulting_device"
WORK = plan.make(plan.Selection(families=("wgmma",), kinds=("f16", "s8", "tf32"), n_values=(8, 16),
                                a_srcs=("SS",)), cache=True).work


def lines_read(batch):
    """The records of a batch the engine emitted, as the results file has them."""
    return [json.loads(line) for line in batch.text().splitlines()]


def test_every_launch_faults_bounded_and_every_case_accounted_for(tmp_path, monkeypatch):
    log = tmp_path / "launches.txt"
    monkeypatch.setenv("TC_SIM_LAUNCH_LOG", str(log))
    jobs = [Job(k, tuple(cs)) for k, cs in WORK]
    ncases = sum(len(cs) for _, cs in WORK)
    assert len(jobs) >= 6 and ncases >= 100
    total = 10
    emitted, logs = [], []
    t = time.time()
    engine = Engine([(0, "sm_90a"), (1, "sm_90a"), (2, "sm_90a")], workers=2, backend=BACKEND,
                    isolation=IsolationBudget(total=total, per_kernel=24, widespread=2))
    try:
        engine.begin(jobs)
        timing = engine.run({j.kernel.name: "unused.cubin" for j in jobs}, 20.0, lambda batch: emitted.extend(lines_read(batch)), logs.append)
    finally:
        engine.close()
    wall = time.time() - t
    launches = log.read_text().splitlines()
    # one launch per kernel, then at most `total` failed isolation launches over the whole sweep
    assert len(launches) <= len(jobs) + total, launches
    assert timing["isolation_failed_launches"] <= total
    assert wall < 120, wall
    ids = [r["id"] for r in emitted]
    assert sorted(ids) == sorted(c.id for _, cs in WORK for c in cs)  # every case once
    assert {r["status"] for r in emitted} == {"fault"}
    alone = [r for r in emitted if r.get("isolated") is not False]
    not_alone = [r for r in emitted if r.get("isolated") is False]
    assert alone and not_alone and len(alone) <= total
    assert all("illegal instruction" in r["error"] for r in emitted)
    assert any("widespread" in r["error"] for r in not_alone)
    assert any("isolation budget" in r["error"] for r in not_alone)  # later kernels: nothing left to bisect with


def test_two_workers_on_one_gpu_share_its_launches_and_a_fault_in_one_is_isolated(tmp_path, monkeypatch):
    """The sweep command's engine on one GPU has two GPU workers (engine.WORKERS_ON_ONE_GPU): launches go to both
    processes, a launch that faults in one is bisected to its planted case, and every case has one record
    (passthrough device, one trap planted in the last launch). The bounds on bisection do not cost a genuine single
    fault its isolation."""
    import dataclasses

    from harness.run.engine import WORKERS_ON_ONE_GPU
    assert WORKERS_ON_ONE_GPU == 2
    log = tmp_path / "launches.txt"
    monkeypatch.setenv("TC_SIM_LAUNCH_LOG", str(log))
    work = [(k, tuple(cs)) for k, cs in WORK]
    kernel, cases = work[-1]
    planted = dataclasses.replace(cases[3], inject="trap")
    work[-1] = (kernel, cases[:3] + (planted,) + cases[4:])
    jobs = [Job(k, cs) for k, cs in work]
    emitted = []
    engine = Engine([(0, "sm_90a")], workers=2, backend="tests.simulated.passthrough_device",
                    isolation=IsolationBudget(total=10, per_kernel=24, widespread=2), workers_on_one_gpu=2)
    try:
        assert [w.device for w in engine.gpu_workers] == [0, 0]
        engine.begin(jobs)
        engine.run({j.kernel.name: "unused.cubin" for j in jobs}, 20.0, lambda batch: emitted.extend(lines_read(batch)),
                   lambda m: None)
    finally:
        engine.close()
    # the launches of the kernels before the trapped one ran on the two workers the engine started (a launch goes to
    # the worker holding fewest: the second job to the second worker, however late it starts)
    launches = [line.split() for line in log.read_text().splitlines()]
    assert len({pid for pid, name, _ in launches if name != kernel.name}) == 2, launches
    by_id = {r["id"]: r for r in emitted}
    assert len(emitted) == len(by_id) == sum(len(cs) for _, cs in work)
    assert by_id[planted.id]["status"] == "fault" and by_id[planted.id].get("isolated") is not False
    assert all(r["status"] != "fault" for i, r in by_id.items() if i != planted.id)
    assert {r["gpu"] for r in emitted} == {0}


def test_the_benchmarks_planted_fault_points_every_cta_past_its_image_buffer():
    """benchmarks/fault_everywhere.py (for benchmarks/bench_faults.py on a GPU): its plant, on the CPU."""
    import numpy as np

    from benchmarks.fault_everywhere import FAR, plant
    from harness.run.engine import prepare
    kernel, cases = WORK[0]
    inp, _ = prepare(kernel, cases[:3])
    before = inp.params.copy()
    planted = plant(inp)
    assert (planted.params["image_offset"] == FAR).all() and FAR > planted.images.size + (1 << 30)
    assert (planted.params["inject"] != 0).all()
    assert np.array_equal(planted.params["image_bytes"], before["image_bytes"])
    assert (before["image_offset"] + before["image_bytes"] <= inp.images.size).all()
