"""harness.run.launch with each launch's pieces timed (for benchmarks/sweep_timeline.py; the GPU worker imports it
as its backend by name). Appends one JSON line a launch to $TIMED_BACKEND_LOG."""
import json
import os
import time

from harness.run import launch

LOG = os.environ.get("TIMED_BACKEND_LOG")
use_device = launch.use_device
PIECES = ("load_s", "module_s", "copy_in_s", "kernel_s", "copy_out_s")


def run(cubin_path, kernel_name, inp):
    marks = [time.time()]
    result = launch.run(cubin_path, kernel_name, inp, marks)
    if LOG:
        record = {"t": marks[0], "event": "launch", "kernel": kernel_name,
                  "ctas": len(next(iter(result.values()))) if result else 0,
                  **{p: b - a for p, a, b in zip(PIECES, marks, marks[1:])}}
        with open(LOG, "a") as fh:
            fh.write(json.dumps(record) + "\n")
    return result
