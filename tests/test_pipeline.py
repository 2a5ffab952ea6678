"""The engine on the CPU, with a stand-in GPU backend (tests/simulated/passthrough_device.py) on two 'devices':
every case of every kernel comes back as one JSON-serialisable record, and a launch with a planted fault is
bisected to the faulting case while every other case still gets its result."""
import dataclasses
import json
import threading

from harness import plan
from harness.run.engine import Engine, Job, Spooled

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
        second = prepared("second", kept=False)
        engine.pool.futures[1].set_result(second)  # the first is still being prepared
        # an engine that waits for the first job anyway fails here after 10 s, not hangs
        first = engine.pool.futures[0]
        watchdog = threading.Timer(10, lambda: first.done() or first.set_exception(
            AssertionError("the engine waited for the first job's preparation though the second's was done")))
        watchdog.start()
        try:
            assert engine.next_prepared() == (jobs[1], *second)
        finally:
            watchdog.cancel()
        assert len(engine.pool.futures) == 3  # the third took the freed place in the window
        engine.pool.futures[0].set_result(prepared("first", kept=False))
        engine.pool.futures[2].set_result(prepared("third", kept=False))
        assert [engine.next_prepared()[0] for _ in range(2)] == [jobs[0], jobs[2]]  # launch order among the done
        assert not engine.preparing and not engine.queued
    finally:
        engine.close()
        real_pool.shutdown()


def prepared(name: str, kept: bool):
    """What a preparation returns (engine.prepare_job): its files, kept or in the spool; its seconds; not reused."""
    return Spooled(f"{name}.launch", f"{name}.exp", f"{name}.out", kept), 0.1, False


def test_preparation_runs_ahead_of_the_launches_where_they_are_kept_and_the_spool_holds_no_more_than_ahead():
    """A kept launch waits for its launch in the kept-launches folder on disk: preparation goes on past any number of
    them (a cold sweep's, while its kernels compile), `ahead` at a time. A launch prepared into the spool counts
    against `ahead` until it is launched: where none is kept, or keeping stops (a disk that fills), at most `ahead`
    wait there, as before preparation ran ahead."""
    jobs = [Job(k, (c,)) for k, cs in WORK for c in cs[:3]]
    assert len(jobs) >= 10
    engine = Engine([], workers=1, backend=BACKEND)  # a look-ahead of 2 jobs
    real_pool, engine.pool = engine.pool, HeldPool()
    try:
        engine.begin(jobs)
        futures = engine.pool.futures
        for i in range(5):  # kept, one after another: each frees its place
            futures[i].set_result(prepared(f"k{i}", kept=True))
            engine.top_up()
        assert len(futures) == 7 and sum(not f.done() for f in futures) == 2  # 5 waiting on disk, 2 running
        futures[5].set_result(prepared("s5", kept=False))  # the disk refused it: it waits in the spool
        engine.top_up()
        assert len(futures) == 7  # one running and one in the spool fill the window
        futures[6].set_result(prepared("s6", kept=False))
        engine.top_up()
        assert len(futures) == 7  # two in the spool: nothing more until a launch takes one
        taken = [engine.next_prepared()[1] for _ in range(5)]  # the kept ones first, in launch order
        assert [s.launch for s in taken] == [f"k{i}.launch" for i in range(5)] and len(futures) == 7
        assert engine.next_prepared()[1].launch == "s5.launch" and len(futures) == 8  # a place in the spool freed
        assert futures[7].cancel()  # as the pool's shutdown cancels one: it holds its place, and counting it raises not
        engine.top_up()
        assert len(futures) == 8
    finally:
        engine.close()
        real_pool.shutdown()


def test_the_preparing_processes_yield_to_the_compile():
    import os
    from harness.run import engine as engine_module
    e = Engine([], workers=1, backend=BACKEND)
    try:
        # niceness stops at 19 (a test session already niced past 9 sees its pool at 19)
        assert e.pool.submit(os.nice, 0).result() == min(19, os.nice(0) + engine_module.PREPARE_NICENESS)
    finally:
        e.close()
