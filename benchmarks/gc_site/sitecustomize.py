"""How long Python's cyclic garbage collector runs in every Python process of a command (the pytest controller, its
xdist workers, the sweeps' pool processes, the CLI runs the tests start): put this folder first on PYTHONPATH and
name a log file, e.g.

    TC_HARNESS_GC_LOG=/tmp/gc.jsonl PYTHONPATH=benchmarks/gc_site python -m pytest -n auto

Each process appends one JSON line when it exits: its pid, its command line (first 160 characters), the seconds the
collector ran, of them in full (generation 2) collections, the collections of each generation, and the process's
CPU seconds. A process ended by os._exit or a signal writes nothing. Python reads the first sitecustomize on its
path: this one shadows any other the environment has.
"""
import atexit
import gc
import json
import os
import sys
import time

LOG = os.environ.get("TC_HARNESS_GC_LOG")

if LOG:
    began = [0.0]
    spent = {"gc_s": 0.0, "full_s": 0.0, "collections": [0, 0, 0]}

    def on_collection(phase, info):
        if phase == "start":
            began[0] = time.perf_counter()
            return
        took = time.perf_counter() - began[0]
        spent["gc_s"] += took
        spent["collections"][info["generation"]] += 1
        if info["generation"] == 2:
            spent["full_s"] += took

    def write_line():
        line = {"pid": os.getpid(), "argv": " ".join(sys.orig_argv)[:160],
                "xdist_worker": os.environ.get("PYTEST_XDIST_WORKER"), "cpu_s": round(time.process_time(), 2),
                **{k: round(v, 6) if isinstance(v, float) else v for k, v in spent.items()}}
        with open(LOG, "a") as fh:  # one short write a process: lines of processes ending together stay whole
            fh.write(json.dumps(line) + "\n")

    gc.callbacks.append(on_collection)
    atexit.register(write_line)
