"""Where a sweep's wall time goes: `python -m harness sweep ARGS` run in this process with its phases timed, and its
GPU worker's launches timed piece by piece (a launch backend that wraps harness.run.launch), written as JSON lines:

    T0=$(date +%s.%N) python3 benchmarks/sweep_timeline.py --timeline OUT.timeline -- --out sweep.jsonl

Each record: {"t": seconds since T0 (the shell's clock before Python started), "event": ..., ...}. The GPU worker's
records ("launch") carry its pieces (load the spool file, the module, allocate and copy in, the kernel and its
sync, copy out; the worker writes the outputs' file after them). With --cpu-every S, "cpu" records every S seconds
give the whole machine's busy cores over the last interval (/proc/stat: every state but idle and iowait), so that
the cores left idle can be read against the sweep's own events. For the benchmark only: the sweep it runs is the
command line's.
"""
import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # timed_backend, for the spawned GPU worker too

T0 = float(os.environ.get("T0", time.time()))
RECORDS = []


def note(event, **more):
    RECORDS.append({"t": round(time.time() - T0, 4), "event": event, **more})


def timed(owner, name, label=None):
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def wrapper(*a, **k):
        note(f"{label or name} start")
        try:
            return fn(*a, **k)
        finally:
            note(f"{label or name} end")
    setattr(owner, name, wrapper)


# The sampler is a process of its own: a thread here would make the sweep start its GPU worker otherwise (it forks
# it only from a process running no other thread: sweep.worker_ahead).
SAMPLER = """
import os, sys, time
every, path, t0 = float(sys.argv[1]), sys.argv[2], float(sys.argv[3])
cores = os.cpu_count() or 1
def busy():
    with open("/proc/stat") as fh:
        f = [int(x) for x in fh.readline().split()[1:]]
    return sum(f) - f[3] - (f[4] if len(f) > 4 else 0), sum(f)
last = busy()
with open(path, "w") as out:
    while True:
        time.sleep(every)
        now = busy()
        b, t = now[0] - last[0], now[1] - last[1]
        out.write(f"{time.time() - t0:.4f} {cores * b / t if t else 0:.1f}\\n")
        out.flush()
        last = now
"""


def start_cpu_sampler(every: float, path: str):
    """A process writing "<t> <busy cores>" every `every` seconds: the machine's busy cores over the interval just
    ended (/proc/stat: every state but idle and iowait)."""
    import subprocess
    return subprocess.Popen([sys.executable, "-c", SAMPLER, str(every), path, str(T0)])


def cpu_records(path: str) -> list[dict]:
    out = []
    for line in Path(path).read_text().splitlines():
        t, busy = line.split()
        out.append({"t": round(float(t), 4), "event": "cpu", "busy_cores": float(busy)})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeline", required=True)
    ap.add_argument("--cpu-every", type=float, default=0.0, help="seconds between the machine's CPU records (0: none)")
    ap.add_argument("sweep_args", nargs="*")
    a = ap.parse_args()
    note("python up")
    sampler = start_cpu_sampler(a.cpu_every, a.timeline + ".cpu") if a.cpu_every > 0 else None
    from harness import cli, plan, sweep
    from harness.cli import sweep as sweep_command
    from harness.run import compile as nvrtc, engine, gpu, processes, sass, worker
    note("imports done")
    real_ahead = sweep.worker_ahead

    def worker_ahead(cfg, *a, **k):  # the worker the sweep command starts ahead runs the timed backend too
        import dataclasses
        return real_ahead(dataclasses.replace(cfg, backend="timed_backend"), *a, **k)
    sweep.worker_ahead = worker_ahead
    timed(sweep, "worker_ahead", "worker ahead")
    timed(gpu, "state", "gpu state")
    timed(plan, "make", "plan")
    timed(sweep, "compile_kernels")
    timed(nvrtc, "compile_many")
    timed(sass, "verify_many")
    # the start-up, before the compile begins
    timed(sweep_command, "_check_gpus", "cli gpus check")  # the sweep command's checks (harness/cli/sweep.py)
    timed(sweep_command, "_toolchain", "cli toolchain")
    timed(sweep, "helpers_ahead", "helpers ahead")
    timed(processes.Helpers, "_start_all", "helpers spawn")  # in its own thread
    timed(sweep, "devices", "devices")
    timed(sweep, "compile_first", "compile first")
    timed(sweep, "start_engine", "start engine")
    timed(engine.Engine, "__init__", "engine init")
    timed(engine.Engine, "begin", "engine begin")
    timed(engine.Engine, "run", "engine run")
    timed(engine.Engine, "close", "engine close")
    timed(sweep, "execute")
    timed(plan, "kernels_first", "kernels first")
    timed(sweep, "check_kernels_toolchain", "kernels toolchain check")
    timed(nvrtc, "modules_to_compile", "modules to compile")  # its end: the modules go to the helpers
    os.environ["TIMED_BACKEND_LOG"] = a.timeline + ".worker"
    real_run = sweep.run

    def run(sel, cfg, log=None):
        import dataclasses
        return real_run(sel, dataclasses.replace(cfg, backend="timed_backend"), **({"log": log} if log else {}))
    sweep.run = run
    submit, collect = worker.GpuWorker.submit, worker.GpuWorker.collect

    def submit_(self, *a, **k):
        note("submit")
        return submit(self, *a, **k)

    def collect_(self, *a, **k):
        try:
            return collect(self, *a, **k)
        finally:
            note("collected")
    worker.GpuWorker.submit, worker.GpuWorker.collect = submit_, collect_
    try:
        code = cli.main(["sweep", *a.sweep_args], own_process=True)  # as `python -m harness sweep` runs it
        note("main returned", exit=int(code))
    finally:
        if sampler is not None:  # never left sampling after a sweep that raised (an interrupt, say)
            sampler.kill()
            sampler.wait()
    if sampler is not None:
        RECORDS.extend(cpu_records(a.timeline + ".cpu"))
        RECORDS.sort(key=lambda r: r["t"])  # the machine's records among the sweep's own, in time
        os.unlink(a.timeline + ".cpu")
    with open(a.timeline, "w") as fh:
        for r in RECORDS:
            fh.write(json.dumps(r) + "\n")
        wl = Path(a.timeline + ".worker")
        if wl.exists():
            for line in wl.read_text().splitlines():
                r = json.loads(line)
                r["t"] = round(r["t"] - T0, 4)
                fh.write(json.dumps(r) + "\n")
            wl.unlink()
    return code


if __name__ == "__main__":
    sys.exit(main())
