"""The GPU worker (harness/run/worker.py) holds the launch it runs and the next: answers come in the order sent, and a
launch queued behind one that faults runs once, on a fresh worker (tests/simulated/passthrough_device.py: a launch
holding a planted trap raises like a sticky CUDA error; any other returns its C registers). With a backend that reads
launch files ahead into staging slots (tests/simulated/file_writing_device.py, as harness.run.launch does), each
launch still gets its own inputs, and a file that cannot be read is its own launch's error."""
import dataclasses
import multiprocessing
import time
import types

import numpy as np
import pytest

from harness import plan
from harness.run import engine, worker
from harness.run.launch import load_outputs
from harness.contract import LaunchFailed
from harness.run.worker import GpuWorker

BACKEND = "tests.simulated.passthrough_device"
STAGED = "tests.simulated.file_writing_device"
RESERVING = "tests.simulated.reserving_device"


@pytest.fixture(scope="module")
def launches(tmp_path_factory):
    """(a launch of 3 cases, the same with a planted trap), saved to files."""
    kernel, cases = plan.make(plan.Selection(families=("wgmma",), kinds=("f16",), n_values=(8,), a_srcs=("SS",)),
                              cache=True).work[0]
    folder = tmp_path_factory.mktemp("launches")
    good, _ = engine.prepare(kernel, cases[:3])
    bad, _ = engine.prepare(kernel, [cases[0], dataclasses.replace(cases[1], inject="trap"), cases[2]])
    return kernel.name, good, good.save(str(folder / "good.launch.pkl")), bad.save(str(folder / "bad.launch.pkl"))


@pytest.fixture(scope="module")
def dying_launch(tmp_path_factory):
    """A launch whose worker dies under it (file_writing_device: a planted misaligned load), saved to a file."""
    kernel, cases = plan.make(plan.Selection(families=("wgmma",), kinds=("f16",), n_values=(8,), a_srcs=("SS",)),
                              cache=True).work[0]
    dies, _ = engine.prepare(kernel, [dataclasses.replace(cases[0], inject="misaligned")])
    return dies.save(str(tmp_path_factory.mktemp("dying") / "dies.launch.pkl"))


@pytest.fixture
def passthrough_worker():
    w = GpuWorker(0, BACKEND)
    yield w
    w.close()


@pytest.fixture
def staged_worker():
    w = GpuWorker(0, STAGED)
    yield w
    w.close()


def c_regs(inp):
    return np.asarray(inp.inputs["c_regs"], dtype=np.uint32)


def test_two_launches_are_held_at_once_and_answered_in_order(launches, passthrough_worker):
    name, good, good_path, _ = launches
    w = passthrough_worker
    w.submit("unused.cubin", name, good_path, 20.0)
    w.submit("unused.cubin", name, good.subset([2]), 20.0)
    assert w.full and w.held == worker.DEPTH == 2
    with pytest.raises(RuntimeError, match="already holds 2"):
        w.submit("unused.cubin", name, good_path, 20.0)
    assert (w.collect()["d_out"] == c_regs(good)).all()
    assert (w.collect()["d_out"] == c_regs(good)[2:]).all() and not w.busy


def test_a_launch_sent_after_the_one_before_was_answered_has_its_own_deadline(launches, passthrough_worker):
    name, good, good_path, _ = launches
    w = passthrough_worker
    w.submit("unused.cubin", name, good_path, 20.0)
    assert worker.wait_any([w]) is w and w.has_answer  # answered, not yet collected
    w.submit("unused.cubin", name, good.subset([1]), 20.0)
    assert (w.collect()["d_out"] == c_regs(good)).all()
    assert worker.wait_any([w]) is w  # the second, now the oldest held: waited for by its own deadline
    assert (w.collect()["d_out"] == c_regs(good)[1:2]).all()


def test_a_launch_behind_one_that_faults_runs_on_a_fresh_worker(launches, passthrough_worker):
    name, good, good_path, bad_path = launches
    w = passthrough_worker
    w.submit("unused.cubin", name, bad_path, 20.0)
    w.submit("unused.cubin", name, good_path, 20.0)
    with pytest.raises(LaunchFailed, match="unspecified launch failure") as e:
        w.collect()
    assert e.value.status == "fault"
    assert (w.collect()["d_out"] == c_regs(good)).all()


