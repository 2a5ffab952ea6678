"""How many processes the sweep's pools (compiling, preparing and reading back, SASS checks) start when the caller
names no number: every core, or TC_HARNESS_WORKERS. Under `pytest -n N` the node's cores are shared by N test
processes, each of which may run sweeps: conftest.py sets TC_HARNESS_WORKERS to each one's share, so that sixteen
workers do not each start sixteen-process pools (on an H100 node that oversubscription tripled the time of the
CPU-heavy tests; results/2026-11-23-h100-bench2/)."""
from __future__ import annotations

import os

ENV = "TC_HARNESS_WORKERS"


def default_workers() -> int:
    given = os.environ.get(ENV, "").strip()
    if not given:
        return os.cpu_count() or 1
    if not given.isdigit() or int(given) < 1:
        raise ValueError(f"{ENV}={given!r}: want a positive whole number of processes")
    return int(given)
