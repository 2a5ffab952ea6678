"""How many processes the sweep's pools (compiling, preparing and reading back, SASS checks) start when the caller
names no number: every core, or TC_HARNESS_WORKERS. Under `pytest -n N` the node's cores are shared by N test
processes, each of which may run sweeps: conftest.py sets TC_HARNESS_WORKERS to each one's share, so that sixteen
workers do not each start sixteen-process pools (on an H100 node that oversubscription tripled the time of the
CPU-heavy tests; bench2 in docs/performance.md)."""
from __future__ import annotations

import os
from contextlib import contextmanager

ENV = "TC_HARNESS_WORKERS"


def default_workers() -> int:
    given = os.environ.get(ENV, "").strip()
    if not given:
        return os.cpu_count() or 1
    if not given.isdigit() or int(given) < 1:
        raise ValueError(f"{ENV}={given!r}: want a positive whole number of processes")
    return int(given)


# numpy's BLAS (OpenBLAS in the wheels) starts a thread per core in every process and lets them spin between calls:
# sixteen pool processes of sixteen threads each on a 16-core node slowed the sweep's preparation twofold (the
# reference's small matrix products gain nothing from threads). Processes the harness starts get one thread each.
BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


@contextmanager
def one_blas_thread_per_process():
    """Within this block, processes started (they take this environment) run BLAS on one thread, unless
    the user set the thread counts; this process's own environment is as it was afterwards."""
    added = set_one_blas_thread()
    try:
        yield
    finally:
        unset(added)


def set_one_blas_thread() -> list[str]:
    """The thread counts one_blas_thread_per_process sets, set until `unset` of what this returns (for a block that
    ends in another thread)."""
    added = [v for v in BLAS_THREADS if v not in os.environ]
    for v in added:
        os.environ[v] = "1"
    return added


def unset(added: list[str]) -> None:
    for v in added:
        os.environ.pop(v, None)
