"""A GPU worker process: launches run there, so a sticky CUDA error or a hang costs a worker, not the sweep.

The parent sends (module path: a cubin, or PTX for the driver's JIT; kernel name; LaunchInput or the file it is
saved in); the worker answers with the kernel's outputs and its timings, or the error text (a module the driver
cannot load answers `load-error`, which the parent raises as LaunchFailed('compile-error')). After any error the parent replaces the worker: a CUDA context that saw an
illegal instruction, a misaligned address or an out-of-range access is unusable. A launch that does not
answer within the timeout is a hang: the worker is killed (which tears down its context and the kernel with
it). One worker drives one GPU; `submit` and `collect` let the parent keep every GPU busy while it diffs.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import time
import traceback

from harness.enums import Status
from harness.run import cores


class LaunchFailed(RuntimeError):
    def __init__(self, status: str, message: str):
        # 'fault' or 'timeout'; 'compile-error' when the driver cannot load the module; 'error' when the worker
        # died or stalled before it took the launch up (its start-up: CUDA, the driver), not the case's doing
        self.status = status
        super().__init__(message)


def _serve(conn, device: int, backend: str) -> None:
    import importlib

    from harness.run.launch import ModuleLoadError, save_outputs

    launch = importlib.import_module(backend)
    launch.use_device(device)
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        cubin_path, name, inp, out_path = job
        conn.send(("started", time.monotonic(), 0.0))  # the launch's own timeout runs from here (one clock system-wide)
        try:
            t = time.perf_counter()
            outputs = launch.run(cubin_path, name, inp)
            if out_path:  # the outputs go to a file for the read-back process, not back through the pipe
                save_outputs(outputs, out_path)
                outputs = None
            conn.send(("ok", outputs, time.perf_counter() - t))
        except ModuleLoadError as e:  # the module, not the launch: no bisection (the worker is replaced all the same)
            conn.send(("load-error", str(e), 0.0))
            return
        except Exception as e:  # report, then exit: the context may be poisoned
            conn.send(("error", f"{type(e).__name__}: {e}".strip() or traceback.format_exc(limit=1), 0.0))
            return


# A launch's timeout counts from the moment the worker takes it up; before that (a worker still spawning,
# importing CuPy and making its context) it may take this long to answer at all.
STARTUP_S = 120.0


class GpuWorker:
    """`backend` is the module that launches: `harness.run.launch`, or a simulated device (tests/simulated/)
    with the same `use_device` and `run`."""

    def __init__(self, device: int = 0, backend: str = "harness.run.launch"):
        self.device = device
        self.backend = backend
        self._proc = None
        self._conn = None
        self._deadline = None
        self._timeout = 0.0
        self._started = False  # the worker said it took the current launch up
        self._answer = None  # an answer read by wait_any, for collect
        self.gpu_s = 0.0  # time the worker spent in launches (transfers, module loads, kernels)
        self.last_s = 0.0  # the last successful launch's time in the worker

    def start(self) -> None:
        """Start the worker process now (it imports CuPy and makes its context while the caller works)."""
        if self._proc is None or not self._proc.is_alive():
            self._start()

    def _start(self):
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, self.device, self.backend), daemon=True)
        with cores.one_blas_thread_per_process():
            self._proc.start()
        child.close()
        self._conn = parent

    @property
    def busy(self) -> bool:
        return self._deadline is not None

    @property
    def has_answer(self) -> bool:
        return self._answer is not None

    @property
    def deadline(self) -> float:
        return self._deadline

    @property
    def connection(self):
        return self._conn

    def submit(self, cubin_path: str, name: str, launch, timeout: float, out_path: str | None = None) -> None:
        """Start a launch (a LaunchInput, or the file it is in); with `out_path` the outputs are saved there
        and collect() returns None."""
        job = (str(cubin_path), name, launch, out_path)
        if self._proc is None or not self._proc.is_alive():
            self._start()
        try:
            self._conn.send(job)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.kill()
            self._start()
            self._conn.send(job)
        self._timeout = timeout
        self._deadline = time.monotonic() + max(timeout, STARTUP_S)  # until the worker says it has started
        self._answer = None
        self._started = False

    def take_message(self) -> bool:
        """Read one message of a busy worker (one is waiting): True when it is the answer (kept for collect);
        a 'started' note moves the deadline to the launch's own timeout from now."""
        msg = self._conn.recv()
        if msg[0] == "started":
            self._deadline, self._started = msg[1] + self._timeout, True
            return False
        self._answer = msg
        return True

    def collect(self):
        """The answer to the last submit: the kernel's outputs, or LaunchFailed (fault, or hang past the timeout)."""
        try:
            while self._answer is None:
                if not self._conn.poll(max(0.0, self._deadline - time.monotonic())):
                    started = self._started
                    self.kill()
                    if not started:  # the worker never took the launch up: its start-up, not the case
                        raise LaunchFailed("error", f"the GPU worker did not take the launch up within "
                                                    f"{max(self._timeout, STARTUP_S):g} s (start-up: CUDA, the driver); "
                                                    "worker killed")
                    raise LaunchFailed("timeout", f"no answer within {self._timeout:g} s: the launch hangs; "
                                                  "worker killed")
                self.take_message()
        except (EOFError, OSError):
            code, started = (self._proc.exitcode if self._proc else None), self._started
            self.kill()
            if not started:
                raise LaunchFailed("error", f"the GPU worker died before it took the launch up (exit code {code}): "
                                            "its start-up (CUDA, the driver) failed, not the case") from None
            raise LaunchFailed("fault", f"the GPU worker died (exit code {code})") from None
        (status, payload, seconds), self._answer, self._deadline = self._answer, None, None
        self.gpu_s += seconds
        if status == "load-error":
            self.kill()
            raise LaunchFailed(str(Status.COMPILE_ERROR), payload)
        if status != "ok":
            self.kill()
            raise LaunchFailed("fault", payload)
        self.last_s = seconds
        return payload

    def run(self, cubin_path: str, name: str, launch, timeout: float) -> dict:
        self.submit(cubin_path, name, launch, timeout)
        return self.collect()

    def kill(self):
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(timeout=30)
        self._proc = self._conn = None
        self._deadline = self._answer = None

    def close(self):
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
                self._proc.join(timeout=10)
            except (BrokenPipeError, OSError):
                pass
        self.kill()


def wait_any(workers: list[GpuWorker]) -> GpuWorker:
    """The first busy worker with an answer, or whose deadline has passed (its collect will say 'timeout')."""
    busy = [w for w in workers if w.busy]
    while True:
        answered = [w for w in busy if w.has_answer]
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
