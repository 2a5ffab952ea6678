"""Hardware requirements are markers: `@pytest.mark.gpu("sm_90a")` skips, with the reason, unless a GPU of
that arch is present (`gpu("sm_100a", "sm_103a")`: one of those). Tests that need CuTe DSL (its cross-checks, and
the simulated GPUs, which read their layouts from it) carry `cute` and skip, with the reason, where the DSL is not
installed (a GPU node without the test extra); under CI (the CI variable set) they fail instead: CI must run every
independent oracle.

Under pytest-xdist (`pytest -n N`) each worker is pinned to one GPU of the node (worker i -> GPU i mod count,
within CUDA_VISIBLE_DEVICES if set) before anything touches CUDA, and the GPU families' kernel tests are grouped
in shards (tests/gpu_sweep.py), so each kernel is launched once, on one GPU.
"""
import gc
import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest


def _pin_xdist_worker_to_one_gpu() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or os.environ.get("TC_HARNESS_PINNED"):
        return
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        ids = [v for v in visible.split(",") if v.strip()]
    else:
        try:  # nvidia-smi, not CUDA: the driver must not be initialised before the pin
            out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
            ids = [str(i) for i, ln in enumerate(out.splitlines()) if ln.startswith("GPU ")]
        except Exception:
            ids = []
    if ids:
        if visible is not None:  # the user's own choice, for the tests that run commands as the user would
            os.environ["TC_HARNESS_USER_CUDA_VISIBLE_DEVICES"] = visible
        os.environ["CUDA_VISIBLE_DEVICES"] = ids[int(worker[2:]) % len(ids)]
        os.environ["TC_HARNESS_PINNED"] = "1"


