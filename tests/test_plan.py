"""The plan cache (harness/plan.py family_kernels): a warm sweep reads every in-tree family's kernels and cases
from the compile cache instead of building them, keyed by the package's own source, so a changed model is never
answered from a stale plan; an out-of-tree family is always asked."""
import gc
import pickle

import pytest

from harness import cache, plan, registry
from harness.families import tcgen05

pytestmark = pytest.mark.spread  # no module-scoped fixture: under pytest -n, each test on any free worker


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
    files = {p.name for p in plan.Path(cache.__file__).resolve().parent.rglob("*") if p.suffix in (".py", ".cu")}
    assert {"layouts.py", "cases.py", "wgmma.cu", "tcgen05.cu"} <= files and len(cache.source_digest()) == 24


def test_an_out_of_tree_family_is_always_asked(private_cache, monkeypatch):
    monkeypatch.setenv(registry.EXTRA, "toy=tests.simulated.toy_family")
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
        for f in map(registry.get, names):
            m.setattr(type(f), "facets_of", staticmethod(unasked))
        p = plan.make(plan.Selection(families=names))
    want = [(k.name, [c.id for c in cs]) for f in map(registry.get, names) for k, cs in f.kernels(f.archs[0]) if cs]
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
        plan.family_kernels(registry.get("tcgen05"), "sm_100a", cache=True)
        for path in [p for p in plan.LOADED_PLANS if private_cache in p.parents]:
            del plan.LOADED_PLANS[path]  # read from the file this time
        monkeypatch.setattr(pickle, "load", watched(pickle.load))
    else:
        monkeypatch.setattr(tcgen05.Tcgen05Family, "kernels", watched(tcgen05.Tcgen05Family.kernels))
    assert plan.family_kernels(registry.get("tcgen05"), "sm_100a", cache=True)
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


def test_a_held_plan_is_made_with_the_collector_paused_then_frozen_out_of_its_sight(private_cache, monkeypatch):
    """The sweep command's process holds its plan to the end: made with the collector paused throughout (every
    family's plan, not one at a time), then frozen, so that no collection walks it again; the collector runs after."""
    seen = []
    frozen_when = []
    freeze = gc.freeze
    monkeypatch.setattr(tcgen05.Tcgen05Family, "kernels", lambda self, arch: seen.append(gc.isenabled()) or [])
    monkeypatch.setattr(gc, "freeze", lambda: frozen_when.append(gc.isenabled()) or freeze())
    before = gc.get_freeze_count()
    held = plan.make_held(plan.Selection(families=("tcgen05", "wgmma_seq")), {"wgmma_seq": "sm_90a"})
    assert seen and not any(seen) and frozen_when == [False] and gc.isenabled()
    assert gc.get_freeze_count() > before + sum(len(cs) for _, cs in held.work) > before
    assert ids(held) == ids(plan.make(plan.Selection(families=("tcgen05", "wgmma_seq")), {"wgmma_seq": "sm_90a"},
                                      cache=True))


def test_only_the_sweep_command_holds_its_plan(monkeypatch, tmp_path):
    from harness import cli, sweep
    from tests.simulated import fake_gpus
    fake_gpus.hide_real_gpus(monkeypatch)
    made = []
    monkeypatch.setattr(plan, "make_held", lambda *a: made.append("held") or plan.Plan([]))
    monkeypatch.setattr(plan, "make", lambda *a, **k: made.append("make") or plan.Plan([]))
    monkeypatch.setattr(sweep, "compile_first", lambda *a: None)
    monkeypatch.setattr(sweep, "execute", lambda p, cfg, *a, **k: {"cases": 0, "cfg": cfg})
    run = sweep.run
    seen = []
    monkeypatch.setattr(sweep, "run", lambda sel, cfg: seen.append(cfg) or run(sel, cfg))
    cli.main(["sweep", "--out", str(tmp_path / "a.jsonl")], own_process=True)  # as `python -m harness sweep`
    assert [c.hold_plan for c in seen] == [True] and made == ["held"]
    cli.main(["sweep", "--out", str(tmp_path / "b.jsonl")])  # called by a process that goes on: freezes nothing
    run(plan.Selection(), sweep.SweepConfig())  # nor does a library caller
    assert [c.hold_plan for c in seen] == [True, False] and made == ["held", "make", "make"]