def test_a_worker_whose_launch_failed_ends_without_the_interpreters_ending(launches, tmp_path, monkeypatch):
    """A worker whose launch faulted leaves at once after answering: the interpreter's own ending (exit handlers,
    CuPy's module unloads, which in a faulted context print tracebacks on the sweep's terminal) is skipped. One told
    to finish ends normally, which the same marker shows. Spawned, as the command line's workers are
    (processes.one_shot_process): a fork server's children never run that ending. Driven through the worker's pipe,
    so that nothing kills it."""
    from harness.run import processes
    name, good, good_path, bad_path = launches
    marker = tmp_path / "ended"
    monkeypatch.setenv("TC_SIM_EXIT_MARKER", str(marker))
    monkeypatch.setattr(processes, "start_method", "spawn")
    ended = {}
    for launch, last in ((bad_path, None), (good_path, (None,))):
        proc, conn = worker._spawn(0, "tests.simulated.exit_marking_device")
        try:
            conn.send(("unused.cubin", name, launch, None))
            assert conn.recv()[0] == "started"
            ended[launch] = conn.recv()[0]
            for msg in last or ():
                conn.send(msg)
            proc.join(timeout=30)
            ended[launch] = (ended[launch], proc.exitcode, set(marker.read_text().split()) if marker.exists() else set())
        finally:
            proc.kill()
            proc.join()
            conn.close()
        if launch is good_path:
            assert ended[launch] == ("ok", 0, {str(proc.pid)})
    assert ended[bad_path] == ("error", 1, set())


def test_a_launch_sent_after_its_worker_died_waits_for_the_fault_before_it_then_runs(launches, passthrough_worker):
    name, good, good_path, bad_path = launches
    w = passthrough_worker
    w.submit("unused.cubin", name, bad_path, 20.0)  # the worker answers the fault, then exits
    deadline = time.monotonic() + 20
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not multiprocessing.active_children()
    # to a dead worker, behind a fault not yet read: a fresh worker sent it at once would answer it first, and
    # its answer read as the fault's launch's would pass that launch
    w.submit("unused.cubin", name, good_path, 20.0)
    with pytest.raises(LaunchFailed, match="unspecified launch failure"):
        w.collect()
    assert (w.collect()["d_out"] == c_regs(good)).all()



def test_launches_read_ahead_each_get_their_own_inputs(launches, tmp_path, staged_worker):
    name, good, good_path, _ = launches
    paths = []
    for i in range(3):  # three different launches: one read into a slot another still used would be answered wrong
        paths.append(good.subset([i]).save(str(tmp_path / f"l{i}.launch.pkl")))
    w = staged_worker
    answers = []
    w.submit("unused.cubin", name, paths[0], 20.0, out_path=str(tmp_path / "o0.out.pkl"))
    w.submit("unused.cubin", name, paths[1], 20.0, out_path=str(tmp_path / "o1.out.pkl"))
    answers.append(w.collect())
    w.submit("unused.cubin", name, paths[2], 20.0, out_path=str(tmp_path / "o2.out.pkl"))
    answers += [w.collect(), w.collect()]
    assert answers == [None, None, None]
    for i in range(3):
        assert (load_outputs(str(tmp_path / f"o{i}.out.pkl"))["d_out"] == c_regs(good)[i:i + 1]).all()


def test_a_backends_reserve_is_made_once_before_the_first_launch_and_launches_within_it_never_grow_it(launches,
                                                                                                      tmp_path):
    name, good, _, _ = launches
    w = GpuWorker(0, RESERVING)
    try:
        for i in range(4):  # through both input and both output stagings, twice
            path = good.subset([i % 3]).save(str(tmp_path / f"l{i}.launch.pkl"))
            w.submit("unused.cubin", name, path, 20.0, out_path=str(tmp_path / f"o{i}.out.pkl"))
            assert w.collect() is None  # not `error`: reserved first, and found as reserved
            assert (load_outputs(str(tmp_path / f"o{i}.out.pkl"))["d_out"] == c_regs(good)[i % 3:i % 3 + 1]).all()
    finally:
        w.close()


def test_a_fault_behind_a_launch_whose_outputs_are_still_being_written_is_answered_after_it(launches, tmp_path,
                                                                                            staged_worker):
    """The worker writes a launch's outputs' file while the next launch runs (worker.Answers): a fault in that next
    launch must not be answered before the launch being written, or the parent would take it for that one's."""
    name, good, good_path, bad_path = launches
    w = staged_worker
    w.submit("unused.cubin", name, good_path, 20.0, out_path=str(tmp_path / "good.out.pkl"))
    w.submit("unused.cubin", name, bad_path, 20.0, out_path=str(tmp_path / "bad.out.pkl"))
    assert w.collect() is None and (load_outputs(str(tmp_path / "good.out.pkl"))["d_out"] == c_regs(good)).all()
    with pytest.raises(LaunchFailed, match="unspecified launch failure"):
        w.collect()