def _share_the_cores_among_xdist_workers() -> None:
    """Each of N xdist workers gets 1/N of the cores for the pools its sweeps start (harness/run/cores.py), it and
    the CLI processes its tests start; a TC_HARNESS_WORKERS the user set stands."""
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if count and count.isdigit() and not os.environ.get("TC_HARNESS_WORKERS"):
        os.environ["TC_HARNESS_WORKERS"] = str(max(1, (os.cpu_count() or 1) // max(1, int(count))))
    if count:  # and numpy's BLAS one thread per worker (before numpy is imported), not a spinning one per core
        from harness.run.cores import BLAS_THREADS  # imports no numpy
        for v in BLAS_THREADS:
            os.environ.setdefault(v, "1")


def _write_bytecode_in_the_test_session() -> None:
    """Where PYTHONDONTWRITEBYTECODE is set (as on the H100 nodes' images), every run and every xdist worker compiled
    and assert-rewrote every module again: `pytest --collect-only` took 5.4-6.0 s there, 2.8 s with bytecode kept
    (bench7 in docs/performance.md). The test session writes it (into __pycache__ beside the sources,
    which .gitignore leaves out; processes the tests start still write none, and read it);
    TC_HARNESS_TEST_BYTECODE=0, or `python -B` itself, leaves Python as it was set up."""
    if sys.dont_write_bytecode and os.environ.get("PYTHONDONTWRITEBYTECODE") \
            and os.environ.get("TC_HARNESS_TEST_BYTECODE") != "0" and "-B" not in getattr(sys, "orig_argv", ()):
        sys.dont_write_bytecode = False


# Python's cyclic garbage collector took 26 s of the 146 s that the 2 xdist workers of a full run were busy on the 2-core
# CPU machine, and 18-35 s of the 16 workers' time on H100 nodes (2026-11-26, benchmarks/gc_site; 8-10 s since,
# bench10 in docs/performance.md): every full collection walks each object the process holds, and a test
# process holds the items and the plans of every family (about 840,000 objects by the end), so each of its 30-50 full
# collections took 0.1-0.45 s. Fewer full collections
# (the third threshold 100, not 10), what is alive once the tests are collected moved out of the collector's sight,
# and the plans read with it paused (plan.with_collector_paused): 11.5 s here (the CPU note
# 2026-11-26 garbage-collector.txt in docs/performance.md). Cycles the tests make are still collected; what is frozen
# lives all session anyway.
FULL_COLLECTION_THRESHOLD = 100


def _collect_garbage_less_often() -> None:
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_THRESHOLD)


def pytest_collection_finish(session):
    warn_if_xdist_groups_were_lost(session)
    tell_the_gpu_sweep_its_families(session)
    gc.collect()
    gc.freeze()


def tell_the_gpu_sweep_its_families(session) -> None:
    """The GPU kernel tests' sweep (tests/gpu_sweep.py) launches the kernels of the families whose kernel tests are
    selected, after -k and -m have deselected (`pytest -k wgmma_sp tests/test_families_gpu.py` launches the sparse
    kernels alone), in each xdist worker as in a plain run."""
    module = sys.modules.get("tests.gpu_sweep")
    if module is None:  # no GPU kernel test collected
        return
    module.session_sweep().families_selected = {
        str(k.family) for it in session.items
        for k in [getattr(getattr(it, "callspec", None), "params", {}).get("kernel")] if hasattr(k, "family")}


# pytest-xdist (3.8.0 and before) tells the controller an item's group by appending "@<group>" to the item's node id
# in the worker, through a field pytest 9.2.0 no longer reads its ids from: the groups are dropped in silence, every
# test is handed out alone, and each worker builds the module fixtures and GPU shards of whatever tests it is given
# (pytest-dev/pytest-xdist#1386; the CI run on 2 cores took 340 s, not 275 s: the CPU note 2026-11-27 dependencies.txt
# in docs/performance.md). The test extra keeps pytest below 9.2; where another pytest is installed the run says why it
# is slow, in its warnings summary. The check reads xdist's own channel, the "@<group>" suffix: an xdist that passes
# groups some other way would set it off on every run, and tests/test_xdist_grouping.py's run without it would then
# fail.
def warn_if_xdist_groups_were_lost(session) -> None:
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [it.nodeid for it in session.items if it.get_closest_marker("xdist_group") and "@" not in it.nodeid]
    if lost:
        xdist_version = getattr(sys.modules.get("xdist"), "__version__", "?")
        warnings.warn(pytest.PytestWarning(
            f"pytest {pytest.__version__} with pytest-xdist {xdist_version} dropped "
            f"the xdist_group of {len(lost)} tests (pytest-dev/pytest-xdist#1386), so modules' fixtures and GPU "
            f"shards are built on several workers; install pytest<9.2 (pip install -e '.[test]')"))


_write_bytecode_in_the_test_session()
_pin_xdist_worker_to_one_gpu()
_share_the_cores_among_xdist_workers()
ROOT = Path(__file__).resolve().parent

from harness.run import gpu  # noqa: E402  (after the pin)


# what the models and the compile path import (module, its distribution): a Python without them is not a harness's.
# Not every distribution of pyproject.toml: a GPU node's image may bring nvdisasm outside pip (harness/run/sass.py
# finds it), and CuPy is imported by the GPU's processes alone
REQUIRED_MODULES = (("numpy", "numpy"), ("ml_dtypes", "ml_dtypes"), ("cuda.bindings", "cuda-bindings"),
                    ("matplotlib", "matplotlib"))


def missing_dependencies(required=REQUIRED_MODULES) -> list[str]:
    """The distributions of `required` whose module this Python cannot import."""
    import importlib.util
    missing = []
    for module, distribution in required:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package (cuda) missing
            found = False
        if not found:
            missing.append(distribution)
    return missing


def pytest_configure(config):
    # a Python without the harness installed (the system one, beside the venv the README makes) fails every test
    # that imports a model: one line that says so, not a collection traceback
    missing = missing_dependencies()
    if missing:
        pytest.exit(f"this Python ({sys.executable}) lacks the harness's dependencies {', '.join(missing)}: install "
                    f"it as the README says, in a venv: pip install -e '.[test]'", returncode=4)
    _collect_garbage_less_often()
    # Under pytest -n, tests of one group run on one worker: a module's tests unless it is marked `spread` (its
    # module-scoped fixtures, kernels compiled, CuTe DSL evaluated, CUTLASS oracles run, are built once, not once
    # per worker), and the cases of the GPU session sweep. The controller schedules by group ('loadgroup'); a
    # worker only tags its items with their group when told so (xdist resets a worker's own --dist), which
    # pytest_configure_node below does.
    if getattr(config.option, "dist", None) == "load":
        config.option.dist = "loadgroup"
    if getattr(config.option, "dist", None) == "loadgroup" and hasattr(config.option, "loadscopereorder"):
        # hand the groups out in the order pytest_collection_modifyitems gives (the heaviest first), not xdist's
        # default (the groups with the most tests first), which left one-test modules of half a minute (the planted
        # fault robustness test) to start last on an H100 node
        config.option.loadscopereorder = False
    if getattr(config, "workerinput", {}).get("tc_harness_loadgroup"):
        config.option.loadgroup = True


if importlib.util.find_spec("xdist") is not None:  # a hook of pytest-xdist's: unknown (an error) without it
    def pytest_configure_node(node):  # on the controller, one call per worker
        node.workerinput["tc_harness_loadgroup"] = node.config.getoption("dist") == "loadgroup"


# Seconds each heavy module took in a CI-like run (2 cores, cold compile cache; 2026-11-26, after the CuTe oracles
# were evaluated from their layouts' shapes and strides). Only the order in which xdist hands out the groups depends
# on it: the heaviest go first, so no worker is left running a minute-long module alone at the end. A stale or
# missing entry costs time, never correctness.
MODULE_SECONDS = {
    "tests/test_tcgen05.py": 45, "tests/run/test_sim_engine.py": 34, "tests/test_tcgen05_vs_cutlass.py": 26,
    "tests/run/test_sim_tcgen05.py": 22, "tests/test_readme.py": 21, "tests/test_tcgen05_probe.py": 19,
    "tests/test_wgmma_seq.py": 17, "tests/test_toolchain.py": 13, "tests/test_tcgen05_rules.py": 30,
    # spread modules (each test its own group, weighing its share): measured alike, 2 workers
    "tests/run/test_modules.py": 23, "tests/test_xdist_grouping.py": 17, "tests/test_cli.py": 12,
    "tests/test_benchmarks.py": 11, "tests/test_addresses.py": 8, "tests/test_cli_fuzz.py": 6,
    "tests/test_mass_faults.py": 5, "tests/test_cli_inputs.py": 2,
    "tests/test_environments.py": 90,  # spread, warm venvs (a cold machine builds them: minutes)
    "tests/test_fragments_probe.py": 7, "tests/test_gpu_sweep.py": 7, "tests/test_nvrtc.py": 7,
    "tests/test_cute_oracle.py": 5,
    # on an H100 node (16 cores, cold compile cache; 2026-11-23): the GPU modules with one long test
    "tests/test_robustness_gpu.py": 56, "tests/test_addresses_gpu.py": 29, "tests/test_driver_jit_gpu.py": 14,
}
# Where the GPU tests run (a gpu-sweep shard is collected), the groups go out by the seconds each took on an H100
# node instead (16 cores, 16 workers, cold compile cache): every group of 2 s or more in two README runs of
# bench25 in docs/performance.md (a middling node and a slower one), their mean, by
# benchmarks/group_seconds.py; a spread module's entry is its tests' sum. Ranked by the table above, measured on 2
# cores, CPU modules that take a third of that on a node went ahead of the GPU shards, and the worker whose shard
# started 14 s late ended the README run there (62 s); a module in neither table weighs 0 and goes out last:
# test_plan.py (12 s) ended a run 9 s after most workers had finished (bench18 in docs/performance.md), and
# test_early_compile.py (16 s, its tests of the helpers added since bench18's table) began at 43 s and ended the
# slower node's run at 59.6 s (bench25).
NODE_GROUP_SECONDS = {
    "test_xdist_grouping": 26, "test_benchmarks": 23, "test_plan": 20, "test_modules": 19,
    "test_robustness_gpu-hang": 17, "test_early_compile": 16, "test_addresses_gpu": 16, "test_robustness_gpu-faults": 14,
    "test_driver_jit_gpu": 13, "test_toolchain": 11, "test_wgmma_seq": 11,
    "test_timing": 10, "test_report": 9, "test_packaging": 9, "test_tcgen05": 9, "test_addresses": 8,
    "test_tcgen05-sass": 7, "test_sf_probe": 6, "test_results_schema": 6, "test_tcgen05_probe-draws-smem": 5,
    "test_sass": 5, "test_cli_fuzz": 5, "test_readme": 4, "test_processes": 4, "test_pipeline": 4,
    "test_tcgen05_probe-draws-tmem": 4, "test_nvrtc_versions": 4, "test_descriptors": 4, "test_worker": 3,
    "test_cli_inputs": 3, "test_checked_set": 2, "test_sweep_on_other_gpus": 2,
    # test_nvrtc's 16 s there, its RS pipeline test (7.4 s of them, one compile after the other) a group of its own since
    "test_nvrtc": 9, "test_nvrtc-rspipe": 7,
}
# A spread module's tests of 2 s or more on a node (the same two runs, `group_seconds.py --tests`): each weighs its own
# seconds there, not an even share of its module's. As a share, test_addresses.py's PNG test (4.3 s of the module's 11,
# 1/80 of them) went out among the last and ended README runs 3.7-6.1 s after most workers had finished
# (bench18 in docs/performance.md).
NODE_SPREAD_TEST_SECONDS = {
    "test_benchmarks::test_bench_host_digests_the_same_preparation_alike_from_a_fresh_plan_and_a_cached_one": 6,
    "test_xdist_grouping::test_a_worker_on_a_long_lone_test_is_not_handed_the_next_heavy_group_meanwhile": 5,
    "test_benchmarks::test_bench_compile_compiles_and_checks_every_kernel_of_a_selection_on_an_empty_cache": 5,
    "test_xdist_grouping::test_a_spread_modules_tests_go_to_whichever_worker_is_free": 5,
    "test_modules::test_each_kernel_of_a_shared_module_has_the_code_it_has_alone[wgmma-sm_90a]": 4,
    "test_benchmarks::test_the_pytest_timeline_says_which_worker_ran_what_and_when": 4,
    "test_modules::test_each_kernel_of_a_shared_module_has_the_code_it_has_alone[wgmma_sp-sm_90a]": 4,
    "test_modules::test_each_kernel_of_a_shared_module_has_the_code_it_has_alone[wgmma_seq-sm_90a]": 3,
    "test_cli_fuzz::test_a_malformed_results_file_is_named_with_its_line": 3,
    "test_modules::test_each_kernel_of_a_shared_module_has_the_code_it_has_alone[tcgen05-sm_100a]": 3,
    "test_xdist_grouping::test_modules_and_named_groups_each_stay_on_one_worker": 3,
    "test_xdist_grouping::test_a_pytest_that_drops_the_groups_is_named_in_the_runs_warnings": 3,
    "test_xdist_grouping::test_where_gpu_shards_are_collected_the_node_table_orders_the_groups": 2,
    "test_plan::test_where_the_plan_cannot_be_written_the_waiting_processes_build_at_once": 2,
    "test_xdist_grouping::test_the_heaviest_group_is_handed_out_first": 2,
    "test_xdist_grouping::test_a_spread_modules_tests_weigh_their_share_of_its_seconds": 2,
    "test_modules::test_a_kernel_nvrtc_rejects_is_named_alone_and_its_module_mates_still_build": 2,
    "test_plan::test_a_family_planned_in_parts_has_in_them_the_kernels_and_cases_of_its_whole_plan[wgmma_sp]": 2,
    "test_plan::test_a_family_planned_in_parts_has_in_them_the_kernels_and_cases_of_its_whole_plan[wgmma]": 2,
    # test_early_compile.py, spread since (its 16 s in one group ended two of bench25's runs), its tests' seconds there
    "test_early_compile::test_launches_are_prepared_while_the_kernels_compile": 6,
    "test_early_compile::test_a_sweep_with_a_gpu_compiles_on_its_engines_helpers[helpers-ahead-compiled-while-planned]": 2,
    "test_early_compile::test_a_sweep_with_a_gpu_compiles_on_its_engines_helpers[helpers-ahead-compiled-after-the-plan]": 2,
    "test_early_compile::test_a_sweep_with_a_gpu_compiles_on_its_engines_helpers[helpers-with-the-engine-compiled-after-the-plan]": 2,
    "test_early_compile::test_a_sweep_with_a_gpu_compiles_on_its_engines_helpers[helpers-with-the-engine-compiled-while-planned]": 2,
}
# A shard of the GPU families' kernel tests (tests/gpu_sweep.py: a worker's part of the compiling, preparing and
# launching; about 1/16 of the plan on a 16-core node: 15-23 s there, cold). Ranked above every other group: xdist
# gives a worker whose first group holds two tests or fewer a second group at once, so with one-test groups (the
# planted fault and hang, 20-22 s) first, two shards waited behind them from the start.
GPU_SHARD_SECONDS = 25
# A module the node table lacks (measured there without the test extra, so the CuTe and CUTLASS oracle modules are
# missing) weighs its CI seconds over this: CPU modules took a third of their CI time or less on the node.
CI_SECONDS_PER_NODE_SECOND = 3


def group_seconds(group: str, path: str, gpu_run: bool) -> float:
    """The weight that orders an xdist group: its seconds in the table of the machine kind this run is on."""
    if str(group).startswith("gpu-sweep-"):
        return GPU_SHARD_SECONDS
    if not gpu_run:
        return MODULE_SECONDS.get(path, 0)
    return NODE_GROUP_SECONDS.get(str(group), MODULE_SECONDS.get(path, 0) / CI_SECONDS_PER_NODE_SECOND)


@pytest.hookimpl(tryfirst=True)  # before xdist tags each item's node id with the groups of its markers
def pytest_collection_modifyitems(config, items):
    grouped = bool(getattr(getattr(config, "option", None), "loadgroup", False))
    for item in items:
        if grouped and item.get_closest_marker("xdist_group") is None and item.get_closest_marker("spread") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module else item.nodeid))
    if grouped:  # the same order on every worker (xdist checks): a pure function of the collected items
        # a `spread` test is a group of its own (xdist's scope of an item with no group is its node id); it weighs
        # its share of its module's seconds, so the quick spread tests come after every heavy group and fill the
        # workers' tails (a module of 40 CLI tests, 35 s on one worker of an H100 node, ended the run 10-16 s after
        # most workers were idle), while a spread module of slow tests goes out with the groups of their size (the
        # inner pytest runs of test_xdist_grouping, 5 s each there, ended the README run when they came last:
        # bench9 in docs/performance.md)
        group_of = [m.args[0] if (m := it.get_closest_marker("xdist_group")) else it.nodeid for it in items]
        first, weight = {}, {}
        gpu_run = any(str(g).startswith("gpu-sweep-") for g in group_of)
        path_of = [os.path.relpath(str(it.path), ROOT).replace(os.sep, "/") for it in items]
        spread_in: dict = {}  # a spread module's tests, each its own group: they share the module's seconds
        for it, g, path in zip(items, group_of, path_of):
            if g == it.nodeid:
                spread_in[path] = spread_in.get(path, 0) + 1
        for i, (it, g, path) in enumerate(zip(items, group_of, path_of)):
            first.setdefault(g, i)
            if g == it.nodeid:  # a spread test: its own seconds where the node table has them, else its share of
                module = it.module.__name__ if it.module else it.nodeid  # its module's (0 for one in no table)
                own = NODE_SPREAD_TEST_SECONDS.get(f"{Path(path).stem}::{it.nodeid.split('::', 1)[-1]}") \
                    if gpu_run else None
                weight.setdefault(g, own if own is not None else group_seconds(module, path, gpu_run) / spread_in[path])
            else:
                weight.setdefault(g, group_seconds(g, path, gpu_run))
        companion = give_companions(items, group_of, path_of, weight, first)
        order = {id(it): (-weight[g], first[g], id(it) in companion, i)
                 for i, (it, g) in enumerate(zip(items, group_of))}
        items.sort(key=lambda it: order[id(it)])
    skip_or_fail_gpu_tests(items)
    skip_or_fail_cute_tests(items)


