"""harness.run.launch with each launch's pieces timed (for benchmarks/sweep_timeline.py; the GPU worker imports it
as its backend by name). Appends one JSON line a launch to $TIMED_BACKEND_LOG. The same calls as launch.run and
launch.run_to_host, in the same order, with a wait after the copies in so that they are timed apart from the kernel.
The reading thread's `stage` of each launch file and the writer thread's `save_outputs` of each outputs' file (behind
the next launch, worker.Answers) are timed too: a "stage" and a "write" line each, when it began and its seconds.
Each line names the worker's process ("pid"): the sweep command runs two workers on its only GPU."""
import json
import os
import sys
import time

IMPORTED = time.time()  # the GPU worker's process is up and imports its backend (this module) from here

from harness.run import launch  # noqa: E402
from harness.contract import LaunchInput, OutputSpec  # noqa: E402,F401

LOG = os.environ.get("TIMED_BACKEND_LOG")


def note(event: str, t: float, **more) -> None:
    if LOG:
        with open(LOG, "a") as fh:
            fh.write(json.dumps({"t": t, "event": event, "pid": os.getpid(), **more}) + "\n")


def use_device(index: int) -> None:
    """launch.use_device, with when the worker began importing its backend and when its device was ready (the first
    call: the worker's; its reading thread calls it again)."""
    first = not getattr(use_device, "done", False)
    t = time.time()
    launch.use_device(index)
    if first:
        use_device.done = True
        forked = "harness.cli" in sys.modules  # only a worker forked from the command line's process has it
        note("gpu worker backend import", IMPORTED, forked=forked)
        note("gpu worker use_device start", t)
        note("gpu worker device ready", time.time())
STAGINGS = launch.STAGINGS  # launch files read ahead as launch's are (their load_s is then ~0)


def stage(path, slot):
    """launch.stage, timed: the worker's reading thread reads the next launch file into a staging while one runs."""
    t = time.time()
    staged = launch.stage(path, slot)
    note("stage", t, seconds=time.time() - t)
    return staged


def save_outputs(outputs, path):
    """launch.save_outputs, timed: the worker's writer thread writes each launch's outputs' file behind the next
    launch, and answers the launch once it is written."""
    t = time.time()
    untimed_save_outputs(outputs, path)
    note("write", t, seconds=time.time() - t, bytes=sum(v.nbytes for v in outputs.values()))


# the writer thread takes save_outputs from harness.run.launch when it starts (worker.Answers._write imports it then),
# after the worker imported this module; were that import moved to worker.py's top, the writes would go untimed and
# tests/test_benchmarks.py's timeline test would fail on a GPU
untimed_save_outputs, launch.save_outputs = launch.save_outputs, save_outputs
OUTPUT_STAGINGS = launch.OUTPUT_STAGINGS
reserve_for_launches = launch.reserve_for_launches  # the worker's memory held before its first launch, as launch's is


def run(cubin_path, kernel_name, inp):
    import cupy as cp
    return timed(cubin_path, kernel_name, inp, lambda outs: {k: cp.asnumpy(v) for k, v in outs.items()})


def run_to_host(cubin_path, kernel_name, inp, slot):
    return timed(cubin_path, kernel_name, inp, lambda outs: launch.to_host(outs, launch.OUTPUT_STAGINGS[slot]))


def timed(cubin_path, kernel_name, inp, copy_out):
    """copy_out(outputs on the GPU) -> what to return (the outputs on the host)."""
    import cupy as cp
    t = [time.time()]
    inp = LaunchInput.load(inp, launch.STAGING)  # as launch.launched loads it
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
    result = copy_out(outs)
    t.append(time.time())
    note("launch", t[0], kernel=kernel_name, ctas=n, load_s=t[1] - t[0], module_s=t[2] - t[1], copy_in_s=t[3] - t[2],
         kernel_s=t[4] - t[3], copy_out_s=t[5] - t[4])
    return result
