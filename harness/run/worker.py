"""A GPU worker process: launches run there, so a sticky CUDA error or a hang costs a worker, not the sweep.

The parent sends (module path: a cubin, or PTX for the driver's JIT; kernel name; LaunchInput or the file it is
saved in; where the outputs go, or None); the worker answers with the kernel's outputs (or writes them to that file:
from the backend's output stagings with `run_to_host` where it has one, behind the next launch, else `run` then
save_outputs) and its timings, or the error text (a module the driver
cannot load answers `load-error`, which the parent raises as LaunchFailed('compile-error')). After any error the parent replaces the worker: a CUDA context that saw an
illegal instruction, a misaligned address or an out-of-range access is unusable. A launch that does not
answer within the timeout is a hang: the worker is killed (which tears down its context and the kernel with
it). One worker drives one GPU; `submit` and `collect` let the parent keep every GPU busy while it diffs.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import queue
import sys
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass

from harness.contract import Kernel, LaunchFailed
from harness.enums import Status
from harness.run import cores, processes


def _serve(conn, device: int, backend: str) -> None:
    import importlib

    processes.ignore_interrupts()  # Ctrl-C is the sweep's to handle: it kills this worker (processes.on_signals)
    launch = importlib.import_module(backend)
    launch.use_device(device)
    if hasattr(launch, "reserve_for_launches"):  # memory held before the first launch, not grown launch by launch
        launch.reserve_for_launches()
    jobs: queue.Queue = queue.Queue()
    slots = threading.Semaphore(len(getattr(launch, "STAGINGS", ())))
    answers = Answers(conn, launch)
    threading.Thread(target=_receive, args=(conn, device, launch, jobs, slots), daemon=True).start()
    failed = False
    try:
        while True:
            item = jobs.get()
            if item is None:
                return
            job, staged, slot = item
            try:
                if not _launch(answers, launch, job, staged):
                    failed = True
                    return
            finally:
                if slot is not None:
                    slots.release()
    finally:
        answers.close()  # the outputs still being written are written and answered before the worker ends
        if failed:
            # out at once: the interpreter's own ending would unload the modules of a context that faulted, each
            # unload failing with a traceback on the sweep's terminal (CuPy's, the 'exception ignored' kind)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os._exit(1)


def check_backend(launch) -> None:
    """TypeError for a backend module the worker cannot use: one with `run_to_host` but no OUTPUT_STAGINGS (every
    launch would wait for a staging forever, and be recorded as a hang)."""
    if hasattr(launch, "run_to_host") and not getattr(launch, "OUTPUT_STAGINGS", ()):
        raise TypeError(f"{launch.__name__} has run_to_host but no OUTPUT_STAGINGS to copy outputs into")


class Answers:
    """The worker's answers to the parent, in the order of its launches. A launch whose outputs the backend copies into
    one of its OUTPUT_STAGINGS (`run_to_host`) is answered by a writer thread once its outputs' file is written, while
    the next launch runs; any other answer waits for those writes first, so that it is never read as the answer to a
    launch before it (a fault in the next launch, say). A write that fails answers its launch `error`, and the worker
    stops at its next launch (`failed`)."""

    def __init__(self, conn, launch):
        check_backend(launch)
        self.conn, self.launch = conn, launch
        self.lock = threading.Lock()  # one message on the pipe at a time
        self.free = threading.Semaphore(len(getattr(launch, "OUTPUT_STAGINGS", ())))
        self.count = 0
        self.writes: queue.Queue = queue.Queue()
        self.failed = False
        self.writer = threading.Thread(target=self._write, daemon=True)
        self.writer.start()

    def send(self, msg: tuple, after_writes: bool = True) -> None:
        if after_writes:
            self.writes.join()
        with self.lock:
            self.conn.send(msg)

    def output_slot(self) -> int:
        """An output staging no write still reads (they are written in turn, so the oldest is the next free)."""
        self.free.acquire()
        slot, self.count = self.count % len(self.launch.OUTPUT_STAGINGS), self.count + 1
        return slot

    def release(self, slot: int) -> None:
        self.free.release()

    def write_then_answer(self, outputs: dict, out_path: str, slot: int, seconds: float) -> None:
        """Answer `ok` once the outputs are written to `out_path`, with the launch's `seconds` (its write not counted:
        it runs behind the next launch)."""
        self.writes.put((outputs, out_path, slot, seconds))

    def _write(self) -> None:
        from harness.run.launch import save_outputs
        while True:
            outputs, out_path, slot, seconds = self.writes.get()
            if outputs is None:
                self.writes.task_done()
                return
            try:
                save_outputs(outputs, out_path)
                msg = ("ok", None, seconds)
            except Exception as e:  # noqa: BLE001 (the launch's answer: error)
                self.failed = True
                msg = ("error", f"writing the outputs' file: {type(e).__name__}: {e}", 0.0)
            self.release(slot)
            try:
                with self.lock:
                    self.conn.send(msg)
            except OSError:
                pass  # the parent is gone
            finally:
                self.writes.task_done()  # after the answer: `send` waits for it

    def close(self) -> None:
        self.writes.put((None, None, None, None))
        self.writer.join()


def _receive(conn, device: int, launch, jobs: queue.Queue, slots: threading.Semaphore) -> None:
    """Take each job from the parent as it comes, for _serve's loop: (job, its launch read ahead or None, the staging
    slot it is in or None), None to stop. Where the backend has `stage`, a launch file is read into a free slot of
    the backend's while the loop runs the job before it: reading a launch file was a third of a warm H100 sweep's
    GPU worker (bench12 in docs/performance.md). A slot is free again once its launch's copies in are done
    (_serve releases it after the launch). A file that cannot be read is that job's error, raised when it runs."""
    launch.use_device(device)  # a CUDA call in this thread (page-locked memory) acts on this thread's device
    count = 0
    while True:
        try:
            job = conn.recv()
        except Exception:  # noqa: BLE001 (the parent is gone, or sent what cannot be read: the worker stops)
            jobs.put(None)
            return
        if job is None:
            jobs.put(None)
            return
        cubin_path, name, inp, out_path = job
        if not hasattr(launch, "stage") or not isinstance(inp, str) or not out_path:  # a launch handed over whole,
            # or answered through the pipe, or a backend that reads its own
            jobs.put((job, None, None))
            continue
        slots.acquire()
        slot, count = count % len(launch.STAGINGS), count + 1
        try:
            jobs.put((job, launch.stage(inp, slot), slot))
        except Exception as e:  # noqa: BLE001 (the job's error: _launch raises it)
            jobs.put((job, e, slot))


