"""The GPU test modules' one way to run a family's plan: the sweep's engine (parallel cached compile, SASS check,
batched launches), with each case then its own test, its own id and its own failure message.

The plan is split into shards of whole kernels, as many as pytest-xdist workers (one shard without xdist), balanced
by case count. Each shard is an xdist group, so under `pytest -n N` the shards spread over the workers (about one
each: the scheduler may hand a worker two) and a worker
compiles and launches only the shards it was handed, the first time it is asked for one of their cases: on a
16-core GPU node the launches, the read-back and the ~55,000 test items are shared 16 ways instead of each family
landing on one worker.
"""
import dataclasses
import os

import pytest

from harness import sweep
from harness.records import results


def worker_count() -> int:
    """The number of xdist workers this session has (PYTEST_XDIST_WORKER_COUNT is set on each worker), else 1."""
    return max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1))


class ShardedSweep:
    """One family's plan as test parameters and, per shard, the records of one run of the engine."""

    def __init__(self, name: str, plan, shards: int | None = None, config: sweep.SweepConfig | None = None):
        self.name = name
        self.plan = plan
        self.shards = shards or worker_count()
        # the engine's settings for every shard (out_path and workers are set per shard); the real GPU by default
        self.config = config or sweep.SweepConfig(diagnose=0)
        load = [0] * self.shards
        self.shard_of_kernel: dict[str, int] = {}
        # largest kernels first onto the least-loaded shard: deterministic, so every worker computes the same map
        work = plan.work if plan else []
        for kernel, cases in sorted(work, key=lambda kc: (-len(kc[1]), kc[0].name)):
            s = min(range(self.shards), key=lambda i: (load[i], i))
            self.shard_of_kernel[kernel.name] = s
            load[s] += len(cases)
        self.shard_of_case = {c.id: self.shard_of_kernel[k.name] for k, cs in work for c in cs}
        self.records: dict[int, dict] = {}
        self.failures: dict[int, BaseException] = {}  # a shard whose run raised: its cases re-raise, not re-run

    def params(self) -> list:
        """One pytest.param per case, id = case id, grouped by shard; a single placeholder without a plan (the
        tests then skip with the GPU marker's reason)."""
        if not self.plan:
            return [pytest.param(None, id=f"{self.name}-cases")]
        return [pytest.param(c, id=c.id, marks=pytest.mark.xdist_group(f"{self.name}-{self.shard_of_kernel[k.name]}"))
                for k, cs in self.plan.work for c in cs]

    def record(self, case, tmp_path_factory) -> dict:
        """The case's result record, running its shard through the engine the first time the shard is asked for."""
        s = self.shard_of_case[case.id]
        if s in self.failures:
            raise self.failures[s]
        if s not in self.records:
            try:
                self.records[s] = self._run_shard(s, tmp_path_factory)
            except BaseException as e:
                self.failures[s] = e
                raise
        recs = self.records[s]
        assert case.id in recs, f"the sweep wrote no record for {case.id} (shard {s} of {self.shards})"
        return recs[case.id]

    def _run_shard(self, s: int, tmp_path_factory) -> dict:
        sub = dataclasses.replace(
            self.plan, work=[(k, cs) for k, cs in self.plan.work if self.shard_of_kernel[k.name] == s],
            compile_only=self.plan.compile_only if s == 0 else [])
        out = tmp_path_factory.mktemp(f"{self.name}-{s}") / "sweep.jsonl"
        workers = max(1, (os.cpu_count() or 1) // worker_count())  # the node's cores are shared by the workers
        summary = sweep.execute(sub, dataclasses.replace(self.config, out_path=out, workers=workers),
                                log=lambda m: None)
        # kernels compiled for another arch only have no cases: their rejection would otherwise fail no test
        with_cases = {k.name for k, _ in sub.work}
        rejected = [e for e in summary.get("compile_errors", []) if e.get("kernel") not in with_cases]
        assert not rejected, f"compile-only kernels of shard {s} did not build: {rejected}"
        return results.load(out)[1]
