"""How the harness starts the processes that work for it: the engine's preparing pool, the compile pool and the GPU
workers.

They come from a fork server (multiprocessing's "forkserver"), one per process that asks for helpers (the command
line's own process, which starts its helpers once, spawns them: `one_shot_process`). It is a fresh
interpreter, not a fork of its caller, so a CUDA context the caller holds never reaches a helper. It imports the
helpers' modules once, and forks each helper from itself. Spawned instead, every helper started Python and imported
them on its own, 0.34-0.41 CPU seconds each: the README's test command starts some 255 helpers, on CI's 2 cores
(the CPU note 2026-11-27 helper-processes.txt in docs/performance.md).

A forked helper has the fork server's environment, taken when the server started. Each helper is therefore handed its
caller's environment as it is when the pool or the worker is made (`in_callers_environment`), as a spawned one had it.
sys.path and the working folder come with every helper as they did (multiprocessing's preparation data)."""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
import weakref
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import forkserver

from harness.run import cores

# what the helpers run: the fork server imports these (and numpy with them) once, before it forks any helper
PRELOAD = ("harness.run.engine", "harness.run.compile", "harness.run.sass", "harness.run.worker")
# how helpers start: "forkserver", or "spawn" in a process that starts its helpers once (one_shot_process)
start_method = "forkserver"


def one_shot_process() -> None:
    """This process starts its helpers once, together (the command line's: a sweep's engine and compile pool): each
    is spawned, as before the fork server. There its start gained nothing, and a warm default sweep on an H100 node
    took 2.98 and 3.15 s against 2.91 and 2.73 s spawned (bench21 in docs/performance.md): the first helper
    waits for the server's imports, which spawned helpers make side by side.

    Every process it starts runs BLAS on one thread for as long as it runs: the thread counts stay in its environment
    (cores.set_one_blas_thread, never unset; a count the user set is theirs). A spawned helper loads numpy, whose BLAS
    takes its thread count from the environment once, before its initializer runs: as it unpickles its first step (the
    engine's), or as it runs the command's script again (the installed `tc-harness`, which imports the harness at its
    top). And a pool starts a helper for a submission only while none is idle: where helpers come up faster than they
    are started, Helpers' thread starts a few and the sweep's first submissions the rest, after that thread has ended.
    With the counts in the environment for that thread only, such helpers ran BLAS on a thread per core
    (the CPU note 2026-11-27 blas-threads.txt in docs/performance.md)."""
    global start_method
    start_method = "spawn"
    cores.set_one_blas_thread()


def context():
    """The multiprocessing context that starts helpers (its fork server running, where it is the fork server)."""
    if start_method == "spawn":
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    # BLAS takes its thread count from the environment when numpy loads, which happens in the fork server: one
    # thread for each helper, as each spawned helper had
    with cores.one_blas_thread_per_process(), deaf_to_interrupts():  # the server and so its helpers
        forkserver.ensure_running()
    return ctx


class Helpers:
    """A pool of `workers` helpers (`pool`) whose processes are started in a thread of its own: each start took some
    27 ms of the starting thread (0.43 s for sixteen on an H100 node, before the sweep's compile could begin), and the
    caller goes on meanwhile. Every helper runs BLAS on one thread: this process's environment has the thread counts
    until the thread has started them all (and, in the command line's process, for as long as it runs:
    one_shot_process, where a pool may start a helper after that thread has ended)."""

    def __init__(self, workers: int, then=None, *args):
        self.workers = workers
        self._failed: BaseException | None = None  # what stopped a process from starting, for `executor` to raise
        added = cores.set_one_blas_thread()
        try:
            self._pool = pool(workers, then, *args)
            self._starting = threading.Thread(target=self._start_all, args=(added,), name="helpers-start",
                                              daemon=True)
            self._starting.start()
        except BaseException:
            cores.unset(added)
            raise

    def _start_all(self, added: list[str]) -> None:
        try:
            # a pool starts a process for a submission only while none is idle: one that has already answered takes
            # the next (a loaded machine: the pool stayed a process short). Each start-up task keeps its process busy
            # a moment, and submissions go on until the pool counts them all (bounded: a pool without the count)
            for _ in range(8 * self.workers):
                if len(getattr(self._pool, "_processes", None) or ()) >= self.workers:
                    break
                self._pool.submit(time.sleep, 0.01)
        except BaseException as e:  # raised where the pool is asked for, not lost in this thread
            self._failed = e
        finally:
            cores.unset(added)

    @property
    def executor(self) -> ProcessPoolExecutor:
        """The pool, every process of it started; what stopped one from starting (an OSError: no more processes),
        raised here."""
        self._starting.join()
        if self._failed is not None:
            raise self._failed
        return self._pool

    def shutdown(self, cancel_futures: bool = True) -> None:
        self._starting.join()
        self._pool.shutdown(cancel_futures=cancel_futures)

    def kill(self) -> None:
        """An interrupt: every process of the pool killed, those started after the signal's own kill too (a graceful
        shutdown waited for a helper still importing to read its stop: 1.5 s of an interrupted sweep's exit, found by
        tests/test_fuzz_environment.py), and the pool shut down without waiting."""
        self._starting.join()
        for p in list((getattr(self._pool, "_processes", None) or {}).values()):
            try:
                p.kill()
            except (OSError, ValueError, AttributeError):
                pass
        self._pool.shutdown(wait=False, cancel_futures=True)