def _launch(answers: Answers, launch, job: tuple, staged) -> bool:
    """Run one job and answer it (or hand it to the writer, which answers once the outputs' file is written); False
    when the worker must stop (its context may be poisoned, or an outputs' file could not be written)."""
    from harness.run.launch import ModuleLoadError, save_outputs

    if answers.failed:
        return False
    cubin_path, name, inp, out_path = job
    # the launch's own timeout runs from here (one clock system-wide); the writes of launches before may still be on
    answers.send(("started", time.monotonic(), 0.0), after_writes=False)
    try:
        t = time.perf_counter()
        if isinstance(staged, Exception):
            raise staged
        inp = staged if staged is not None else inp
        if out_path and hasattr(launch, "run_to_host"):  # outputs copied into a staging, written behind the next launch
            slot = answers.output_slot()
            try:
                outputs = launch.run_to_host(cubin_path, name, inp, slot)
            except BaseException:
                answers.release(slot)
                raise
            answers.write_then_answer(outputs, out_path, slot, time.perf_counter() - t)
            return True
        outputs = launch.run(cubin_path, name, inp)
        if out_path and outputs is not None:  # the outputs go to a file for the read-back, not through the pipe
            save_outputs(outputs, out_path)
            outputs = None
        answers.send(("ok", outputs, time.perf_counter() - t))
        return True
    except ModuleLoadError as e:  # the module, not the launch: no bisection (the worker is replaced all the same)
        answers.send(("load-error", str(e), 0.0))
        return False
    except Exception as e:  # report, then exit: the context may be poisoned
        answers.send(("error", f"{type(e).__name__}: {e}".strip() or traceback.format_exc(limit=1), 0.0))
        return False


# A launch's timeout counts from the moment the worker takes it up; before that (a worker still spawning,
# importing CuPy and making its context) it may take this long to answer at all.
STARTUP_S = 120.0
# Launches a worker holds at once: the one it runs and the next, sent ahead so that it starts that one as soon as it
# has answered, not when the sweep's process, busy writing records, gets round to its answer. Without it a warm H100
# sweep's worker sat 0.74-0.98 s of its 2.7-2.9 s waiting for its next launch (bench12 in docs/performance.md).
DEPTH = 2