BUILD_SLOWLY = """
import sys, time
from harness import plan, registry
from harness.families import tcgen05
real = tcgen05.Tcgen05Family.kernels
def slow(self, arch):  # a build long enough that every process asks while the first is still at it
    t = time.time()
    time.sleep(1.0)
    out = real(self, arch)
    with open(sys.argv[1], "a") as fh:
        fh.write(f"{t} {time.time()}\\n")
    return out
tcgen05.Tcgen05Family.kernels = slow
if sys.argv[2] == "unwritable":  # the cache takes no plan: every write is lost
    plan.write_plan = lambda path, built, siblings: built
print(len(plan.family_kernels(registry.get("tcgen05"), "sm_100a", cache=True)))
"""


def start_together(n: int, log, how: str = "") -> list[str]:
    import subprocess
    import sys
    procs = [subprocess.Popen([sys.executable, "-c", BUILD_SLOWLY, str(log), how], stdout=subprocess.PIPE, text=True)
             for _ in range(n)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs) and len(set(outs)) == 1 and int(outs[0]) > 0
    return [tuple(map(float, line.split())) for line in log.read_text().splitlines()]


def test_processes_starting_together_on_an_empty_cache_build_a_plan_once(private_cache, tmp_path):
    """Three processes (as pytest's workers at start) ask for the same uncached plan at once: one builds it while
    the others wait for the lock, then read what it wrote; all get the same plan."""
    assert len(start_together(3, tmp_path / "builds.txt")) == 1


def test_where_the_plan_cannot_be_written_the_waiting_processes_build_at_once(private_cache, tmp_path):
    """A cache that takes no plan: the first process builds holding the lock and writes nothing, so each process that
    waited for it builds its own, those at the same time (not one after another, each waiting for the lock the last
    build held)."""
    first, *waiters = sorted(start_together(4, tmp_path / "builds.txt", "unwritable"))
    assert len(waiters) == 3 and all(start >= first[1] - 0.05 for start, _ in waiters)  # after the lock's build
    assert max(start for start, _ in waiters) < min(end for _, end in waiters)  # the waiters' builds at once


def test_a_lock_held_past_the_wait_is_built_past(private_cache, monkeypatch):
    """A process that holds the lock and never finishes (stopped, hung): the others wait PLAN_LOCK_WAIT_S, then build
    their own."""
    import fcntl
    import os
    import threading
    import time
    fam = registry.get("tcgen05")
    path = private_cache / "plans" / f"tcgen05-sm_100a-{cache.source_digest()}.pkl"
    fd = cache.lock_file(path)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another open file: the process's own flock conflicts with it
    monkeypatch.setattr(plan, "PLAN_LOCK_WAIT_S", 0.3)
    got = []
    try:
        t = time.monotonic()
        asking = threading.Thread(target=lambda: got.append(plan.family_kernels(fam, "sm_100a", cache=True)),
                                  daemon=True)
        asking.start()
        asking.join(30)  # a wait without end would leave it asking
        assert not asking.is_alive() and got and got[0] and path.exists()
        assert time.monotonic() - t >= 0.3
    finally:
        os.close(fd)


def test_a_plan_whose_lock_cannot_be_had_is_built_all_the_same(private_cache, monkeypatch):
    """A cache where no lock file can be made (read-only), and a Python without fcntl: the plan is built and used."""
    import os
    real_open = os.open

    def no_lock_file(file, *a, **k):
        if str(file).endswith(".lock"):
            raise PermissionError(f"read-only: {file}")
        return real_open(file, *a, **k)
    monkeypatch.setattr(os, "open", no_lock_file)
    sel = plan.Selection(families=("tcgen05",))
    assert plan.make(sel, cache=True).work
    monkeypatch.setattr(os, "open", real_open)
    monkeypatch.setattr(cache, "fcntl", None)
    plan.LOADED_PLANS.clear()
    for f in (private_cache / "plans").glob("*.pkl"):
        f.unlink()
    assert plan.make(sel, cache=True).work and list((private_cache / "plans").glob("*.pkl"))