class _Pool(ProcessPoolExecutor):
    """A ProcessPoolExecutor whose processes start deaf to Ctrl-C (`deaf_to_interrupts`): the pool starts one as a
    submission finds none idle, from whichever thread submits."""

    def _spawn_process(self):
        with deaf_to_interrupts(), whole():
            super()._spawn_process()


def pool(workers: int, then=None, *args) -> ProcessPoolExecutor:
    """A pool of `workers` helpers, each of which starts in its caller's environment of now and then runs
    `then(*args)` (the harness's pools: the engine's, the compile's)."""
    return _Pool(max_workers=workers, mp_context=context(), initializer=in_callers_environment,
                 initargs=(dict(os.environ), then, *args))


# ---------------------------------------------------------------------------------------------------- interrupts
#
# Ctrl-C reaches every process of the terminal's foreground group: the helpers and GPU workers too, each of which
# printed its own KeyboardInterrupt traceback (44 lines), and the sweep then waited for the compile they were running
# (7-10 s). Now a helper ignores SIGINT from its first instruction (started with SIGINT blocked, the mask a child
# inherits, then ignored in `in_callers_environment`), and the command line's process (`on_signals`) kills its own
# children the moment SIGINT or SIGTERM arrives and raises Interrupted, which the sweep turns into a results file that
# says it was interrupted, and the command line into exit 128 + the signal's number (130, 143), in one line.

class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM reached the command line's process (`signum`); a KeyboardInterrupt, so that every cleanup
    that handles Ctrl-C handles SIGTERM alike."""

    def __init__(self, signum: int = signal.SIGINT):
        self.signum = int(signum)
        super().__init__(signal.Signals(self.signum).name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


@contextlib.contextmanager
def deaf_to_interrupts():
    """SIGINT blocked in this thread while processes start from it: a child inherits the mask (a fork keeps it, and so
    does the exec of a spawned interpreter), so that a Ctrl-C before its first instruction of ours cannot raise in
    it. The signal still reaches this process, through a thread that does not block it (the main thread)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    # multiprocessing's resource tracker, started by the first process started, unblocks SIGINT after starting
    # itself (it does not restore the mask): started first, it leaves the mask alone
    from multiprocessing import resource_tracker
    try:
        resource_tracker.ensure_running()
    except Exception:  # noqa: BLE001 (a platform without it: nothing to unblock)
        pass
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def ignore_interrupts() -> None:
    """A helper's or GPU worker's first step: Ctrl-C is its parent's to handle (which kills it); SIGINT ignored and
    unblocked. SIGTERM and SIGKILL still end it."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a worker forked from the command line has its handler
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    except (ValueError, OSError):  # not the main thread of the process: nothing to change
        pass


_signals = {"count": 0, "deferred": 0, "pending": None}
# the children this process killed: nothing of theirs is left to finish. The process objects, not their pids, which
# the system gives again to later children once these have been reaped
_killed: "weakref.WeakSet" = weakref.WeakSet()


def killed(proc) -> None:
    """`proc`, a child, was killed (a GPU worker stopped, a spare no longer wanted): this process's exit need not
    wait for it to end (unfinished_children). A process that held a CUDA context ends only once the driver has torn it
    down: about a second on an H100 node for one whose launch faulted."""
    _killed.add(proc)


def unfinished_children() -> list:
    """The children still alive that were not killed: what this process's exit must let finish (the command line's
    `entry` then takes the interpreter's ordinary exit, which joins them)."""
    return [c for c in multiprocessing.active_children() if c not in _killed]