# xdist hands a worker its next group as soon as it has two tests or fewer to run (its `_reschedule`), counting the
# one running: a worker that took up a group of one long test (the planted hang, 19 s on an H100 node) was handed
# the next heavy group at once and held it while the hang ran, and ended the README run 8 s after most workers were
# idle (bench9 in docs/performance.md, pytest_timeline). Two quick tests that run anywhere (`spread`, from
# QUICK_SPREAD_MODULES: the CLI's input checks, 89 tests of hundredths of a second) go after the long one in its
# group, so that the worker asks for more work only when the long test is done.
HEAVY_GROUP_SECONDS = 5
COMPANIONS = 2
QUICK_SPREAD_MODULES = ("tests/test_cli_inputs.py",)


def give_companions(items, group_of: list, path_of: list, weight: dict, first: dict) -> set:
    """Move COMPANIONS spread tests into each heavy named group of one test (their xdist_group marker and
    `group_of` entry), the heaviest group first; returns the ids of the moved items. A pure function of the
    collected items, so every worker agrees. A spread test is no named group: it gets none."""
    count: dict = {}
    for g in group_of:
        count[g] = count.get(g, 0) + 1
    named = {g for it, g in zip(items, group_of) if g != it.nodeid}
    lonely = sorted((g for g in named if count[g] == 1 and weight[g] >= HEAVY_GROUP_SECONDS),
                    key=lambda g: (-weight[g], first[g]))
    spare = [i for i, (it, g, path) in enumerate(zip(items, group_of, path_of)) if g == it.nodeid
             and path in QUICK_SPREAD_MODULES and it.get_closest_marker("gpu") is None]
    moved = set()
    for g, i in ((g, i) for n, g in enumerate(lonely) for i in spare[n * COMPANIONS:(n + 1) * COMPANIONS]):
        items[i].add_marker(pytest.mark.xdist_group(g))
        group_of[i] = g
        moved.add(id(items[i]))
    return moved