def test_plans_another_process_is_building_are_left_to_it_and_the_free_ones_built(private_cache):
    """Processes starting together on an empty cache (pytest's workers) build different plans at once: a plan whose
    lock another holds is skipped, not waited for, and the next free one is built."""
    import fcntl
    import os
    import time
    fam = registry.get("tcgen05")
    busy, free = (plan.plan_path(fam, arch) for arch in ("sm_100a", "sm_103a"))
    fd = cache.lock_file(busy)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another open file: the process's own flock conflicts with it
    try:
        t = time.monotonic()
        plan.build_free_plans([(fam, "sm_100a"), (fam, "sm_103a")])
        assert free.exists() and not busy.exists() and time.monotonic() - t < plan.PLAN_LOCK_WAIT_S
    finally:
        os.close(fd)
    assert plan.make(plan.Selection(families=("tcgen05",)), cache=True).work and busy.exists()


def test_a_sweeps_plan_builds_the_free_plans_before_it_waits_for_a_busy_one(private_cache, monkeypatch):
    import fcntl
    import os
    import time
    fam = registry.get("tcgen05")
    busy, free = (plan.plan_path(fam, arch) for arch in ("sm_100a", "sm_103a"))
    monkeypatch.setattr(plan, "PLAN_LOCK_WAIT_S", 1.0)
    fd = cache.lock_file(busy)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        t = time.time()
        assert plan.make(plan.Selection(families=("tcgen05",)), cache=True).work  # waits 1 s for sm_100a's
        assert free.stat().st_mtime - t < 0.9  # sm_103a's was written before that wait, not after it
    finally:
        os.close(fd)


IN_PARTS = [f for f, where in registry.registry().items()
            if where.startswith("harness.") and hasattr(registry.get(f), "kernel_cases")]


@pytest.mark.parametrize("name", IN_PARTS)
def test_a_family_planned_in_parts_has_in_them_the_kernels_and_cases_of_its_whole_plan(name, private_cache):
    """The parts (every PLAN_PARTS-th kernel from the i-th, each kernel's cases from kernel_cases) put back in order
    are kernels(arch), the same kernels and cases in the same order; cached, they are read back as built."""
    fam = registry.get(name)
    for arch in fam.archs:
        files = plan.plan_files(fam, arch)
        assert len(files) == plan.PLAN_PARTS and len({p for p, _ in files}) == plan.PLAN_PARTS
        whole = fam.kernels(arch)  # each case whole (its every field), not its id alone
        assert plan.family_kernels(fam, arch, cache=True) == whole  # built
        plan.LOADED_PLANS.clear()
        assert all(p.exists() for p, _ in files)
        assert plan.family_kernels(fam, arch, cache=True) == whole  # read


def test_a_changed_source_replaces_every_part_and_keeps_its_own(private_cache, monkeypatch):
    """Writing a part removes the other sources' parts, never another part of its own source."""
    fam = registry.get("wgmma_seq")
    plan.family_kernels(fam, "sm_90a", cache=True)
    plan.LOADED_PLANS.clear()
    monkeypatch.setattr(plan, "source_digest", lambda: "a-model-was-edited")
    plan.family_kernels(fam, "sm_90a", cache=True)
    kept = sorted(p.name for p in (private_cache / "plans").glob("wgmma_seq-sm_90a-*.pkl"))
    assert kept == sorted(f"wgmma_seq-sm_90a-a-model-was-edited-part{i}of{plan.PLAN_PARTS}.pkl"
                          for i in range(plan.PLAN_PARTS))


def test_parts_that_do_not_make_up_the_kernel_list_are_not_trusted(private_cache):
    """Parts written by processes that listed a family's kernels otherwise (here: part 0's file holding part 1's
    kernels) do not put together the kernel_list: the plan is built again, not read from them."""
    fam = registry.get("wgmma_seq")
    whole = fam.kernels("sm_90a")
    plan.family_kernels(fam, "sm_90a", cache=True)
    (first, _), (second, _) = plan.plan_files(fam, "sm_90a")[:2]
    first.write_bytes(second.read_bytes())
    plan.LOADED_PLANS.clear()
    assert plan.family_kernels(fam, "sm_90a", cache=True) == whole
    assert plan.family_kernels(fam, "sm_90a", cache=True) == whole  # and again, from what the process kept


