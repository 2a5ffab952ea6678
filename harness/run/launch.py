"""One launch function for every instruction family: a family's `LaunchInput` (harness/contract.py: images,
parameter records, inputs, the outputs to poison and read back) goes to the GPU, and `run` returns the outputs.
The GPU worker reads a launch file's arrays straight into page-locked memory it keeps (`PinnedStaging`), from which
they go to the GPU at the bus's speed.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from harness.cache import read_arrays, write_arrays
from harness.contract import LaunchInput

class PinnedStaging:
    """Page-locked host memory, grown as needed and reused launch after launch, that the GPU worker reads each launch
    file's arrays into: a copy from it to the GPU runs at the bus's speed, where one from ordinary memory goes
    through the driver's own staging. The worker's launches' load and copy in took 1.05 s and 0.88 s of a warm
    H100 sweep (bench11 in docs/performance.md, 762 launches), the arrays unpickled into fresh memory."""
    ALIGN = 256

    def __init__(self, allocate=None):
        """allocate(nbytes) -> a buffer of that many bytes (default: page-locked memory from CuPy)."""
        self.allocate = allocate or page_locked
        self.memory = None
        self.capacity = 0

    def reserve(self, nbytes: int) -> None:
        """Hold at least `nbytes` now, so that no launch of up to that size waits for memory to be page-locked."""
        if nbytes > self.capacity or self.memory is None:
            self.capacity = max(nbytes, self.ALIGN)
            self.memory = self.allocate(self.capacity)

    def slices(self, sizes) -> list[memoryview]:
        """One writable slice per size, each ALIGN-aligned; the slices handed out before are overwritten."""
        offsets, total = [], 0
        for n in sizes:
            offsets.append(total)
            total += -(-n // self.ALIGN) * self.ALIGN
        if total > self.capacity or self.memory is None:
            self.capacity = max(total, 2 * self.capacity, self.ALIGN)
            self.memory = self.allocate(self.capacity)
        whole = np.frombuffer(self.memory, np.uint8, self.capacity)
        return [memoryview(whole[o:o + n]) for o, n in zip(offsets, sizes)]


def page_locked(nbytes: int):
    import cupy as cp
    return cp.cuda.alloc_pinned_memory(nbytes)


STAGING = PinnedStaging()  # this process's (a GPU worker's): the inputs of a launch `run` is given the file of
STAGINGS = (PinnedStaging(), PinnedStaging())  # the slots `stage` reads launches into, one ahead of the one running
# the slots `run_to_host` copies a launch's outputs into: one written to its outputs' file (by the GPU worker's writer
# thread) while the next launch runs
OUTPUT_STAGINGS = (PinnedStaging(), PinnedStaging())


# What a GPU worker holds from its start, before its first launch: a launch of up to LAUNCH_RESERVE bytes of inputs and
# OUTPUT_RESERVE bytes of outputs finds its page-locked stagings, and its GPU memory in CuPy's pool, without asking the
# driver for more. Grown a launch at a time, from the first launch's size, the stagings and the pool stalled a warm
# H100 sweep's GPU worker 120-264 ms in 10-24 of its 762 launches (a page-locked allocation, or a device one, of up to
# twice the last; bench17 in docs/performance.md, three nodes' warm timelines). The default sweep's
# largest launch holds 26.6 MB of inputs and 18.5 MB of outputs (wgmma_sp_f16_m64n256k32_f32_SS, 283 cases;
# the CPU note 2026-11-27 launch-reserve.txt in docs/performance.md); a larger one grows its staging as before.
# Reserved, a warm sweep's worker spent 21 ms in its 3 slow launches and 508 ms in all, against 161 ms in 13 and 637 ms,
# on one H100 node (bench19 in docs/performance.md: the two trees' warm timelines).
LAUNCH_RESERVE = 32 << 20
OUTPUT_RESERVE = 24 << 20
DEVICE_RESERVE = 2 * (LAUNCH_RESERVE + OUTPUT_RESERVE)  # a launch's buffers, and the one before it not yet freed


def reserve_for_launches() -> None:
    """Called once by a GPU worker before its first launch (its device in use): the page-locked stagings and CuPy's
    pool of GPU memory sized for LAUNCH_RESERVE / OUTPUT_RESERVE, and CuPy's fill kernel (the outputs' poison) loaded."""
    import cupy as cp
    for staging in STAGINGS:
        staging.reserve(LAUNCH_RESERVE)
    for staging in OUTPUT_STAGINGS:
        staging.reserve(OUTPUT_RESERVE)
    block = cp.empty(DEVICE_RESERVE, np.uint8)  # freed into the pool, which splits it for the launches' buffers
    cp.full((1,), 0, dtype=np.uint32)
    del block
    cp.cuda.get_current_stream().synchronize()


def stage(path: str, slot: int) -> "LaunchInput":
    """The launch saved at `path`, read into STAGINGS[slot] (views of it: the slot must not be given to another
    launch until this one's copies in are done, i.e. until run_to_host has returned). The GPU worker reads the next
    launch so while it runs the one before (worker._receive)."""
    return LaunchInput.load(path, STAGINGS[slot])


def save_outputs(outputs: dict[str, np.ndarray], path: str) -> None:
    write_arrays(path, dict(outputs))


def load_outputs(path: str) -> dict[str, np.ndarray]:
    return read_arrays(path)


# ---------------------------------------------------------------------------------------------------- device

def use_device(index: int) -> None:
    import cupy as cp
    cp.cuda.Device(index).use()


class ModuleLoadError(RuntimeError):
    """The driver cannot load a module: PTX its JIT rejects, or a cubin it cannot run. The module, not a launch,
    is at fault: the kernel's cases are recorded compile-error, without bisection."""


# CUDA driver errors that say "this module does not load here" (the context stays sound)
MODULE_LOAD_ERRORS = ("CUDA_ERROR_INVALID_PTX", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "CUDA_ERROR_NO_BINARY_FOR_GPU",
                      "CUDA_ERROR_INVALID_IMAGE", "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
                      "CUDA_ERROR_JIT_COMPILATION_DISABLED", "CUDA_ERROR_INVALID_SOURCE")


def module(cubin_path: str):
    """The module at the path: a cubin, or PTX (`.ptx`), which the driver's JIT compiles as it loads
    (cuModuleLoad, through CuPy's RawModule; CuPy loads on the first get_function). Loaded once per file: the
    compile cache links each kernel of a shared module to one file, which this process loads once, not once a
    kernel."""
    import cupy as cp
    st = os.stat(cubin_path)
    identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)  # the same for every link to the file
    if identity not in LOADED_MODULES:
        LOADED_MODULES[identity] = cp.RawModule(path=str(cubin_path))
    return LOADED_MODULES[identity]


