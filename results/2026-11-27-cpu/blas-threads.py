"""A sweep's helpers started as the command line starts them (one_shot_process, engine.helpers_for_jobs), on a
machine where each helper is up before the next is started (the pool's process start slowed by SLOW seconds): how
many the Helpers thread started, and each helper's threads once it has loaded numpy (OpenBLAS adds one a core
unless its thread count was set in the environment it loaded in). From a tree's root:
    python blas-threads.py HELPERS SLOW"""
import os
import sys
import time


def threads(_task):  # run in a helper (defined at the top: a spawned helper runs this script again, less its main)
    time.sleep(0.05)
    return os.getpid(), len(os.listdir("/proc/self/task"))


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    from concurrent.futures import process as futures_process
    from harness.run import engine, processes
    real = futures_process.ProcessPoolExecutor._spawn_process

    def slow(self):
        real(self)
        time.sleep(float(sys.argv[2]))
    futures_process.ProcessPoolExecutor._spawn_process = slow
    processes.one_shot_process()
    helpers = engine.helpers_for_jobs(int(sys.argv[1]))
    pool = helpers.executor
    started = len(pool._processes)
    seen = dict(pool.map(threads, range(8 * int(sys.argv[1]))))
    helpers.shutdown()
    print(f"{started} helpers started by Helpers' thread; threads of each helper: {sorted(seen.values())}")
