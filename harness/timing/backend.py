"""The launch backend of a timing GpuWorker (`GpuWorker(device, backend="harness.timing.backend")`).

`run(cubin_path, name, job)` loads the module, launches `job.entry` `job.warmup` times (not kept: module load,
clocks ramping up, caches), then `job.launches` times, each synchronised, and returns the kernel's clock
words of every kept launch plus each launch's CUDA-event time.
"""
from __future__ import annotations

import numpy as np

from harness.run.launch import module, use_device  # noqa: F401  (the worker calls use_device)


def run(cubin_path: str, name: str, job) -> dict[str, np.ndarray]:
    import cupy as cp
    fn = module(str(cubin_path)).get_function(job.entry)
    if job.smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = job.smem
    image = cp.asarray(job.image)
    params = cp.asarray(job.params.view(np.uint8))
    out = cp.zeros(job.out_words, dtype=cp.uint64)
    sink = cp.zeros(job.grid * job.block, dtype=cp.uint32)
    args = (image, params, out, sink)
    kept, ms = [], []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for i in range(job.warmup + job.launches):
        out.fill(0)
        start.record()
        fn((job.grid,), (job.block,), args, shared_mem=job.smem)
        stop.record()
        stop.synchronize()
        if i >= job.warmup:
            kept.append(cp.asnumpy(out))
            ms.append(cp.cuda.get_elapsed_time(start, stop))
    return {"words": np.stack(kept), "ms": np.array(ms)}
