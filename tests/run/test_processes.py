"""The harness's helper processes (harness/run/processes.py): the engine's and the compile's pools and the GPU
workers come from a fork server, so none is a fork of its caller; each has its caller's environment and working
folder as they are when it is started, not the fork server's."""
import os
from pathlib import Path

import pytest

from harness.run import cores, processes
from harness.run.worker import GpuWorker

VARIABLE = "TC_HARNESS_TEST_HELPER"
ROOT = Path(__file__).resolve().parents[2]


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


def test_helpers_start_every_process_even_where_one_is_idle_before_the_next_submission(monkeypatch):
    """A pool starts a process for a submission only while none is idle: where the first helper has answered before
    the next submission (a loaded machine: CI's two cores), that submission went to it and the pool stayed one short.
    The first submission answered before the next here, Helpers still starts them all."""
    import time
    made = processes.pool

    def first_answered_first(*a, **k):
        p = made(*a, **k)
        submit = p.submit

        def submit_and_wait(*sa, **sk):
            f = submit(*sa, **sk)
            if len(p._processes) == 1 and not getattr(p, "waited", False):
                p.waited = True
                f.result()
                time.sleep(0.2)  # the pool has counted its helper idle again
            return f
        p.submit = submit_and_wait
        return p
    monkeypatch.setattr(processes, "pool", first_answered_first)
    helpers = processes.Helpers(2)
    try:
        assert len(helpers.executor._processes) == 2
    finally:
        helpers.shutdown()


# The installed `tc-harness` script, as pip writes it: the harness (numpy with it) imported at its top, which a spawned
# helper runs again before its initializer. Each helper reports its threads: OpenBLAS starts one per core as it loads,
# unless the environment it loaded in said otherwise.
CONSOLE_SCRIPT = """\
import os, sys
from harness.cli import entry  # noqa: F401  (the script's own import: numpy loads with it)
from harness.run import cores, engine, processes


def threads():
    return len(os.listdir("/proc/self/task"))


if __name__ == "__main__":
    if sys.argv[1] == "one-shot":
        processes.one_shot_process()
    else:  # the control: helpers spawned, the thread counts left to Helpers' thread alone
        processes.start_method = "spawn"
    counts = []
    for started in ("while Helpers' thread has the counts set", "after it"):
        added = cores.set_one_blas_thread() if started.startswith("while") else []
        pool = processes.pool(1, engine.ready_for_jobs)
        pool.submit(int).result(timeout=120)  # its helper started now
        cores.unset(added)
        counts.append(pool.submit(threads).result(timeout=120))
        pool.shutdown()
    print(*counts)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or (os.cpu_count() or 1) < 2,
                    reason="counts a process's threads in /proc; BLAS starts no threads of its own on one core")
def test_the_command_lines_helpers_run_blas_on_one_thread_whenever_a_pool_starts_them(tmp_path):
    """A pool starts a helper for a submission only while none is idle, so some may start after Helpers' thread has
    unset the BLAS thread counts; a spawned helper of the `tc-harness` script loads numpy as it runs the script again,
    before its initializer. The command line's process (one_shot_process) keeps the counts set: a helper started late
    has the threads of one started while they were set. The control, the spawn method without one_shot_process,
    shows the late helper with a BLAS thread per core (what the command line's helpers had before)."""
    import subprocess
    import sys
    script = tmp_path / "tc-harness-like.py"
    script.write_text(CONSOLE_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in cores.BLAS_THREADS}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    counts = {}
    for how in ("one-shot", "control"):
        out = subprocess.run([sys.executable, str(script), how], capture_output=True, text=True, timeout=300, env=env)
        assert out.returncode == 0, out.stderr[-2000:]
        counts[how] = [int(x) for x in out.stdout.split()]
    assert counts["control"][1] > counts["control"][0], counts  # the test can see a BLAS thread per core
    assert counts["one-shot"][1] == counts["one-shot"][0] == counts["control"][0], counts


_LINGERING_CHILD = r"""
import multiprocessing, signal, sys, time
from harness.run import processes


def linger():  # a killed GPU worker whose context the driver is still tearing down: it ends, but not yet
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(60)


if __name__ == "__main__":
    child = multiprocessing.get_context("spawn").Process(target=linger)
    child.start()
    print(child.pid, flush=True)
    if sys.argv[1] == "killed":
        processes.killed(child)
    sys.argv[1:] = ["desc", "0x1"]
    from harness.cli import entry
    entry()
"""


@pytest.mark.parametrize("told", ["killed", "not-killed"])
def test_the_command_line_does_not_wait_for_a_child_it_killed(tmp_path, told):
    """The command line's exit waits for no child this process killed (processes.killed: stopped GPU workers, spares,
    an interrupted run's children), each of which may take a second to end after a context's teardown; a child it did
    not kill is let finish, as the interpreter's ordinary exit does (the child here ignores SIGTERM: its 60 s)."""
    import subprocess
    import sys
    import time
    script = tmp_path / "lingering.py"
    script.write_text(_LINGERING_CHILD)
    root = Path(__file__).resolve().parents[2]
    t = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(script), told], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(root)))
    pid = int(proc.stdout.readline())
    try:
        proc.wait(timeout=8)
        waited = False
    except subprocess.TimeoutExpired:
        waited = True
    finally:
        os.kill(pid, 9)
        proc.kill()
        proc.communicate()
    assert waited == (told == "not-killed"), (told, time.monotonic() - t)


def test_a_later_child_given_a_killed_ones_pid_is_still_waited_for(monkeypatch):
    """processes.killed marks the process, not its pid: the system gives a reaped child's pid to later children, and
    the exit must still let such a later child finish (unfinished_children)."""
    class Child:
        def __init__(self, pid):
            self.pid = pid
    old, later = Child(4242), Child(4242)
    processes.killed(old)
    monkeypatch.setattr(processes.multiprocessing, "active_children", lambda: [old, later])
    assert processes.unfinished_children() == [later]