def test_a_worker_dying_behind_a_launch_still_being_written_is_not_that_launchs_fault(launches, dying_launch, tmp_path,
                                                                                        staged_worker):
    """The worker dies in the next launch while the one before is still being written (its kernel ran): that one runs
    again on a fresh worker and is answered; the death is the next one's."""
    name, good, good_path, _ = launches
    w = staged_worker
    w.submit("unused.cubin", name, good_path, 20.0, out_path=str(tmp_path / "good.out.pkl"))
    w.submit("unused.cubin", name, dying_launch, 20.0, out_path=str(tmp_path / "dies.out.pkl"))
    assert w.collect() is None and (load_outputs(str(tmp_path / "good.out.pkl"))["d_out"] == c_regs(good)).all()
    with pytest.raises(LaunchFailed, match="died") as e:
        w.collect()
    assert e.value.status == "fault" and not w.busy


def test_an_output_staging_goes_to_another_launch_only_once_its_outputs_are_written(tmp_path):
    """worker.Answers in this process: with both output stagings still being written, the next launch waits for the
    older; each launch is answered `ok`, in turn, once its file is whole."""
    from tests.simulated.file_writing_device import WRITE_DELAY_S, SlowToWrite
    sent = []

    class Pipe:
        def send(self, msg):
            sent.append(msg)

    answers = worker.Answers(Pipe(), types.SimpleNamespace(OUTPUT_STAGINGS=(None, None)))
    slots = []
    for i in range(2):
        slots.append(answers.output_slot())
        answers.write_then_answer({"d_out": SlowToWrite(np.full(4, i, np.uint32))}, str(tmp_path / f"{i}.out.pkl"),
                                  slots[-1], 0.0)
    t = time.perf_counter()
    slots.append(answers.output_slot())
    waited = time.perf_counter() - t
    answers.release(slots[-1])
    answers.close()
    assert slots == [0, 1, 0] and waited > WRITE_DELAY_S / 2
    assert [m[0] for m in sent] == ["ok", "ok"]
    assert [int(load_outputs(str(tmp_path / f"{i}.out.pkl"))["d_out"][0]) for i in range(2)] == [0, 1]


def test_a_backend_that_copies_outputs_to_the_host_must_have_output_stagings():
    """Without them every launch would wait for a staging forever, and be recorded as a hang."""
    with pytest.raises(TypeError, match="OUTPUT_STAGINGS"):
        worker.Answers(None, types.SimpleNamespace(__name__="backend", run_to_host=lambda *a: None))
    with pytest.raises(TypeError, match="OUTPUT_STAGINGS"):  # refused in the sweep's process, before any worker starts
        GpuWorker(0, "tests.simulated.no_output_stagings_device")


def test_a_launch_file_that_cannot_be_read_is_its_own_launchs_error(launches, tmp_path, staged_worker):
    name, good, good_path, _ = launches
    w = staged_worker
    w.submit("unused.cubin", name, str(tmp_path / "gone.launch.pkl"), 20.0, out_path=str(tmp_path / "a.out.pkl"))
    w.submit("unused.cubin", name, good_path, 20.0, out_path=str(tmp_path / "b.out.pkl"))
    with pytest.raises(LaunchFailed, match="FileNotFoundError"):
        w.collect()
    assert w.collect() is None and (load_outputs(str(tmp_path / "b.out.pkl"))["d_out"] == c_regs(good)).all()


@pytest.mark.parametrize("handed_the_pool", [True, False], ids=["engine-worker", "other-worker"])
def test_a_fault_restart_takes_a_spare_started_ahead_only_where_asked(launches, handed_the_pool):
    """After a fault the launches behind it go to a spare started ahead (worker.SparePool), whose start is then no
    longer waited for; a worker not handed the pool (a bisection's) starts its own, and the spare waits for the
    engine's."""
    from harness.run.worker import SparePool
    name, good, good_path, bad_path = launches
    pool = SparePool()
    w = GpuWorker(0, BACKEND, spares=pool if handed_the_pool else None)
    try:
        w.start()  # as the engine's are, before any fault
        pool.prestart(0, BACKEND, 1)
        (spare,) = pool.ready(0, BACKEND)
        w.submit("unused.cubin", name, bad_path, 20.0)
        w.submit("unused.cubin", name, good_path, 20.0)
        with pytest.raises(LaunchFailed):
            w.collect()
        assert (w.collect()["d_out"] == c_regs(good)).all()
        assert (w._proc is spare) == handed_the_pool
        assert pool.ready(0, BACKEND) == ([] if handed_the_pool else [spare])
    finally:
        w.close()
        pool.close()
    assert not spare.is_alive() and pool.ready(0, BACKEND) == []