@dataclass
class Pending:
    """A launch sent to the worker and not yet collected."""
    job: tuple  # what was sent (sent again, as it is, to a fresh worker if the one before never took it up, or, the
    # oldest held, if that one died in a launch behind it)
    timeout: float
    deadline: float | None = None  # set once it is the next to answer: its start-up, then its own timeout
    sent: bool = False  # to the worker that is running now
    started: bool = False  # the worker said it took it up
    answer: tuple | None = None  # (status, payload, seconds), read and not yet collected


class GpuWorker:
    """`backend` is the module that launches: `harness.run.launch`, or a simulated device (tests/simulated/)
    with the same `use_device` and `run` (and, optionally, `stage` with its STAGINGS, `run_to_host` with its
    OUTPUT_STAGINGS, and `reserve_for_launches`, called once before the first launch). Up to DEPTH launches are held at once and
    answered in the order sent; `collect` returns the oldest's answer. After a failure the worker is replaced, and
    a launch sent behind the failed one (which the old worker never took up) is sent to the new one. A worker that dies
    in a launch while the oldest's outputs are still being written is no fault of the oldest: it runs again, alone, on
    a fresh worker."""

    def __init__(self, device: int = 0, backend: str = "harness.run.launch", spares: SparePool | None = None):
        import importlib
        check_backend(importlib.import_module(backend))  # here, where a wrong one is one clear error, not a dead worker
        self.device = device
        self.backend = backend
        self.spares = spares  # a restart takes a spare its engine started ahead (SparePool): the engine's workers only
        self._proc = None
        self._conn = None
        self._pending: deque[Pending] = deque()
        self.gpu_s = 0.0  # time the worker spent in launches (transfers, module loads, kernels; not the writes of
        # outputs' files, which run behind the next launch)
        self.last_s = 0.0  # the last successful launch's time in the worker

    def start(self, fork: bool = False) -> None:
        """Start the worker process now (it imports CuPy and makes its context while the caller works). fork: this
        process has made no CUDA call (gpu.cuda_untouched), so the worker may be forked from it rather than started
        by the fork server (harness.run.processes): it then has every module imported here. A worker started again
        (after a fault) comes from the fork server: by then this process has asked CUDA which GPUs are here, and CUDA
        does not survive a fork."""
        if self._proc is None or not self._proc.is_alive():
            self._start(fork)

    def _start(self, fork: bool = False):
        spare = self.spares.take(self.device, self.backend) if self.spares is not None else None
        if spare is not None:  # started ahead (SparePool.prestart): its CUDA context is made, or on the way
            self._proc, self._conn = spare
            return
        self._proc, self._conn = _spawn(self.device, self.backend, fork)

    @property
    def busy(self) -> bool:
        return bool(self._pending)

    @property
    def full(self) -> bool:
        return len(self._pending) >= DEPTH

    @property
    def held(self) -> int:
        return len(self._pending)

    @property
    def has_answer(self) -> bool:
        return bool(self._pending) and self._pending[0].answer is not None

    @property
    def head_sent(self) -> bool:
        """The oldest launch held was sent to the worker now running (else its collect sends it to a fresh one)."""
        return self._pending[0].sent

    @property
    def deadline(self) -> float:
        return self._pending[0].deadline

    @property
    def connection(self):
        return self._conn

    def submit(self, cubin_path: str, name: str, launch, timeout: float, out_path: str | None = None) -> None:
        """Send a launch (a LaunchInput, or the file it is in), behind those held (at most DEPTH); with `out_path`
        the outputs are saved there and its collect() returns None."""
        if self.full:
            raise RuntimeError(f"the GPU worker already holds {DEPTH} launches")
        pending = Pending((str(cubin_path), name, launch, out_path), timeout)
        if all(p.answer is not None for p in self._pending):  # next to be answered: until the worker says it started
            pending.deadline = time.monotonic() + max(timeout, STARTUP_S)
        self._pending.append(pending)
        self._send(pending)

    def _send(self, pending: Pending) -> None:
        """Send the launch just queued. Where the worker has died with launches before it unanswered, it waits: their
        answers (or the worker's death) are read first, and the worker that replaces it is sent this one too."""
        earlier = len(self._pending) > 1
        if any(not p.sent for p in list(self._pending)[:-1]):
            return  # behind one not sent: whatever sends that one (collect's restart) sends this one after it
        if self._proc is None or not self._proc.is_alive():
            if earlier:
                return
            self._stop()
            self._start()
        try:
            self._conn.send(pending.job)
            pending.sent = True
        except (BrokenPipeError, ConnectionResetError, OSError):
            if not earlier:
                self._restart()

    def _restart(self, alone: bool = False) -> None:
        """A fresh worker, sent every launch still held (none of which the old one answered), or with `alone` the
        oldest only (the others wait, unsent, until it is answered)."""
        self._stop()
        self._start()
        for i, pending in enumerate(self._pending):
            pending.started, pending.answer = False, None
            pending.deadline = time.monotonic() + max(pending.timeout, STARTUP_S) if i == 0 else None
            pending.sent = False
            if i == 0 or not alone:
                self._conn.send(pending.job)
                pending.sent = True

    def take_message(self) -> bool:
        """Read one message of a busy worker (one is waiting): True when it is an answer (kept for collect); a
        'started' note gives the launch it is about its own timeout, from now."""
        msg = self._conn.recv()
        if msg[0] == "started":
            pending = next(p for p in self._pending if not p.started)
            pending.started, pending.deadline = True, msg[1] + pending.timeout
            return False
        answered = next(p for p in self._pending if p.answer is None)
        answered.answer = msg
        later = [p for p in self._pending if p.answer is None]
        if later and later[0].deadline is None:  # the next in line: the worker takes it up now
            later[0].deadline = time.monotonic() + max(later[0].timeout, STARTUP_S)
        return True

    def collect(self, restart: bool = True):
        """The answer to the oldest launch held: the kernel's outputs, or LaunchFailed (fault, or hang past the
        timeout). After a failure the launches still held go to a fresh worker at once, or with `restart` False
        only at `resume` (the caller may `withdraw` some first)."""
        head = self._pending[0]
        try:
            while head.answer is None:
                if not head.sent:  # queued behind launches of a worker that died: a fresh worker takes it
                    self._restart()
                if not self._conn.poll(max(0.0, head.deadline - time.monotonic())):
                    started = head.started
                    self._fail(restart=restart)
                    if not started:  # the worker never took the launch up: its start-up, not the case
                        raise LaunchFailed("error", f"the GPU worker did not take the launch up within "
                                                    f"{max(head.timeout, STARTUP_S):g} s (start-up: CUDA, the driver); "
                                                    "worker killed")
                    raise LaunchFailed("timeout", f"no answer within {head.timeout:g} s: the launch hangs; "
                                                  "worker killed")
                self.take_message()
        except (EOFError, OSError):
            if head.started and any(p.started for p in list(self._pending)[1:]):
                # the worker died in a launch behind the head, whose kernel had run (its outputs' file was still being
                # written, Answers): not the head's doing. A fresh worker runs the head again, alone; the launches
                # behind it are sent once it is answered (as the head, each goes to a fresh worker: collect's restart)
                self._restart(alone=True)
                return self.collect(restart)
            code, started = (self._proc.exitcode if self._proc else None), head.started
            self._fail(restart=restart)
            if not started:
                raise LaunchFailed("error", f"the GPU worker died before it took the launch up (exit code {code}): "
                                            "its start-up (CUDA, the driver) failed, not the case") from None
            raise LaunchFailed("fault", f"the GPU worker died (exit code {code})") from None
        status, payload, seconds = head.answer
        self._pending.popleft()
        self.gpu_s += seconds
        if status == "load-error":
            self._fail(popped=True, restart=restart)
            raise LaunchFailed(str(Status.COMPILE_ERROR), payload)
        if status != "ok":
            self._fail(popped=True, restart=restart)
            raise LaunchFailed("fault", payload)
        self.last_s = seconds
        return payload

    def _fail(self, popped: bool = False, restart: bool = True) -> None:
        """The oldest launch failed (already taken off the queue if `popped`): the worker goes, and the launches
        behind it, which it never took up, go to a fresh one (now, or with `restart` False at `resume`)."""
        if not popped:
            self._pending.popleft()
        if self._pending and restart:
            self._restart()
            return
        self._stop()
        for pending in self._pending:
            pending.sent = pending.started = False
            pending.answer = pending.deadline = None

    def withdraw(self, unwanted) -> list[int]:
        """Take off the launches held that no running worker was sent (after a failure collected with `restart`
        False) and for whose job `unwanted(job)` holds; their positions in the order sent (that of `collect`)."""
        gone = [i for i, p in enumerate(self._pending) if not p.sent and unwanted(p.job)]
        for i in reversed(gone):
            del self._pending[i]
        return gone

    def resume(self) -> None:
        """A fresh worker for the launches still held, if a failure left them waiting (collect's `restart`)."""
        if self._pending and not self._pending[0].sent:
            self._restart()

    def run(self, cubin_path: str, name: str, launch, timeout: float) -> dict:
        self.submit(cubin_path, name, launch, timeout)
        return self.collect()

    @staticmethod
    def compile(kernel: Kernel) -> str:
        """The cubin of a kernel a probe asks for (a sibling of the kernel under diagnosis: contract.Device), compiled
        in this process or taken from the compile cache; CompileError where NVRTC rejects it."""
        from harness.run import compile as nvrtc  # the compiler only where a probe needs a sibling
        return str(nvrtc.compile_many([nvrtc.compile_job(kernel)])[0].cubin_path)

    def _stop(self) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            _reap(self._proc)
        self._proc = self._conn = None

    def kill(self):
        """Stop the worker; every launch it held is forgotten."""
        self._stop()
        self._pending.clear()

    def finish(self) -> None:
        """Tell the worker to stop once it has answered what it holds (close waits for it)."""
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
            except (BrokenPipeError, OSError):
                pass

    def close(self):
        self.finish()
        if self._proc is not None and self._proc.is_alive():
            self._proc.join(timeout=10)
        self.kill()


