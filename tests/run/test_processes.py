"""The harness's helper processes (harness/run/processes.py): the engine's and the compile's pools and the GPU
workers come from a fork server, so none is a fork of its caller; each has its caller's environment and working
folder as they are when it is started, not the fork server's."""
import os

import pytest

from harness.run import cores, processes
from harness.run.worker import GpuWorker

VARIABLE = "TC_HARNESS_TEST_HELPER"


def what_a_helper_sees() -> dict:  # run in a pool's helper
    from harness.run import processes as in_helper
    return {"variable": os.getenv(VARIABLE), "home": os.getenv("HOME"), "cwd": os.getcwd(), "parent": os.getppid(),
            "mark": getattr(in_helper, "CALLERS_MARK", None)}


@pytest.fixture
def changed_since_the_server_started(monkeypatch, tmp_path):
    """The fork server running with this process's environment; then a variable set, one dropped, the folder moved
    and a module changed in this process only."""
    processes.context()
    monkeypatch.setenv(VARIABLE, "set after the fork server started")
    monkeypatch.setenv("HOME", str(tmp_path))  # the server's HOME is another
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(processes, "CALLERS_MARK", "in the caller only", raising=False)
    return {"variable": "set after the fork server started", "home": str(tmp_path), "cwd": str(tmp_path)}


def test_a_pools_helper_has_its_callers_environment_and_folder_and_is_not_its_fork(changed_since_the_server_started):
    with processes.pool(1) as helpers:
        seen = helpers.submit(what_a_helper_sees).result(timeout=60)
    assert {k: seen[k] for k in ("variable", "home", "cwd")} == changed_since_the_server_started
    assert seen["mark"] is None  # not a fork of this process: a module changed here is as imported there
    assert seen["parent"] != os.getpid()  # the fork server's child, not this process's


def test_a_gpu_worker_has_its_callers_environment_and_folder(changed_since_the_server_started):
    w = GpuWorker(0, "tests.simulated.environment_device")
    try:
        seen = w.run("none.cubin", "k", None, timeout=60)
    finally:
        w.close()
    assert {k: seen[k] for k in ("variable", "home", "cwd")} == changed_since_the_server_started
    assert seen["parent"] != os.getpid()


def test_an_engines_preparing_processes_have_its_callers_environment(changed_since_the_server_started):
    from harness.run.engine import Engine
    eng = Engine([(0, "sm_90a")], workers=1, backend="tests.simulated.environment_device")
    try:
        seen = eng.pool.submit(what_a_helper_sees).result(timeout=60)
    finally:
        eng.close()
    assert {k: seen[k] for k in ("variable", "home", "cwd")} == changed_since_the_server_started
    assert seen["mark"] is None and seen["parent"] != os.getpid()


def burn_cpu(seconds: float) -> None:  # run in a pool's helper
    import time
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_stopped_fork_server_hands_its_helpers_cpu_time_to_its_caller():
    """As a spawned helper's CPU time counted in its caller's once it ended, a forked one's does once the fork server
    that reaped it is stopped and waited for (the command line and the test session do so before they end)."""
    import resource

    def children_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime
    before = children_cpu()
    with processes.pool(1) as helpers:
        helpers.submit(burn_cpu, 0.5).result(timeout=60)
    processes.stop_fork_server()
    assert children_cpu() - before >= 0.45


def test_a_one_shot_process_spawns_its_helpers():
    """The command line's own process (cli.entry) starts its helpers once: each is spawned, its own child, as before
    the fork server (a warm sweep waited for the server's imports)."""
    import subprocess
    import sys
    code = ("import os\n"
            "from harness.run import processes\n"
            "processes.one_shot_process()\n"
            "with processes.pool(1) as helpers:\n"
            "    print(helpers.submit(os.getppid).result(timeout=60) == os.getpid())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["True"], out.stderr[-2000:]


def test_helpers_start_in_a_thread_and_a_start_that_fails_is_raised_where_the_pool_is_asked_for(monkeypatch):
    """processes.Helpers: every process started (the pool answers at once), the BLAS thread counts gone from this
    process's environment once they have; a process that cannot be started is the caller's error, from `executor`,
    not a traceback of the starting thread's and a pool that breaks later."""
    for v in cores.BLAS_THREADS:
        monkeypatch.delenv(v, raising=False)
    helpers = processes.Helpers(2)
    try:
        assert len(helpers.executor._processes) == 2 and helpers.executor.submit(os.getpid).result() != os.getpid()
    finally:
        helpers.shutdown()
    assert all(os.getenv(v) is None for v in cores.BLAS_THREADS)

    def no_more_processes(self, *a, **k):
        raise OSError("no more processes")
    monkeypatch.setattr(processes.ProcessPoolExecutor, "submit", no_more_processes)
    failing = processes.Helpers(2)
    with pytest.raises(OSError, match="no more processes"):
        failing.executor
    failing.shutdown()  # still shuts down what there is
    assert all(os.getenv(v) is None for v in cores.BLAS_THREADS)


def threads_of_this_process() -> int:  # run in a pool's helper
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or (os.cpu_count() or 1) < 2,
                    reason="counts a process's threads in /proc; BLAS starts no threads of its own on one core")
def test_a_helper_started_after_the_blas_thread_counts_left_runs_blas_on_one_thread(monkeypatch):
    """A pool starts a helper for a submission only while none is idle: where helpers come up faster than they are
    started, Helpers' thread starts a few and later submissions the rest, after the BLAS thread counts have left this
    process's environment. Such a helper must still load numpy (the engine's first step, ready_for_jobs) with one
    BLAS thread, as one started while they were there: as many threads as it (OpenBLAS starts a thread per core as it
    loads). Before ImportedWhenCalled it had one more per core (5 of 8 helpers, reproduced with slow starts)."""
    from harness.run import engine
    for v in cores.BLAS_THREADS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setattr(processes, "start_method", "spawn")  # the command line's; the fork server's helpers are forks
    counts = {}
    for when in ("started with them", "started after them"):
        added = cores.set_one_blas_thread()
        try:
            pool = processes.pool(1, engine.ready_for_jobs)  # the environment it hands its helpers: with them
            if when == "started with them":
                pool.submit(int).result(timeout=120)  # its helper started now
        finally:
            cores.unset(added)
        try:
            counts[when] = pool.submit(threads_of_this_process).result(timeout=120)  # the late one started here
        finally:
            pool.shutdown()
    assert counts["started after them"] == counts["started with them"], counts


def test_a_helpers_first_step_is_named_and_imported_where_it_runs():
    """ImportedWhenCalled: a module-level function, called by name; a nested one or one of __main__ is refused."""
    first = processes.ImportedWhenCalled.of(os.path.join)
    assert (first.module, first.name) == (os.path.join.__module__, "join") and first("a", "b") == os.path.join("a", "b")

    def nested():
        pass
    with pytest.raises(ValueError, match="not a module-level function"):
        processes.ImportedWhenCalled.of(nested)