BUILD_PARTS_SLOWLY = """
import os, sys, time
from pathlib import Path
from harness import plan, registry
from harness.families import wgmma_seq
real = wgmma_seq.WgmmaSeqFamily.kernel_cases
meeting = Path(sys.argv[2])
(meeting / f"ready-{os.getpid()}").touch()
def slow(kernel):  # a part long enough that every process asks for the plan while the first parts are built; none
    deadline = time.time() + 60  # begins until both have started (their start-up may differ by seconds on a busy node)
    while len(list(meeting.glob("ready-*"))) < 2 and time.time() < deadline:
        time.sleep(0.01)
    t = time.time()
    time.sleep(0.15)
    with open(sys.argv[1], "a") as fh:
        fh.write(f"{os.getpid()} {kernel.name} {t} {time.time()}\\n")
    return real(kernel)
wgmma_seq.WgmmaSeqFamily.kernel_cases = staticmethod(slow)
print(sum(len(cs) for _, cs in plan.family_kernels(registry.get("wgmma_seq"), "sm_90a", cache=True)))
"""


def test_processes_starting_together_build_a_plans_parts_at_once_each_part_once(private_cache, tmp_path):
    """Two processes ask for an uncached plan in parts at once: each kernel's cases are built once, by processes
    that build different parts at the same time (not one process the whole plan while the others wait), and all
    get the whole plan."""
    import subprocess
    import sys
    log, meeting = tmp_path / "built.txt", tmp_path / "meeting"
    meeting.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", BUILD_PARTS_SLOWLY, str(log), str(meeting)],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs) and len(set(outs)) == 1
    assert int(outs[0]) == sum(len(cs) for _, cs in registry.get("wgmma_seq").kernels("sm_90a"))
    built = [line.split() for line in log.read_text().splitlines()]
    names = [b[1] for b in built]
    assert sorted(names) == sorted(k.name for k in registry.get("wgmma_seq").kernel_list("sm_90a"))  # each once
    by_process = {}
    for pid, _, start, end in built:
        lo, hi = by_process.get(pid, (float(start), float(end)))
        by_process[pid] = (min(lo, float(start)), max(hi, float(end)))
    assert len(by_process) >= 2  # parts built by more than one process ...
    spans = sorted(by_process.values())
    assert spans[1][0] < spans[0][1]  # ... at the same time


NARROWABLE = [f for f in registry.all_families() if hasattr(f, "kernel_facets_of")]


@pytest.mark.parametrize("fam", NARROWABLE, ids=lambda f: str(f.name))
def test_every_case_has_the_facets_its_kernel_says_and_every_kernel_has_cases(fam):
    """What narrowed_kernels relies on: a kernel a filter on its kernel_facets_of rejects has no case the filter
    keeps, and one it keeps has a case (its values are some case's)."""
    assert NARROWABLE and {"wgmma", "wgmma_sp", "wgmma_seq"} <= {str(f.name) for f in NARROWABLE}
    for arch in fam.archs:
        for kernel in fam.kernel_list(arch):
            shared = fam.kernel_facets_of(kernel)
            cases = fam.kernel_cases(kernel)
            assert shared and cases, kernel.name
            bad = [c.id for c in cases if {k: fam.facets_of(c)[k] for k in shared} != shared]
            assert not bad, (kernel.name, shared, bad[:3])


def made(sel, archs, narrow, cache=False):
    try:
        return ids(plan.with_collector_paused(plan.selected, sel, archs, None, cache, narrow))
    except plan.SweepError as e:
        return str(e)


