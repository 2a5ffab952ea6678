"""The GPU test modules' one way to run the GPU families: the sweep's engine (parallel cached compile, SASS check,
batched launches) over one plan of every family with a GPU of its arch here, with each kernel then its own test.

One test per kernel, not per case: a kernel's cases are one launch, and a kernel test fails with every failing case
named by its id and explained (status, mismatches with their thread and register or lane and column, what a control
read). With one test per case (~55,000 items through pytest-xdist's controller) the README test command took 248 s
cold and 163 s warm on an H100 node where the whole sweep took 64 s and 24 s (the 2026-11-23 bench in
docs/performance.md); a per-case record of every run is what `python -m harness sweep --junit FILE` writes for CI
dashboards.

The plan is split into shards of whole kernels, as many as pytest-xdist workers (one shard without xdist), balanced
by case count. Each shard is an xdist group of the kernel tests (tests/test_families_gpu.py), so under `pytest -n N`
a worker compiles and launches the kernels of about one shard, of every family at once, the first time one of its
kernels' tests runs.
"""
import dataclasses
import json
import os
from functools import lru_cache

import pytest

from harness import plan as planning, registry, sweep
from harness.records import results
from harness.run import cores, gpu

# what a failure message leaves out of a case's record: the same for every case of a kernel, or bookkeeping
UNEXPLAINING = ("type", "id", "kernel", "family", "arch", "gpu", "kernel_s", "status")
MAX_EXPLAINED = 12  # failing cases a kernel's failure explains in full (it counts and names the rest)


def worker_count() -> int:
    """The number of xdist workers this session has (PYTEST_XDIST_WORKER_COUNT is set on each worker), else 1."""
    return max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1))


def case_problem(control: bool, rec: dict, kernel_name: str) -> str | None:
    """Why a case's record is not what its test wants, or None: every case passes under its own kernel, and a
    negative control is also caught, not reading other than the model predicts (a tcgen05 control whose result
    the PTX ISA leaves undefined has no prediction to read: None)."""
    if rec.get("kernel") != kernel_name:
        return f"recorded under kernel {rec.get('kernel')!r}"
    if rec["status"] != "pass":
        return rec["status"]
    if control and (not rec.get("caught") or rec.get("matches_model_prediction") is False):
        return "control not caught as predicted"
    return None


def explain(case_id: str, problem: str, rec: dict) -> str:
    detail = {k: v for k, v in rec.items() if k not in UNEXPLAINING}
    unsettled = (" (this case rests on an unsettled reading of the spec: its failure settles it the other way, "
                 "see results/FINDINGS.md)" if rec.get("unsettled") else "")
    return f"{case_id}: {problem}{unsettled}\n{json.dumps(detail, indent=1, default=str)}"