LOADED_MODULES: dict[tuple, object] = {}  # file identity -> the module loaded from it, in this process


def function(cubin_path: str, kernel_name: str):
    """The kernel in the module; ModuleLoadError when the driver cannot load the module."""
    try:
        return module(str(cubin_path)).get_function(kernel_name)
    except Exception as e:
        text = f"{type(e).__name__}: {e}"
        if any(code in text for code in MODULE_LOAD_ERRORS):
            what = ("the driver's JIT rejected the PTX" if str(cubin_path).endswith(".ptx")
                    else "the driver cannot load the cubin")
            raise ModuleLoadError(f"{what} {Path(cubin_path).name}: {text}") from None
        raise


def run(cubin_path: str, kernel_name: str, launch) -> dict[str, np.ndarray]:
    """Launch (a LaunchInput, or the file it was saved to); returns each output, [CTAs, *shape]."""
    import cupy as cp
    return {k: cp.asnumpy(v) for k, v in launched(cubin_path, kernel_name, launch).items()}


def run_to_host(cubin_path: str, kernel_name: str, launch, slot: int) -> dict[str, np.ndarray]:
    """`run`, its outputs copied into OUTPUT_STAGINGS[slot], page-locked memory this process keeps (views of it: valid
    until the slot is handed to another launch). The GPU worker's way: its writer thread writes them to the outputs'
    file while the next launch runs (worker.Answers). Written after the copy, in turn, the 762 launches of a warm sweep
    on an H200 node spent 0.67 s of the worker's 1.23 s writing (bench16 on H200 in docs/performance.md)."""
    return to_host(launched(cubin_path, kernel_name, launch), OUTPUT_STAGINGS[slot])


def launched(cubin_path: str, kernel_name: str, launch) -> dict:
    """Launch and wait for the kernel; returns each output on the GPU."""
    import cupy as cp
    inp = LaunchInput.load(launch, STAGING)
    fn = function(cubin_path, kernel_name)
    outs, args = device_buffers(fn, inp)
    fn((inp.ctas,), (inp.threads,), args, shared_mem=inp.smem)
    cp.cuda.get_current_stream().synchronize()
    return outs


def to_host(outputs: dict, staging: PinnedStaging) -> dict[str, np.ndarray]:
    """The GPU arrays copied into the staging (views of it, valid until the staging is asked again)."""
    import cupy as cp
    slices = staging.slices([v.nbytes for v in outputs.values()])
    host = {k: np.frombuffer(m, v.dtype).reshape(v.shape) for (k, v), m in zip(outputs.items(), slices)}
    stream = cp.cuda.get_current_stream()
    for k, v in outputs.items():
        if v.nbytes:
            cp.cuda.runtime.memcpyAsync(host[k].ctypes.data, v.data.ptr, v.nbytes, cp.cuda.runtime.memcpyDeviceToHost,
                                        stream.ptr)
    stream.synchronize()
    return host


def device_buffers(fn, inp: LaunchInput) -> tuple[dict, tuple]:
    """The launch made ready on the GPU: the kernel's dynamic shared memory allowed, each output allocated and
    poisoned, the inputs copied in (in the stream, not waited for: the caller synchronizes before the host arrays
    are reused). Returns (outputs by name, the kernel's arguments in order: images, params, each input, each
    output)."""
    import cupy as cp
    if inp.smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = inp.smem
    n = inp.ctas
    outs = {k: cp.full((n, *o.shape), o.fill, dtype=o.dtype) for k, o in inp.outputs.items()}
    args = [to_device(inp.images), to_device(inp.params.view(np.uint8))]
    args += [to_device(v) for v in inp.inputs.values()] + list(outs.values())
    return outs, tuple(args)


def to_device(host: np.ndarray):
    """A GPU copy of a host array, copied in the current stream straight from the array's memory (from page-locked
    memory the copy runs while this process goes on; from ordinary memory the driver stages it before returning)."""
    import cupy as cp
    host = np.ascontiguousarray(host)
    dev = cp.empty(host.shape, host.dtype)
    if host.nbytes:
        cp.cuda.runtime.memcpyAsync(dev.data.ptr, host.ctypes.data, host.nbytes, cp.cuda.runtime.memcpyHostToDevice,
                                    cp.cuda.get_current_stream().ptr)
    return dev