@pytest.mark.parametrize("sel", [
    plan.Selection(families=("wgmma",), kinds=("b1", "tf32"), n_values=(8, 24), controls=False),
    plan.Selection(families=("wgmma_seq", "tcgen05"), n_values=(64, 128), a_srcs=("RS", "SS"), data_modes=("exact",),
                   match="B:K"),
    plan.Selection(families=("wgmma",), kinds=("s8",), n_values=(8,), data_modes=("normal",)),  # no s8 case is normal
    plan.Selection(families=("wgmma_seq",), kinds=("f16", "e9m9")),
    plan.Selection(families=("wgmma_seq", "tcgen05"), cta_groups=(2,)),
], ids=["wgmma-kinds-n-no-controls", "seq-tcgen05-n-a-data-match", "a-value-only-unplanned-cases-have",
        "seq-unknown-kind", "a-facet-of-one-family"])
def test_a_narrowed_plan_is_the_one_every_case_asked_makes(sel):
    archs = {"tcgen05": "sm_100a"}
    assert made(sel, archs, narrow=True) == made(sel, archs, narrow=False)


@pytest.mark.parametrize("sel", [
    plan.Selection(families=("wgmma", "wgmma_seq"), kinds=("tf32",), n_values=(24, 64), a_srcs=("RS",)),
    plan.Selection(families=("wgmma_seq", "tcgen05"), kinds=("s8", "f16"), data_modes=("normal",)),
], ids=["wgmma-seq-kind-n-a", "a-value-only-unplanned-cases-have"])
def test_with_the_cache_a_narrowed_plan_and_a_read_one_are_the_one_every_case_asked_makes(sel, private_cache):
    archs = {"tcgen05": "sm_100a"}
    narrowed = made(sel, archs, narrow=True, cache=True)  # the cache empty: narrowed, and nothing of it written
    whole = made(sel, archs, narrow=False, cache=True)  # every case asked; the whole plans written
    assert narrowed == whole == made(sel, archs, narrow=True, cache=True)  # the last read from the cache


def test_a_narrow_selection_plans_the_cases_of_its_kernels_only(private_cache, monkeypatch):
    """Without the cache, or with it before it holds the family's plan; where it does, the plan is read."""
    fam = registry.get("wgmma")
    asked = []
    real = type(fam).kernel_cases
    monkeypatch.setattr(type(fam), "kernel_cases", lambda self, k: asked.append(k.name) or real(self, k))
    b1 = plan.Selection(families=("wgmma",), kinds=("b1",), n_values=(8,))
    for cached in (False, True):
        asked.clear()
        p = plan.make(b1, cache=cached)
        assert asked == [k.name for k, _ in p.work] and len(asked) == 2
    assert not list((private_cache / "plans").glob("wgmma-*.pkl"))  # a narrowed plan is not cached
    whole = plan.make(plan.Selection(families=("wgmma",)), cache=True)
    assert len(asked) == 2 + len(fam.kernel_list("sm_90a")) and list((private_cache / "plans").glob("wgmma-*.pkl"))
    asked.clear()
    assert ids(plan.make(b1, cache=True))[0] == [(k.name, [c.id for c in cs]) for k, cs in whole.work
                                                 if k.name in {n for n, _ in ids(p)[0]}] and not asked


@pytest.mark.parametrize("flags", [{}, {"kinds": ("mxf4nvf4",)}], ids=["everything", "a kind"])
def test_forms_only_another_arch_has_are_compiled_where_that_arch_is_not_run(flags):
    """A run on sm_100a (or on no GPU) plans sm_103a's own forms (K = 96) compile-only, as it does the forms both
    arches share: else no sweep without a B300 would ever build them."""
    fam = registry.get("tcgen05")
    p = plan.make(plan.Selection(families=("tcgen05",), **flags), {"tcgen05": "sm_100a"})
    here = {k.name for k in fam.kernel_list("sm_100a")}
    only_103 = {k.name for k in fam.kernel_list("sm_103a")} - here
    assert only_103, "sm_103a has forms of its own (K = 96)"
    compiled = {k.name for k in p.compile_only if str(k.arch) == "sm_103a"}
    kinds = flags.get("kinds")
    wanted = {n for n in only_103 if kinds is None or any(n.startswith(f"tcgen05_{kind}_") for kind in kinds)}
    assert wanted and wanted <= compiled and not (only_103 - wanted) & compiled
    assert all(str(k.arch) == "sm_100a" for k, _ in p.work)
    p = plan.make(plan.Selection(families=("tcgen05",), kinds=("f16",)), {"tcgen05": "sm_100a"})
    assert not {k.name for k in p.compile_only} & only_103  # a selection none of whose cases they have: left out