def _reap(proc) -> None:
    """Join a stopped worker in the background: a process that held a CUDA context, above all one whose launch
    faulted, ends only once the driver has torn the context down (about a second on an H100 node, which a fault
    storm paid once for every worker it stopped), and nothing here needs it gone before going on."""
    processes.killed(proc)  # nor does the command line's exit (processes.unfinished_children)
    threading.Thread(target=proc.join, kwargs={"timeout": 30}, daemon=True, name="tc-harness-reap").start()


def _spawn(device: int, backend: str, fork: bool = False):
    """A worker process serving `device`, and the parent's end of its pipe."""
    parent, child = multiprocessing.Pipe()
    serve = (child, device, backend)
    with cores.one_blas_thread_per_process(), processes.deaf_to_interrupts(), processes.whole():
        if fork:
            proc = multiprocessing.get_context("fork").Process(target=_serve, args=serve, daemon=True)
        else:
            proc = processes.context().Process(target=processes.in_callers_environment,
                                               args=(dict(os.environ), _serve, *serve), daemon=True)
        proc.start()
    child.close()
    return proc, parent


class SparePool:
    """Spare worker processes, started ahead where launches have begun to fault (`prestart`): each fault costs its
    worker the process and CUDA context, and a fresh one takes about a second to start (a process, CuPy, a context);
    spares started side by side are ready when the next faults come, so a run of faults (a fault storm's first
    launches) costs those seconds side by side, not one after another. One engine owns one pool: the workers it hands
    the pool to take its spares, and no one else's (a bisection's workers start their own)."""

    def __init__(self):
        self._ready: dict[tuple[int, str], list] = {}  # (device, backend) -> [(process, connection)], oldest first

    def prestart(self, device: int, backend: str, count: int) -> None:
        """Have `count` spare workers of `device` started (beside those started already)."""
        have = self._ready.setdefault((device, backend), [])
        while len(have) < count:
            have.append(_spawn(device, backend))

    def take(self, device: int, backend: str):
        """A started spare of `device` that is still alive, or None."""
        have = self._ready.get((device, backend))
        while have:
            proc, conn = have.pop(0)
            if proc.is_alive():
                return proc, conn
            conn.close()
        return None

    def ready(self, device: int, backend: str) -> list:
        """The processes of the spares of `device` that wait (alive or not), oldest first."""
        return [proc for proc, _ in self._ready.get((device, backend), ())]

    def close(self, wait: bool = True) -> None:
        """Stop every spare not taken (the engine's end); `wait` False: reaped in the background."""
        for have in self._ready.values():
            while have:
                proc, conn = have.pop()
                if proc.is_alive():
                    proc.kill()
                if wait:
                    proc.join(timeout=30)
                else:
                    _reap(proc)
                conn.close()
        self._ready.clear()


def wait_any(workers: list[GpuWorker]) -> GpuWorker:
    """The first busy worker whose oldest launch has an answer, or whose deadline has passed (its collect will say
    'timeout')."""
    busy = [w for w in workers if w.busy]
    while True:
        answered = [w for w in busy if w.has_answer or not w.head_sent]
        if answered:
            return answered[0]
        now = time.monotonic()
        expired = [w for w in busy if w.deadline <= now]
        if expired:
            return expired[0]
        wait = min(w.deadline for w in busy) - now
        for conn in multiprocessing.connection.wait([w.connection for w in busy], timeout=wait):
            w = next(w for w in busy if w.connection is conn)
            try:
                w.take_message()
            except (EOFError, OSError):
                return w  # its collect says how it died