def kill_children() -> None:
    """Kill every process this one started (helpers, GPU workers, a disassembler), at once: what they were doing is
    lost (a cubin reaches the cache whole or not at all: compile._store; a GPU context goes with its process). Those
    multiprocessing knows, and every other child the kernel lists (/proc: one a thread was starting as the signal
    came, not yet known to multiprocessing, which would otherwise outlive this process and print its own traceback),
    but multiprocessing's resource tracker, which removes their semaphores once this process is gone."""
    known = multiprocessing.active_children()
    pids = {p.pid for p in known if p.pid}
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as fh:
                pids.update(int(x) for x in fh.read().split())
    except (OSError, ValueError):  # no /proc, or a kernel without the children lists: multiprocessing's own
        pass
    from multiprocessing import resource_tracker
    pids.discard(getattr(resource_tracker._resource_tracker, "_pid", None))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    _killed.update(known)  # the others are no children of multiprocessing's: its exit does not wait for them


def _on_signal(signum, frame) -> None:
    _signals["count"] += 1
    kill_children()
    if _signals["deferred"]:  # a record being written: raised as the writing ends (`whole`)
        _signals["pending"] = signum
        return
    if _signals["count"] > 1:  # a second signal while the first one's cleanup runs: out now (the results file is
        os._exit(128 + signum)  # whole up to its last line: no record is being written)
    raise Interrupted(signum)


def quiet_resource_tracker() -> None:
    """Start multiprocessing's resource tracker now, told to keep its warning that it cleaned up after this process to
    itself. An interrupted sweep leaves its pools' semaphores to it (their processes killed, the pools not joined, the
    process ended with os._exit): it removes them, as it is there to, and said so in a warning of five lines on the
    command's stderr after the command's own line. The command line's process calls this before it starts any
    helper (the tracker starts with the first)."""
    from multiprocessing import resource_tracker
    saved = os.environ.get("PYTHONWARNINGS")
    os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [saved, "ignore:resource_tracker:UserWarning"]))
    try:
        resource_tracker.ensure_running()
    except Exception:  # noqa: BLE001 (no tracker on this platform: nothing to quiet)
        pass
    finally:
        if saved is None:
            del os.environ["PYTHONWARNINGS"]
        else:
            os.environ["PYTHONWARNINGS"] = saved


def on_signals() -> None:
    """In the command line's own process: SIGINT and SIGTERM kill its children and raise Interrupted."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _on_signal)


@contextlib.contextmanager
def whole():
    """A step of the main thread an interrupt must not cut in two (a batch of records written to the results file, its
    summary, a process handed its start): a signal that arrives meanwhile raises Interrupted once it is done. In
    another thread, nothing to defer: the signal raises in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _signals["deferred"] += 1
    try:
        yield
    finally:
        _signals["deferred"] -= 1
        pending = _signals["pending"]
        if pending is not None and not _signals["deferred"]:
            _signals["pending"] = None
            raise Interrupted(pending)


def in_callers_environment(environ: dict, then=None, *args):
    """A helper's first step: Ctrl-C ignored (its parent's to handle), its caller's environment (`environ`, taken
    where the pool or the worker was made), then `then(*args)`."""
    ignore_interrupts()
    if os.environ != environ:
        os.environ.clear()
        os.environ.update(environ)
    return then(*args) if then is not None else None


def stop_fork_server() -> None:
    """Stop this process's fork server, if it started one, and wait for it: a process about to end calls this once
    its helpers are done. The server reaps each helper it forked, so waited for, it hands their CPU time on to this
    process's, as the helpers' own did when they were spawned children of it; left to end on its own, it would be
    nobody's child by then, and the time of every helper it forked would count for no one (benchmarks/ count it)."""
    server = getattr(forkserver, "_forkserver", None)
    stop = getattr(server, "_stop", None)  # multiprocessing's own (3.11-3.13): closes the server's pipe, waits for it
    if stop is not None and getattr(server, "_forkserver_pid", None) is not None:
        stop()