class ShardedSweep:
    """A plan as one test parameter per kernel and, per shard, the records of one run of the engine."""

    def __init__(self, plan, shards: int | None = None, config: sweep.SweepConfig | None = None):
        self.plan = plan
        self.shards = shards or worker_count()
        # the engine's settings for every shard (out_path and workers are set per shard); the real GPU by default.
        # No launch is kept: a test run leaves no 6 GB in the cache, and its cold run (the README's goal) writes none;
        # a warm README run keeping them took 34.8 s, the code before them 36.1 s (bench12 in
        # docs/performance.md): little to gain there, where the GPU shards are a part of the run
        self.config = config or sweep.SweepConfig(diagnose=0)
        load = [0] * self.shards
        self.shard_of_kernel: dict[str, int] = {}
        # largest kernels first onto the least-loaded shard: deterministic, so every worker computes the same map
        work = plan.work if plan else []
        for kernel, cases in sorted(work, key=lambda kc: (-len(kc[1]), kc[0].name)):
            s = min(range(self.shards), key=lambda i: (load[i], i))
            self.shard_of_kernel[kernel.name] = s
            load[s] += len(cases)
        self.cases_of = {k.name: cs for k, cs in work}
        # the families whose kernel tests this session selected (conftest.py, after -k and -m): None, every family
        self.families_selected: set[str] | None = None
        self.records: dict[int, dict] = {}
        self.failures: dict[int, BaseException] = {}  # a shard whose run raised: its kernels re-raise, not re-run

    def params(self, family: str) -> list:
        """One pytest.param per kernel of `family`, id = kernel name, grouped by shard; a single placeholder where
        the plan has none (the tests then skip with the GPU marker's reason)."""
        kernels = [k for k, _ in self.plan.work if str(k.family) == family] if self.plan else []
        if not kernels:
            return [pytest.param(None, id=f"{family}-kernels")]
        return [pytest.param(k, id=k.name, marks=pytest.mark.xdist_group(f"gpu-sweep-{self.shard_of_kernel[k.name]}"))
                for k in kernels]

    def check_kernel(self, kernel, tmp_path_factory) -> int:
        """Assert that every case of `kernel` does what its test wants, running its shard through the engine the
        first time the shard is asked for; the failure names and explains each case that does not. Returns the
        number of cases checked."""
        s = self.shard_of_kernel[kernel.name]
        if s in self.failures:
            raise self.failures[s]
        if s not in self.records:
            try:
                self.records[s] = self._run_shard(s, tmp_path_factory)
            except BaseException as e:
                self.failures[s] = e
                raise
        recs, fam = self.records[s], registry.get(kernel.family)
        cases = self.cases_of[kernel.name]
        missing = [c.id for c in cases if c.id not in recs]
        assert not missing, (f"the sweep wrote no record for {len(missing)} of {kernel.name}'s {len(cases)} cases "
                             f"(shard {s} of {self.shards}): {', '.join(missing[:5])}")
        bad = [(c.id, problem, recs[c.id]) for c in cases
               for problem in [case_problem(bool(fam.facets_of(c).get("control")), recs[c.id], kernel.name)]
               if problem]
        if bad:
            shown = "\n".join(explain(*b) for b in bad[:MAX_EXPLAINED])
            rest = (f"\n... and {len(bad) - MAX_EXPLAINED} more: {', '.join(i for i, _, _ in bad[MAX_EXPLAINED:])}"
                    if len(bad) > MAX_EXPLAINED else "")
            pytest.fail(f"{len(bad)} of {kernel.name}'s {len(cases)} cases fail (each: python -m harness sweep "
                        f"--match ID):\n{shown}{rest}", pytrace=False)
        return len(cases)

    def _run_shard(self, s: int, tmp_path_factory) -> dict:
        # the shard's kernels of the families whose tests this session selected (`pytest -k wgmma_sp
        # tests/test_families_gpu.py` launches the sparse kernels alone)
        asked = self.families_selected if self.families_selected is not None else {str(k.family) for k, _ in
                                                                                   self.plan.work}
        sub = dataclasses.replace(
            self.plan, work=[(k, cs) for k, cs in self.plan.work
                             if self.shard_of_kernel[k.name] == s and str(k.family) in asked],
            compile_only=[k for k in self.plan.compile_only if str(k.family) in asked] if s == 0 else [])
        out = tmp_path_factory.mktemp(f"gpu-sweep-{s}") / "sweep.jsonl"
        workers = cores.default_workers()  # this xdist worker's share of the node's cores (conftest.py)
        summary = sweep.execute(sub, dataclasses.replace(self.config, out_path=out, workers=workers),
                                log=lambda m: None)
        # kernels compiled for another arch only have no cases: their rejection would otherwise fail no test
        with_cases = {k.name for k, _ in sub.work}
        rejected = [e for e in summary.get("compile_errors", []) if e.get("kernel") not in with_cases]
        assert not rejected, f"compile-only kernels of shard {s} did not build: {rejected}"
        return results.load(out)[1]


def gpu_plan():
    """One plan of every family with a GPU of one of its archs here (cases planned for the first such arch; of
    those a family plans for its other archs, only the ones a GPU here runs), or None without one."""
    here = {}
    for fam in registry.all_families():
        arch = next((a for a in map(str, fam.archs) if gpu.skip_reason(a) is None), None)
        if arch:
            here[str(fam.name)] = arch
    if not here:
        return None
    plan = planning.make(planning.Selection(families=tuple(here)), here, cache=True)
    # a family that plans each arch's own forms (plans_every_arch) has cases of archs no GPU here runs: the sweep
    # records those not run, and no kernel test asks them to pass
    return dataclasses.replace(plan, work=[(k, cs) for k, cs in plan.work if gpu.skip_reason(str(k.arch)) is None])


@lru_cache(maxsize=1)
def session_sweep() -> ShardedSweep:
    """The one sharded sweep the GPU test modules share (each imports it; one plan and one run per worker)."""
    return ShardedSweep(gpu_plan())
