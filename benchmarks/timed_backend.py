"""harness.run.launch with each launch's pieces timed (for benchmarks/sweep_timeline.py; the GPU worker imports it
as its backend by name). Appends one JSON line a launch to $TIMED_BACKEND_LOG."""
import json
import os
import time

from harness.run import launch
from harness.run.launch import LaunchInput, OutputSpec  # noqa: F401

LOG = os.environ.get("TIMED_BACKEND_LOG")
use_device = launch.use_device


def run(cubin_path, kernel_name, inp):
    import cupy as cp
    t = [time.time()]
    inp = LaunchInput.load(inp, launch.STAGING)  # as launch.run loads it
    t.append(time.time())
    fn = launch.function(cubin_path, kernel_name)
    t.append(time.time())
    n = inp.ctas
    outs, args = launch.device_buffers(fn, inp)
    cp.cuda.get_current_stream().synchronize()  # the copies in, timed apart from the kernel (run does not wait here)
    t.append(time.time())
    fn((n,), (inp.threads,), args, shared_mem=inp.smem)
    cp.cuda.get_current_stream().synchronize()
    t.append(time.time())
    result = {k: cp.asnumpy(v) for k, v in outs.items()}
    t.append(time.time())
    if LOG:
        with open(LOG, "a") as fh:
            fh.write(json.dumps({"t": t[0], "event": "launch", "kernel": kernel_name, "ctas": n,
                                 "load_s": t[1] - t[0], "module_s": t[2] - t[1], "copy_in_s": t[3] - t[2],
                                 "kernel_s": t[4] - t[3], "copy_out_s": t[5] - t[4]}) + "\n")
    return result
