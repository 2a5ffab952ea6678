"""A helper process's start, spawned against forked by the fork server (harness/run/processes.py): three pools of two
helpers each (the engine's initializer, ready_for_jobs), their CPU time as this process's children's. Run from the
tree's root: PYTHONPATH=. python results/2026-11-27-cpu/helper-start.py spawn|forkserver"""
import os
import resource
import sys
import time

from harness.run import processes
from harness.run.engine import ready_for_jobs


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(method: str) -> None:
    processes.start_method = method
    before, t = children_cpu(), time.time()
    for _ in range(3):
        with processes.pool(2, ready_for_jobs) as helpers:
            list(helpers.map(int, [1, 2]))
    processes.stop_fork_server()  # the forked helpers' time counts once the server that reaped them is waited for
    print(f"{method}: 6 helpers, wall {time.time() - t:.2f} s, CPU {children_cpu() - before:.2f} s")


if __name__ == "__main__":
    main(sys.argv[1])
