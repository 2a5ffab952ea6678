"""A stand-in for harness.launch in the GPU worker, so the pipeline's orchestration (spool files, workers,
diffs in the pool, isolation of a faulting launch) is tested on machines without a GPU. It is no model of
the tensor core: it returns each case's C registers unchanged, which the diff must reject (unless a case
happens to expect exactly C), and it raises like a sticky CUDA error for any launch holding a planted trap."""
import numpy as np

from harness.families.wgmma import kernel as launch


def use_device(index: int) -> None:
    pass


def run(cubin_path, kernel_name, packed):
    p = launch.load(packed)
    if (p["params"]["inject"] == launch.INJECT["trap"]).any():
        raise RuntimeError("CUDARuntimeError: cudaErrorLaunchFailure: unspecified launch failure (fake GPU)")
    return np.asarray(p["c_regs"], dtype=np.uint32).copy()
