"""The engine on the CPU, with a stand-in GPU backend (tests/simulated/passthrough_device.py) on two 'devices':
every case of every kernel comes back as one JSON-serialisable record, and a launch with a planted fault is
bisected to the faulting case while every other case still gets its result."""
import dataclasses
import json
import threading

from harness import plan
from harness.run.engine import Engine, Job

WORK = plan.make(plan.Selection(families=("wgmma",), kinds=("f16", "s8"), n_values=(8, 16), a_srcs=("SS",)), cache=True).work
BACKEND = "tests.simulated.passthrough_device"


def lines_read(batch):
    """The records of a batch the engine emitted, as the results file has them."""
    return [json.loads(line) for line in batch.text().splitlines()]


def _run(jobs, devices=(0, 1), backend=BACKEND):
    emitted, logs = [], []
    engine = Engine([(d, "sm_90a") for d in devices], workers=2, backend=backend)
    try:
        engine.begin(jobs)
        timing = engine.run({j.kernel.name: "unused.cubin" for j in jobs}, 20.0, lambda batch: emitted.extend(lines_read(batch)), logs.append)
    finally:
        engine.close()
    return emitted, logs, timing


def test_every_case_comes_back_once_from_both_devices():
    jobs = [Job(k, tuple(cs)) for k, cs in WORK]
    recs, logs, timing = _run(jobs)
    assert sorted(r["id"] for r in recs) == sorted(c.id for _, cs in WORK for c in cs)
    assert {r["gpu"] for r in recs} == {0, 1}
    assert all(r["status"] in ("pass", "fail") and r["family"] == "wgmma" and r["arch"] == "sm_90a" for r in recs)
    assert any(r["status"] == "fail" and r["first_mismatches"] for r in recs)  # C alone is not A*B + C
    json.dumps(recs)
    assert set(timing) >= {"prepare_wait_s", "gpu_worker_s"} and len(logs) == len(jobs)
    assert timing["prepare_s"] > 0 and timing["readback_s"] > 0 and timing["engine_cpu_s"] > 0


def test_a_backend_that_writes_the_outputs_file_itself_is_handed_the_file():
    jobs = [Job(k, tuple(cs)) for k, cs in WORK[:2]]
    mine, _, _ = _run(jobs, devices=(0,), backend="tests.simulated.file_writing_device")
    theirs, _, _ = _run(jobs, devices=(0,))
    strip = lambda recs: sorted((json.dumps({k: v for k, v in r.items() if k != "kernel_s"}, sort_keys=True)  # noqa: E731
                                 for r in recs))
    assert strip(mine) == strip(theirs) and len(mine) == sum(len(j.cases) for j in jobs)


def test_a_faulting_launch_is_bisected_to_its_case():
    kernel, cases = WORK[0]
    planted = dataclasses.replace(cases[3], inject="trap")
    jobs = [Job(kernel, tuple(cases[:3] + [planted] + cases[4:]))]
    recs, logs, _ = _run(jobs, devices=(0,))
    by_id = {r["id"]: r for r in recs}
    assert by_id[planted.id]["status"] == "fault" and "unspecified launch failure" in by_id[planted.id]["error"]
    assert all(r["status"] != "fault" for cid, r in by_id.items() if cid != planted.id)
    assert len(by_id) == len(cases) and any("isolating" in m for m in logs)


class HeldPool:
    """A stand-in for the engine's process pool whose preparations finish when the test says."""

    def __init__(self):
        self.futures = []

    def submit(self, fn, *args):
        from concurrent.futures import Future
        self.futures.append(Future())
        return self.futures[-1]

    def shutdown(self, cancel_futures=False):
        pass


def test_a_launch_whose_preparation_is_done_goes_before_an_earlier_one_still_preparing():
    jobs = [Job(k, tuple(cs[:1])) for k, cs in WORK[:3]]
    engine = Engine([], workers=1, backend=BACKEND)  # a look-ahead of 2 jobs
    real_pool, engine.pool = engine.pool, HeldPool()
    try:
        engine.begin(jobs)
        assert len(engine.pool.futures) == 2
        engine.pool.futures[1].set_result(("second", 0.5, False))  # the first is still being prepared
        # an engine that waits for the first job anyway fails here after 10 s, not hangs
        first = engine.pool.futures[0]
        watchdog = threading.Timer(10, lambda: first.done() or first.set_exception(
            AssertionError("the engine waited for the first job's preparation though the second's was done")))
        watchdog.start()
        try:
            assert engine.next_prepared() == (jobs[1], "second", 0.5, False)
        finally:
            watchdog.cancel()
        assert len(engine.pool.futures) == 3  # the third took the freed place in the window
        engine.pool.futures[0].set_result(("first", 0.25, False))
        engine.pool.futures[2].set_result(("third", 0.75, False))
        assert [engine.next_prepared()[0] for _ in range(2)] == [jobs[0], jobs[2]]  # launch order among the done
        assert not engine.preparing and not engine.queued
    finally:
        engine.close()
        real_pool.shutdown()


def preparations_submitted(engine, jobs, done: int) -> int:
    """How many preparations `engine` (its pool a HeldPool) has submitted once `done` of them have finished and it
    has been topped up (as the sweep does while its kernels compile), none launched."""
    engine.begin(jobs)
    for i in range(done):
        engine.pool.futures[i].set_result((f"prepared {i}", 0.1, False))
        engine.top_up()
    return len(engine.pool.futures)


def test_preparation_runs_ahead_of_the_launches_only_where_every_launch_is_kept(tmp_path, monkeypatch):
    """Where each prepared launch lies in the kept-launches folder until it is launched, preparation goes on without
    a launch (a cold sweep's, while its kernels compile), `ahead` of them at a time; where one would lie in the spool,
    at most `ahead` are prepared and not launched. Either way no more than `ahead` run at once."""
    from harness.run import launch_cache
    jobs = [Job(k, (c,)) for k, cs in WORK for c in cs[:3]]
    assert len(jobs) >= 8
    monkeypatch.setattr(launch_cache, "KEEP_FREE_BYTES", 0)  # room to keep, whatever this disk has
    kept = Engine([], workers=1, backend=BACKEND, keep_launches=tmp_path / "cache")  # a look-ahead of 2 jobs
    monkeypatch.setattr(launch_cache, "KEEP_FREE_BYTES", 1 << 62)  # none
    no_room = Engine([], workers=1, backend=BACKEND, keep_launches=tmp_path / "full")
    spooled = Engine([], workers=1, backend=BACKEND)
    engines = (kept, no_room, spooled)
    pools = [e.pool for e in engines]
    try:
        for e in engines:
            e.pool = HeldPool()
        assert kept.kept.writable and not no_room.kept.writable
        assert preparations_submitted(kept, jobs, done=5) == 7  # the 5 done and 2 running
        assert kept.waiting_limit is None and sum(not f.done() for f in kept.pool.futures) == 2
        assert preparations_submitted(no_room, jobs, done=2) == 2  # 2 prepared, waiting for their launches
        assert preparations_submitted(spooled, jobs, done=2) == 2
        # a launch taken frees its place in the window
        assert spooled.next_prepared()[0] == jobs[0] and len(spooled.pool.futures) == 3
    finally:
        for e, pool in zip(engines, pools):
            e.close()
            pool.shutdown()


def test_the_preparing_processes_yield_to_the_compile():
    import os
    from harness.run import engine as engine_module
    e = Engine([], workers=1, backend=BACKEND)
    try:
        assert e.pool.submit(os.nice, 0).result() == os.nice(0) + engine_module.PREPARE_NICENESS
    finally:
        e.close()
