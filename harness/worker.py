"""A GPU worker process: launches run there, so a sticky CUDA error or a hang costs a worker, not the sweep.

The parent sends (cubin path, kernel name, packed buffers); the worker answers with the raw registers or the
error text. After any error the parent replaces the worker: a CUDA context that saw an illegal instruction,
a misaligned address or an out-of-range access is unusable. A launch that does not answer within the timeout
is a hang: the worker is killed (which tears down its context and the kernel with it).
"""
from __future__ import annotations

import multiprocessing
import traceback


class LaunchFailed(RuntimeError):
    def __init__(self, status: str, message: str):
        self.status = status  # 'fault' or 'timeout'
        super().__init__(message)


def _serve(conn) -> None:
    from . import launch
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        cubin_path, name, packed = job
        try:
            conn.send(("ok", launch.run(cubin_path, name, packed)))
        except Exception as e:  # report, then exit: the context may be poisoned
            conn.send(("error", f"{type(e).__name__}: {e}".strip() or traceback.format_exc(limit=1)))
            return


class GpuWorker:
    def __init__(self):
        self._proc = None
        self._conn = None

    def _start(self):
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    def run(self, cubin_path: str, name: str, packed: dict, timeout: float):
        if self._proc is None or not self._proc.is_alive():
            self._start()
        try:
            self._conn.send((str(cubin_path), name, packed))
            if not self._conn.poll(timeout):
                self.kill()
                raise LaunchFailed("timeout", f"no answer within {timeout:g} s: the launch hangs; worker killed")
            status, payload = self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            code = self._proc.exitcode if self._proc else None
            self.kill()
            raise LaunchFailed("fault", f"the GPU worker died (exit code {code})") from None
        if status != "ok":
            self.kill()
            raise LaunchFailed("fault", payload)
        return payload

    def kill(self):
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(timeout=30)
        self._proc = self._conn = None

    def close(self):
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
                self._proc.join(timeout=10)
            except (BrokenPipeError, OSError):
                pass
        self.kill()