DECLARING = [f for f in registry.all_families() if hasattr(f, "facet_values")]


@pytest.mark.parametrize("fam", DECLARING, ids=lambda f: str(f.name))
def test_the_facet_values_a_family_declares_are_those_its_cases_have(fam):
    """The selection flags' choices are what the families declare (plan.facet_choices): a value declared and no case's
    would be offered for nothing, a case's value not declared could not be selected."""
    assert {str(f.name) for f in DECLARING} == {"wgmma", "wgmma_sp", "wgmma_seq", "tcgen05", "mma_sync"}
    seen: dict = {}
    for arch in fam.archs:
        for _, cases in plan.family_kernels(fam, arch, cache=True):
            for c in cases:
                for facet, v in fam.facets_of(c).items():
                    seen.setdefault(facet, set()).add(v)
    declared = fam.facet_values()
    assert set(declared) <= set(fam.facets) and "n" not in declared
    assert {facet: set(vs) for facet, vs in declared.items()} == {facet: seen[facet] for facet in declared}


def test_the_selection_flags_read_the_declarations_only_where_a_facet_flag_is_given(monkeypatch, capsys):
    """A command line without a facet flag reads no family's declarations while it is parsed (they import the
    families' case modules, which the sweep command leaves until after it has started its GPU worker ahead); one
    with the flag is checked against them, and a value none declares is refused with the declared ones listed."""
    import argparse
    asked = []
    real = plan.facet_choices
    monkeypatch.setattr(plan, "facet_choices", lambda facet, names=None: asked.append(facet) or real(facet, names))
    p = argparse.ArgumentParser(prog="sweep")
    plan.add_flags(p, ("wgmma", "tcgen05"))
    a = p.parse_args(["--family", "wgmma", "--n", "64", "--match", "RS"])
    assert asked == [] and a.family == ["wgmma"]
    assert p.parse_args(["--kind", "f16", "--cta-group", "2"]).cta_group == [2] and asked == ["kind", "cta_group"]
    with pytest.raises(SystemExit):
        p.parse_args(["--a-src", "XS"])
    assert "argument --a-src: invalid choice: 'XS' (choose from 'SS', 'RS', 'TS')" in capsys.readouterr().err
    assert "(one of: f16, tf32, f8, s8, b1, " in " ".join(p.format_help().split())
    # a facet no family declares values for takes any value, and its help says so
    monkeypatch.setattr(plan, "facet_choices", lambda facet, names=None: None)
    p = argparse.ArgumentParser(prog="sweep")
    plan.add_flags(p, ("wgmma",))
    assert p.parse_args(["--kind", "k9"]).kind == ["k9"]
    assert "instruction kind, repeatable (one of: any value)" in " ".join(p.format_help().split())


def test_the_selection_flags_offer_what_the_families_declare(monkeypatch):
    assert plan.facet_choices("kind")[:5] == ["f16", "tf32", "f8", "s8", "b1"] and "mxf4nvf4" in plan.facet_choices(
        "kind")
    assert plan.facet_choices("a_src") == ["SS", "RS", "TS"] and plan.facet_choices("cta_group") == [1, 2]
    assert plan.facet_choices("n") is None  # declared by none: any N, refused at the plan where no case has it
    assert plan.facet_choices("kind", ("wgmma_seq",)) == ["f16", "tf32", "f8", "s8"]
    # a family that has a facet and declares no values for it leaves that flag open
    monkeypatch.setenv(registry.EXTRA, "toy=tests.simulated.toy_family")
    toy = registry.get("toy")
    monkeypatch.setattr(type(toy), "facets", frozenset({"n", "kind"}), raising=False)
    assert plan.facet_choices("kind") is None and plan.facet_choices("a_src") == ["SS", "RS", "TS"]
    with pytest.raises(plan.SweepError, match="A source must be one of SS, RS, TS, not 'XS'"):
        plan.Selection(a_srcs=("XS",)).validate()
