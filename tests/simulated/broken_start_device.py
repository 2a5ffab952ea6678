"""A stand-in backend whose worker cannot come up (CUDA or the driver fails in its start-up): no launch is ever
taken up, so no case may be recorded as faulting or hanging, let alone as a control caught by a fault."""


def use_device(index: int) -> None:
    raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected (simulated start-up failure)")


def run(cubin_path, kernel_name, launch):
    raise AssertionError("never reached: the worker did not start")