CUTE_MISSING = "nvidia-cutlass-dsl is not installed (pip install -e '.[test]'): CuTe DSL is this test's oracle"


def cute_dsl_missing() -> bool:
    return importlib.util.find_spec("cutlass") is None


def skip_or_fail_cute_tests(items):
    if not cute_dsl_missing() or os.environ.get("CI"):
        return  # under CI, pytest_runtest_setup fails them
    for item in items:
        if item.get_closest_marker("cute") is not None:
            item.add_marker(pytest.mark.skip(reason=CUTE_MISSING))


def skip_or_fail_gpu_tests(items):
    broken = gpu.unusable()  # a GPU is here but CUDA fails: GPU tests must fail, not skip (no false green)
    for item in items:
        m = item.get_closest_marker("gpu")
        if m is not None and broken:
            continue  # pytest_runtest_setup fails it
        if m is not None:  # gpu(arch, ...): runs where a GPU of any of the archs is
            reasons = [gpu.skip_reason(a) for a in (m.args or ("sm_90a",))]
            if all(reasons):
                item.add_marker(pytest.mark.skip(reason=reasons[0] if len(reasons) == 1 else
                                                 f"needs a {' or '.join(m.args)} GPU; " + reasons[0].split("; ", 1)[1]))


def pytest_runtest_setup(item):
    if item.get_closest_marker("gpu") is not None and gpu.unusable():
        pytest.fail(f"the GPU here is unusable: {gpu.unusable()}", pytrace=False)
    if item.get_closest_marker("cute") is not None and os.environ.get("CI") and cute_dsl_missing():
        pytest.fail(f"under CI every oracle must run: {CUTE_MISSING}", pytrace=False)


def pytest_unconfigure(config):
    """Every process of the run (the controller, each xdist worker) waits for the fork server it started: the CPU time
    of the helpers the tests' pools and GPU workers ran then counts in the run's (harness/run/processes.py)."""
    from harness.run import processes
    processes.stop_fork_server()
