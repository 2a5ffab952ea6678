"""The plan cache (harness/plan.py family_kernels): a warm sweep reads every in-tree family's kernels and cases
from the compile cache instead of building them, keyed by the package's own source, so a changed model is never
answered from a stale plan; an out-of-tree family is always asked."""
import gc
import pickle

import pytest

from harness import families, plan
from harness.families import tcgen05


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path))
    return tmp_path


def ids(p: plan.Plan):
    return [(k.name, [c.id for c in cs]) for k, cs in p.work], [k.name for k in p.compile_only]


def test_a_cached_plan_is_the_plan_and_is_read_without_building(private_cache, monkeypatch):
    sel = plan.Selection(families=("tcgen05",))
    built = plan.make(sel, cache=True)
    assert list((private_cache / "plans").glob("tcgen05-*.pkl"))

    def no_building(self, arch):
        raise AssertionError("the plan was built again")
    monkeypatch.setattr(tcgen05.Tcgen05Family, "kernels", no_building)
    assert ids(plan.make(sel, cache=True)) == ids(built)


def test_a_changed_source_builds_the_plan_again(private_cache, monkeypatch):
    sel = plan.Selection(families=("tcgen05",))
    plan.make(sel, cache=True)
    calls = []
    real = tcgen05.Tcgen05Family.kernels
    monkeypatch.setattr(tcgen05.Tcgen05Family, "kernels", lambda self, arch: calls.append(arch) or real(self, arch))
    monkeypatch.setattr(plan, "source_digest", lambda: "a-model-was-edited")
    plan.make(sel, cache=True)
    assert calls, "a plan cached for other sources was used"
    kept = sorted(p.name for p in (private_cache / "plans").glob("tcgen05-sm_100a-*.pkl"))
    assert kept == ["tcgen05-sm_100a-a-model-was-edited.pkl"]  # the other sources' plan is gone


def test_the_digest_covers_the_models_and_the_kernel_templates():
    files = {p.name for p in plan.Path(plan.__file__).resolve().parent.rglob("*") if p.suffix in (".py", ".cu")}
    assert {"layouts.py", "cases.py", "wgmma.cu", "tcgen05.cu"} <= files and len(plan.source_digest()) == 24


def test_an_out_of_tree_family_is_always_asked(private_cache, monkeypatch):
    monkeypatch.setenv(families.EXTRA, "toy=tests.simulated.toy_family")
    plan.make(plan.Selection(families=("toy",)), {"toy": "sm_90a"}, cache=True)
    assert not list((private_cache / "plans").glob("toy-*"))


def test_without_cache_nothing_is_written(private_cache):
    plan.make(plan.Selection(families=("tcgen05",)))
    assert not (private_cache / "plans").exists()


def test_a_selection_of_everything_keeps_every_case_of_every_kernel_in_order(monkeypatch):
    """Without filters, --match or leaving the controls out, the plan takes each kernel's cases as its family lists
    them (without asking each case its facets): every case, none twice, kernels without cases left out."""
    names = ("wgmma_seq", "tcgen05")

    def unasked(case):
        raise AssertionError(f"{case.id}: asked its facets, in a selection of everything")
    with monkeypatch.context() as m:
        for f in map(families.get, names):
            m.setattr(type(f), "facets_of", staticmethod(unasked))
        p = plan.make(plan.Selection(families=names))
    want = [(k.name, [c.id for c in cs]) for f in map(families.get, names) for k, cs in f.kernels(f.archs[0]) if cs]
    assert ids(p)[0] == want and p.cases == sum(len(cs) for _, cs in want)
    ordinary = plan.make(plan.Selection(families=names, controls=False))  # the long way: each case asked
    assert ordinary.cases < p.cases


@pytest.mark.parametrize("warm", [False, True], ids=["built", "read"])
def test_a_plan_is_built_and_read_with_the_collector_paused_and_left_running(private_cache, monkeypatch, warm):
    """While a plan is made the heap grows by the quarter that sets off a full collection time and again: the
    collector is paused while it is built or read, and runs again after."""
    seen = []

    def watched(build):
        def run(*args):
            seen.append(gc.isenabled())
            return build(*args)
        return run
    if warm:
        plan.family_kernels(families.get("tcgen05"), "sm_100a", cache=True)
        for path in [p for p in plan.LOADED_PLANS if private_cache in p.parents]:
            del plan.LOADED_PLANS[path]  # read from the file this time
        monkeypatch.setattr(pickle, "load", watched(pickle.load))
    else:
        monkeypatch.setattr(tcgen05.Tcgen05Family, "kernels", watched(tcgen05.Tcgen05Family.kernels))
    assert plan.family_kernels(families.get("tcgen05"), "sm_100a", cache=True)
    assert seen == [False] and gc.isenabled()


def test_the_collector_is_left_as_it_was_found_whatever_the_build_does():
    def fails():
        raise RuntimeError("no plan")
    with pytest.raises(RuntimeError):
        plan.with_collector_paused(fails)
    assert gc.isenabled()
    gc.disable()
    try:
        plan.with_collector_paused(int)
        assert not gc.isenabled()  # a caller that paused it keeps it paused
    finally:
        gc.enable()


BUILD_SLOWLY = """
import sys, time
from harness import families, plan
from harness.families import tcgen05
real = tcgen05.Tcgen05Family.kernels
def slow(self, arch):  # a build long enough that every process asks while the first is still at it
    with open(sys.argv[1], "a") as fh:
        fh.write(arch + "\\n")
    time.sleep(1.0)
    return real(self, arch)
tcgen05.Tcgen05Family.kernels = slow
print(len(plan.family_kernels(families.get("tcgen05"), "sm_100a", cache=True)))
"""


def test_processes_starting_together_on_an_empty_cache_build_a_plan_once(private_cache, tmp_path):
    """Three processes (as pytest's workers at start) ask for the same uncached plan at once: one builds it while
    the others wait for the lock, then read what it wrote; all get the same plan."""
    import subprocess
    import sys
    log = tmp_path / "builds.txt"
    procs = [subprocess.Popen([sys.executable, "-c", BUILD_SLOWLY, str(log)], stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs) and len(set(outs)) == 1 and int(outs[0]) > 0
    assert log.read_text().splitlines() == ["sm_100a"]  # built once


def test_a_plan_whose_lock_cannot_be_had_is_built_all_the_same(private_cache, monkeypatch):
    """A cache where no lock file can be made (read-only): the plan is built and used, as without the lock."""
    real_open = open

    def no_lock_file(file, *a, **k):
        if str(file).endswith(".lock"):
            raise PermissionError(f"read-only: {file}")
        return real_open(file, *a, **k)
    monkeypatch.setattr("builtins.open", no_lock_file)
    sel = plan.Selection(families=("tcgen05",))
    assert plan.make(sel, cache=True).work
