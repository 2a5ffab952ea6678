"""harness/run/cores.py: how many processes the pools start, and the one BLAS thread each of them gets."""
import os

from harness.run import cores
from harness.run.engine import Engine


def test_the_worker_count_in_the_environment_sizes_the_pools(monkeypatch):
    monkeypatch.setenv(cores.ENV, "3")
    assert cores.default_workers() == 3
    engine = Engine([], None)
    engine.close()
    assert engine.nworkers == 3
    monkeypatch.delenv(cores.ENV)
    assert cores.default_workers() == (os.cpu_count() or 1)


def test_the_engine_pool_runs_blas_on_one_thread_and_leaves_this_process_as_it_was(monkeypatch):
    for v in cores.BLAS_THREADS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "4")  # a thread count the user set stands
    engine = Engine([], 2)
    try:
        seen = set(engine.pool.map(os.getenv, ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"] * 2))
        values = list(engine.pool.map(os.getenv, ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"]))
    finally:
        engine.close()
    assert values == ["1", "1", "4"] and seen == {"1", "4"}
    assert os.getenv("OPENBLAS_NUM_THREADS") is None and os.getenv("OMP_NUM_THREADS") is None
