"""Which kernels and cases a sweep runs: every family's plan, narrowed by one Selection, optionally sharded.

A filter that names a facet a family's cases do not have (`--cta-group` for wgmma) leaves that family out,
and the plan says so in `notes`; nothing is dropped without a line saying why.
"""
from __future__ import annotations

import gc
import os
import pickle
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness import registry as families  # the families by name (harness/registry.py)
from harness.cache import cache_dir, lock_file, locked, source_digest, write_atomically
from harness.contract import Kernel
from harness.enums import Arch, OperandSource

class SweepError(ValueError):
    pass


@dataclass(frozen=True)
class Selection:
    families: tuple[str, ...] | None = None  # None: every family
    kinds: tuple[str, ...] | None = None
    n_values: tuple[int, ...] | None = None
    dtypes: tuple[str, ...] | None = None
    a_srcs: tuple[str, ...] | None = None
    cta_groups: tuple[int, ...] | None = None
    data_modes: tuple[str, ...] | None = None
    controls: bool = True
    # substrings of case ids: a case is kept when its id holds any of them (a repeated --match widens, as a repeated
    # --kind does; different filters narrow: README, "Sweep filters"). One string is taken as a tuple of one
    match: tuple[str, ...] | None = None

    def __post_init__(self):
        if isinstance(self.match, str):
            object.__setattr__(self, "match", (self.match,))
        elif self.match is not None:
            object.__setattr__(self, "match", tuple(self.match) or None)

    def matches(self, case_id: str) -> bool:
        """Whether --match keeps a case id (any of its texts; every id where none was given)."""
        return not self.match or any(m in case_id for m in self.match)

    def filters(self) -> dict[str, tuple]:
        """facet -> allowed values, for the filters given."""
        given = {"kind": self.kinds, "n": self.n_values, "dtype": self.dtypes, "a_src": self.a_srcs,
                 "cta_group": self.cta_groups, "data": self.data_modes}
        return {k: tuple(v) for k, v in given.items() if v}

    @classmethod
    def from_flags(cls, a) -> "Selection":
        """The selection the flags of add_flags name, from the namespace argparse parsed them into (flags()'s
        inverse)."""
        return cls(families=tuple(a.family) if a.family else None, kinds=tuple(a.kind) if a.kind else None,
                   n_values=tuple(a.n) if a.n else None, dtypes=tuple(a.dtype) if a.dtype else None,
                   a_srcs=tuple(a.a_src) if a.a_src else None, cta_groups=tuple(a.cta_group) if a.cta_group else None,
                   data_modes=tuple(a.data) if a.data else None, controls=not a.no_controls,
                   match=tuple(a.match) if a.match else None)

    def flags(self) -> str:
        """The selection as the sweep's command-line flags ('' for everything), e.g. '--family wgmma --kind f16'."""
        given = [("family", self.families), ("kind", self.kinds), ("n", self.n_values), ("dtype", self.dtypes),
                 ("a-src", self.a_srcs), ("cta-group", self.cta_groups), ("data", self.data_modes)]
        words = [f"--{flag} {v}" for flag, values in given for v in values or ()]
        if not self.controls:
            words.append("--no-controls")
        words += [f"--match {shlex.quote(m)}" for m in self.match or ()]
        return " ".join(words)

    def validate(self) -> "Selection":
        known = families.registry()
        for f in self.families or ():
            if f not in known:
                raise SweepError(f"unknown family {f!r}; one of {', '.join(known)}")
        given = self.filters()
        for facet, what in (("a_src", "A source"), ("data", "data mode"), ("cta_group", "CTA group")):
            choices = facet_choices(facet) if facet in given else None
            bad = [v for v in given.get(facet, ()) if choices is not None and v not in choices]
            if bad:
                raise SweepError(f"{what} must be one of {', '.join(map(str, choices))}, not {bad[0]!r}")
        return self


def facet_choices(facet: str, names=None) -> list | None:
    """The values of a facet that the families (of `names`, the registry's by default) that have it declare (their
    optional `facet_values()`), in their order: the selection flags' choices, and what Selection.validate takes.
    None where no family has the facet or one that has it declares no values for it (N, or a family from outside
    that declares none): then any value is taken, and one that no case has is refused as the plan is made."""
    out: dict = {}
    for fam in map(families.get, families.registry() if names is None else names):
        if facet not in fam.facets:
            continue
        declared = fam.facet_values().get(facet) if hasattr(fam, "facet_values") else None
        if declared is None:
            return None
        out.update(dict.fromkeys(declared))
    return list(out) or None


class _DeclaredChoices:
    """A selection flag's choices: what the families declare (facet_choices), worked out when argparse first asks,
    which it does only where the flag is given or help is printed. Reading the declarations imports the families'
    case modules; a command line without the flag leaves that to the plan, after the sweep command has started its
    GPU worker ahead (harness/sweep.py worker_ahead), as before the families declared their choices."""

    def __init__(self, facet: str, family_names: tuple[str, ...]):
        self._facet, self._names, self._values, self._known = facet, family_names, None, False

    def _declared(self):
        if not self._known:
            self._values, self._known = facet_choices(self._facet, self._names), True
        return self._values

    def __contains__(self, value) -> bool:
        declared = self._declared()
        return declared is None or value in declared  # none declared: any value (the plan refuses one no case has)

    def __iter__(self):  # help's "(one of: ...)"; an error's list is asked for only where a value is refused
        declared = self._declared()
        return iter(declared if declared is not None else ("any value",))


def add_flags(p, family_names: tuple[str, ...]) -> None:
    """The flags that name a Selection, added to an argparse parser (Selection.from_flags reads them back). Here, with
    Selection, rather than in the command line: `sweep` and `compile` take them, and so does the pytest plugin's
    --tc-sweep (harness/pytest_plugin.py), which sits beside the command line and may not import it. Each facet
    flag names its metavar, so that argparse lists its choices (_DeclaredChoices) only in help and errors."""
    def facet(flag: str, name: str, what: str, **kw) -> None:
        p.add_argument(flag, action="append", choices=_DeclaredChoices(name, family_names), metavar=name.upper(),
                       help=f"{what} (one of: %(choices)s)", **kw)
    p.add_argument("--family", action="append", choices=list(family_names),
                   help="instruction family (repeatable)")
    facet("--kind", "kind", "instruction kind, repeatable")
    p.add_argument("--n", action="append", type=int, help="only these N (repeatable)")
    facet("--a-src", "a_src", "A operand source, repeatable")
    facet("--cta-group", "cta_group", "tcgen05 CTA group", type=int)
    facet("--dtype", "dtype", "accumulator type")
    facet("--data", "data", "input data")
    p.add_argument("--match", action="append", help="only cases whose id contains this text (repeatable: any of "
                                                    "them; other filters narrow it further)")
    p.add_argument("--no-controls", action="store_true", help="skip the negative controls")


@dataclass
class Plan:
    work: list[tuple[Kernel, list]]  # kernels with the cases to run, in launch order
    compile_only: list[Kernel] = field(default_factory=list)  # other archs of a family: NVRTC must take them
    notes: list[str] = field(default_factory=list)

    @property
    def cases(self) -> int:
        return sum(len(cs) for _, cs in self.work)


def _listing(values) -> str:
    vals = sorted(values, key=lambda v: (isinstance(v, str), v))
    text = ", ".join(map(str, vals))
    return text if len(vals) <= 10 else f"{', '.join(map(str, vals[:4]))}, ..., {', '.join(map(str, vals[-2:]))}"


LOADED_PLANS: dict[Path, list] = {}  # cached plans this process has read or built, by file


def with_collector_paused(build, *args):
    """build(*args) with Python's cyclic garbage collector paused: a plan is ~250,000 objects (wgmma's), none of them
    garbage, and while they are made the heap keeps growing by the quarter that sets off a full collection, each of
    which walks every object made so far. Reading every family's plan took 0.60-0.76 s, 0.26-0.31 s so
    (the CPU note 2026-11-26 garbage-collector.txt in docs/performance.md). The collector runs again afterwards, as it
    ran before; keeping long-lived objects out of its sight (gc.freeze) is for a process's entry point to decide (the
    test session's conftest.py does), since it would keep every garbage cycle alive at that moment too."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return build(*args)
    finally:
        if was_enabled:
            gc.enable()


def plan_path(fam, arch) -> Path | None:
    """Where an in-tree family's whole plan for `arch` is cached (None for a family from outside the package)."""
    if not families.registry().get(str(fam.name), "").startswith("harness."):
        return None
    return cache_dir() / "plans" / f"{fam.name}-{arch}-{source_digest()}.pkl"


# A family that plans each kernel's cases from that kernel alone (`kernel_cases`, harness/contract.py) is cached in this
# many parts, part i holding every PLAN_PARTS-th kernel of kernel_list from the i-th. Processes that start together on
# an empty cache (the README test command's 17) build different parts at once (build_free_plans): in one file, the
# dense family's plan was built by one process while the others waited for it, and the README run's workers ended
# their collection 9.1-10.4 s in, cold, on an H100 node (bench18 in docs/performance.md, which also has a
# profile of that wait on an H200 node). With the parts their first tests began 2.1-3.9 s earlier (bench18 too, the
# trees in turn on one H100 node). On this project's CPU machine, in a fresh process, the dense
# family's whole plan builds in 0.79-1.00 s, a part of it in 0.17-0.25 s; a warm read of every plan took 0.24-0.31 s
# against 0.36-0.42 s in one file a plan (the CPU note 2026-11-27 plan-parts.txt in docs/performance.md).
PLAN_PARTS = 8


def plan_files(fam, arch) -> list[tuple[Path, Callable[[], list]]] | None:
    """The files an in-tree family's plan for `arch` is cached in, each with the build of what it holds: one file for
    the whole plan, or PLAN_PARTS parts where the family has kernel_cases (and kernel_list). None for a family from
    outside the package (always asked)."""
    whole = plan_path(fam, arch)
    if whole is None:
        return None
    if not (hasattr(fam, "kernel_cases") and hasattr(fam, "kernel_list")):
        return [(whole, lambda: with_collector_paused(fam.kernels, arch))]

    def part(i: int) -> Callable[[], list]:
        return lambda: with_collector_paused(lambda: [(k, fam.kernel_cases(k))
                                                      for k in fam.kernel_list(arch)[i::PLAN_PARTS]])
    return [(whole.with_name(f"{whole.stem}-part{i}of{PLAN_PARTS}.pkl"), part(i)) for i in range(PLAN_PARTS)]


def plan_siblings(fam, arch) -> str:
    """The glob of every cache file of a family's plans for `arch`, of any source (write_plan removes the others')."""
    return f"{fam.name}-{arch}-*.pkl"


def interleaved(parts: list[list]) -> list:
    """The plan the parts hold, in kernel_list's order: part i has its kernels i, i + n, i + 2n, ... (n parts)."""
    n = len(parts)
    return [parts[j % n][j // n] for j in range(sum(len(p) for p in parts))]


def build_free_plans(pairs) -> None:
    """Build each cache file of the (family, arch) plans of `pairs` (plan_files) that is not written and that no other
    process is building, skipping those another is building (family_kernels then waits for them). Processes that
    start together on an empty cache (the README test command's pytest-xdist workers) so build different plans and
    parts at once rather than each waiting, in turn, for the one process building the first, then the second: the
    plans' build times added up before the first test of every worker could start."""
    for fam, arch in pairs:
        for path, build in plan_files(fam, arch) or ():
            if path not in LOADED_PLANS and not path.exists():
                out = built_alone(path, build, plan_siblings(fam, arch), wait=False)
                if out is not None:
                    LOADED_PLANS[path] = out


def family_kernels(fam, arch, cache: bool = False) -> list[tuple[Kernel, list]]:
    """fam.kernels(arch); with `cache`, an in-tree family's answer is kept in the compile cache's plans/ folder
    (plan_files), keyed by source_digest() (a warm sweep reads ~3 MB instead of building 27,554 cases and checking
    every layout). A family from outside the package (TC_HARNESS_FAMILIES) is always asked."""
    files = plan_files(fam, arch) if cache else None
    if files is None:
        return with_collector_paused(fam.kernels, arch)

    def parts() -> list[list]:  # run with the collector paused over all of them (between parts it would walk those
        build_free_plans([(fam, arch)])  # read so far); the parts no other process is building are built first
        fresh = False
        for path, build in files:
            if path not in LOADED_PLANS:  # unpickling 27,554 cases takes ~0.5 s: once a process
                out = read_plan(path)
                if out is None:  # absent or unreadable: build it, one process at a time where they start together
                    out = built_alone(path, build, plan_siblings(fam, arch))
                LOADED_PLANS[path] = out
                fresh = True
        got = [LOADED_PLANS[path] for path, _ in files]
        if fresh and len(files) > 1 and [k for k, _ in interleaved(got)] != fam.kernel_list(arch):
            # parts that do not make up one kernel_list (written by processes that listed the kernels otherwise):
            # not one of them is trusted; the plan is built here, and its parts are what this process keeps
            whole = fam.kernels(arch)
            got = [whole[i::len(files)] for i in range(len(files))]
            for (path, _), part in zip(files, got):
                LOADED_PLANS[path] = part
        return got
    return [(k, list(cs)) for k, cs in interleaved(with_collector_paused(parts))]  # the caller may edit its lists;
                                                                                  # kernels and cases are frozen


def read_plan(path: Path) -> list | None:
    """A cached plan, None where it is absent or unreadable."""
    try:
        with open(path, "rb") as fh:
            return with_collector_paused(pickle.load, fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None


def write_plan(path: Path, plan: list, siblings: str) -> list:
    """Cache a plan or a part of one (and return it); the files matching `siblings` (a glob: the family's and arch's)
    that are not of this source (their names lack its digest) are removed. Their lock files stay: empty, and perhaps
    held by a process of those sources."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL))  # never half a plan
        for stale in path.parent.glob(siblings):  # plans of other sources are never read again (a name with this
            if source_digest() not in stale.name:  # source's digest is another part of its plan)
                stale.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only cache only costs the next sweep the time to build it
    return plan


PLAN_LOCK_WAIT_S = 120.0  # a plan builds in 1-4 s: a lock held longer is a stopped or hung process's


def built_alone(path: Path, build, siblings: str, wait: bool = True) -> list | None:
    """The plan at `path`, built and written (write_plan) by one process at a time: processes starting together on
    an empty cache build it once. The README's pytest on an H100 node ran the controller and 16 workers, each
    building every plan at once, and every worker's collection ended 10.4 s into the run, against 5.5-6.8 s with the
    plans cached (bench11 in docs/performance.md); with the lock it ended at 5.7-6.9 s in one cold run,
    9.9-11.5 s in the machine's first, the whole run the same within its spread (bench11 too). What it saves for certain
    is the others' CPU: 16 copies of every plan's build.
    The first process to take the lock (an flock on a file beside the plan) builds; the others wait for it, then read
    what it wrote. A waiter that finds nothing written (the writer's cache is full, or it wrote nothing) or that
    waited PLAN_LOCK_WAIT_S builds its own, without the lock, as every process does where no lock can be had
    (no fcntl, a lock file that cannot be made). Not re-entrant: a build that asked for this plan again would wait
    for itself. With wait=False, a plan another process is building is left to it: None."""
    fd = lock_file(path)
    if fd is None:
        return write_plan(path, build(), siblings)
    try:
        if locked(fd, wait_s=0.0):  # nobody is building it: this process does, holding the lock
            out = read_plan(path)  # unless one finished between the read before and the lock
            return out if out is not None else write_plan(path, build(), siblings)
        if not wait:
            return None
        locked(fd, wait_s=PLAN_LOCK_WAIT_S)  # another is building it: wait for it to finish (or give up)
        out = read_plan(path)
    finally:
        os.close(fd)  # releases the lock
    return out if out is not None else write_plan(path, build(), siblings)


def run_arch(fam, run_archs: dict[str, Arch] | None) -> Arch:
    """The arch whose cases a family's plan has: the one run_archs names for it (a GPU of it is here), else its first."""
    return (run_archs or {}).get(str(fam.name), fam.archs[0])


def kernels_first(sel: Selection, run_archs: dict[str, Arch] | None = None,
                  shard: tuple[int, int] | None = None) -> list[Kernel] | None:
    """The kernels `make(sel, run_archs, shard)` plans and compiles (those it runs, then those of the families'
    other archs), worked out without building a case, so that compiling can start while the cases are planned; None
    where only the cases can say (a selection that filters or matches cases, or leaves out the controls, could leave
    a kernel none) or a family has no kernel_list."""
    sel.validate()
    if sel.filters() or sel.match or not sel.controls:
        return None
    run, other = [], []
    for fam in map(families.get, list(sel.families or families.registry())):
        if not hasattr(fam, "kernel_list"):
            return None
        arch = run_arch(fam, run_archs)
        run += fam.kernel_list(arch)
        if getattr(fam, "plans_every_arch", False):  # as make's `take`: each arch's own forms planned, a form of
            seen = {k.name for k in fam.kernel_list(arch)}  # a name planned already compiled only
            for o in fam.archs:
                if o != arch:
                    mine = fam.kernel_list(o)
                    run += [k for k in mine if k.name not in seen]
                    other += [k for k in mine if k.name in seen]
                    seen |= {k.name for k in mine}
            continue
        for o in fam.archs:  # every form of the other archs: those shared, and those only they have (make)
            if o != arch:
                other += fam.kernel_list(o)
    run, other = sharded(run, other, shard)
    return (run + other) or None


def _kept(fam, case, filters: dict, sel: Selection) -> bool:
    """Whether the selection keeps `case` (its facets, controls and --match), for a form planned compile-only."""
    facets = fam.facets_of(case)
    return (all(facets[k] in allowed for k, allowed in filters.items()) and (sel.controls or not facets["control"])
            and (not sel.match or any(m in case.id for m in sel.match)))


def sharded(run: list, compile_only: list, shard: tuple[int, int] | None) -> tuple[list, list]:
    """Shard i of n's part: every n-th of the kernels run, from the i-th; the compile-only kernels go with shard 0."""
    if not shard:
        return run, compile_only
    i, n = shard
    return run[i::n], (compile_only if i == 0 else [])


def make_held(sel: Selection, run_archs: dict[str, Arch] | None = None,
              shard: tuple[int, int] | None = None) -> Plan:
    """make(..., cache=True) for a process that holds the plan until it ends (the sweep command's): made with the
    cyclic garbage collector paused throughout, then moved out of its sight (gc.freeze). A plan is ~300,000 objects
    (wgmma's and wgmma_sp's), none of them garbage. Paused only while each family's plan is read, they were left to
    the collector's youngest generation: a simulated warm sweep's process spent 0.28-0.54 s collecting (0.03 s held),
    0.16-0.19 s of it in one pass over them between the plan and the first launch and 0.21-0.24 s in a full one at the
    end (the CPU note 2026-11-27 held-plan.txt in docs/performance.md; on an H100 node no end-to-end difference showed,
    bench17 in docs/performance.md). Cycles already garbage at the freeze stay until the process ends (the
    collections at this point found 0-18 objects); cycles made afterwards are collected as ever."""
    def made_and_frozen() -> Plan:
        plan = make(sel, run_archs, shard, cache=True)
        gc.freeze()
        return plan
    return with_collector_paused(made_and_frozen)


def make(sel: Selection, run_archs: dict[str, Arch] | None = None, shard: tuple[int, int] | None = None,
         cache: bool = False) -> Plan:
    """run_archs: family -> the arch whose cases to plan (a GPU of it is here); a family not in it plans its
    first arch's cases (to record them as not run) and compiles its other archs. `cache`: see family_kernels.
    Made with the cyclic garbage collector paused throughout (with_collector_paused), not only while plans are read:
    a selection's filters make a dict for each of the family's cases, and the collections they set off walked every
    plan the process holds. Seven makes as a test session's collection asks them took 0.46-0.51 s paused, 0.66-0.77 s
    not, five fresh processes each (the CPU note 2026-11-27 plan-parts.txt in docs/performance.md)."""
    return with_collector_paused(selected, sel, run_archs, shard, cache)


def kernel_level(fam, arch, filters: dict[str, tuple]) -> list[str]:
    """The filters' facets that all the cases of each of fam's kernels share (kernel_facets_of); none where the family
    cannot say (no kernel_facets_of, kernel_list or kernel_cases)."""
    if not filters or not all(hasattr(fam, a) for a in ("kernel_list", "kernel_cases", "kernel_facets_of")):
        return []
    listed = fam.kernel_list(arch)
    return [k for k in filters if listed and k in fam.kernel_facets_of(listed[0])]


def plan_cached(fam, arch) -> bool:
    """Whether every file of fam's plan for `arch` (plan_files) is read already or written."""
    files = plan_files(fam, arch)
    return files is not None and all(path in LOADED_PLANS or path.exists() for path, _ in files)


def narrowed_kernels(fam, arch, filters: dict[str, tuple], shared: list[str],
                     seen_values: dict[str, set]) -> list[tuple[Kernel, list]]:
    """The kernels of fam's plan for `arch` (in kernel_list's order) that the filters on `shared` (kernel_level: the
    facets every case of a kernel shares) keep, each with its cases, planned from it alone; the others' cases are
    never built. The values of those facets over all the family's kernels go into seen_values.
    `--kind b1 --n 8` planned 2 of the dense family's 392 kernels' cases, not all 27,554 (the whole build: ~0.5 s;
    plans made this way were ~100 of a CI test session's: the CPU note 2026-11-27 narrowed-plans.txt in
    docs/performance.md)."""
    kept = []
    for kernel in fam.kernel_list(arch):
        facets = fam.kernel_facets_of(kernel)
        for k in shared:
            seen_values[k].add(facets[k])
        if all(facets[k] in filters[k] for k in shared):
            kept.append(kernel)
    return [(k, fam.kernel_cases(k)) for k in kept]


def selected(sel: Selection, run_archs: dict[str, Arch] | None, shard: tuple[int, int] | None,
             cache: bool, narrow: bool = True) -> Plan:
    """make's plan (its arguments, as they are), built or read. With `narrow`, a family whose kernels a filter can
    keep or drop plans only the kernels kept (narrowed_kernels), unless the cache is asked for and holds its plan
    already (read, it is filtered case by case at less cost than building); where a value asked for then shows in
    none of the cases planned, the plan is made again the whole way, so that the error, or the plan, is what it would
    have been. A filtered sweep on an empty cache so plans in a fraction of a second, not the 2-4 s of building
    every plan, and leaves the whole plans for a sweep that needs them to build and cache."""
    sel.validate()
    filters = sel.filters()
    names = list(sel.families or families.registry())
    narrowing = {}  # family -> the filters' facets its kernels share, for the families planned kernel by kernel
    for f in map(families.get, names) if narrow else ():
        shared = kernel_level(f, run_arch(f, run_archs), filters)
        if shared and not (cache and plan_cached(f, run_arch(f, run_archs))):
            narrowing[str(f.name)] = shared
    if cache:  # every plan make() reads, run arch first
        fams = [f for f in map(families.get, names)
                if all(k in f.facets for k in filters) and str(f.name) not in narrowing]
        build_free_plans([(f, run_arch(f, run_archs)) for f in fams]
                         + [(f, a) for f in fams for a in f.archs if a != run_arch(f, run_archs)])
    plan = Plan([])
    seen_values: dict[str, set] = {k: set() for k in filters}
    matched: set[str] = set()  # the --match texts some case kept has
    narrowed_any = False
    for fam in map(families.get, names):
        missing = [k for k in filters if k not in fam.facets]
        if missing:
            plan.notes.append(f"{fam.name}: left out: its cases have no {', '.join(missing)} to select on")
            continue
        arch = run_arch(fam, run_archs)
        first = len(plan.work)
        everything = not filters and sel.controls and not sel.match  # every case kept: none need be asked
        narrowed = str(fam.name) in narrowing

        def kernels_of(a):
            return (narrowed_kernels(fam, a, filters, narrowing[str(fam.name)], seen_values) if narrowed
                    else family_kernels(fam, a, cache))

        def take(pairs, seen=frozenset()) -> None:
            """The kernels of `pairs` into the plan, each with the cases the selection keeps; a kernel of a name in
            `seen` (the same form for an arch planned already) compiled only, where that arch's is planned."""
            planned_names = {k.name for k, _ in plan.work[first:]}
            for kernel, cases in pairs:
                if kernel.name in seen:
                    if kernel.name in planned_names:
                        plan.compile_only.append(kernel)
                    continue
                if everything:
                    if cases:
                        plan.work.append((kernel, cases))
                    continue
                keep = []
                for c in cases:
                    facets = fam.facets_of(c)
                    for k, allowed in filters.items():
                        seen_values[k].add(facets[k])
                    if all(facets[k] in allowed for k, allowed in filters.items()) \
                            and (sel.controls or not facets["control"]):
                        hits = [m for m in sel.match if m in c.id] if sel.match else True
                        if hits:
                            keep.append(c)
                            if sel.match:
                                matched.update(hits)
                if keep:
                    plan.work.append((kernel, keep))

        narrowed_any |= narrowed
        take(kernels_of(arch))
        if getattr(fam, "plans_every_arch", False):
            # each arch's own forms planned with their cases (recorded not run where no GPU of it is), not only
            # compiled: no case of the run arch stands for them
            seen = {k.name for k in fam.kernel_list(arch)}
            for other in fam.archs:
                if other != arch:
                    take(kernels_of(other), seen)
                    seen |= {k.name for k in fam.kernel_list(other)}
            continue
        planned = {k.name for k, _ in plan.work[first:]}
        for other in fam.archs:  # the same forms for the family's other archs: NVRTC must take them too
            if other != arch:
                if narrowed:
                    plan.compile_only += [k for k in fam.kernel_list(other) if k.name in planned]
                    continue
                # and the forms only the other arch has (sm_103a's K = 96), where the selection takes any of
                # their cases: no run of this arch would build them otherwise
                here = {k.name for k, _ in family_kernels(fam, arch, cache)}
                for k, cases in family_kernels(fam, other, cache):
                    if k.name in planned or (k.name not in here and cases and (everything or any(
                            _kept(fam, c, filters, sel) for c in cases))):
                        plan.compile_only.append(k)
    for k, allowed in filters.items():
        unknown = [v for v in allowed if v not in seen_values[k]]
        if unknown and narrowed_any:  # perhaps a value of cases not planned: ask every case, as make always did
            return selected(sel, run_archs, shard, cache, narrow=False)
        if unknown:
            raise SweepError(f"--{k.replace('_', '-')} {unknown[0]}: no case of the selected families has it "
                             f"(they have {_listing(seen_values[k])})")
    unmatched = [m for m in sel.match or () if m not in matched]
    if unmatched and plan.work:  # as a value of another filter no case has: refused, not dropped
        raise SweepError(f"--match {unmatched[0]}: no case of the selection has it in its id (a repeated --match "
                         f"keeps the cases that have any of the texts)")
    if not plan.work:
        raise SweepError("the selection matches no case" + (f" ({'; '.join(plan.notes)})" if plan.notes else ""))
    if shard:
        plan.work, plan.compile_only = sharded(plan.work, plan.compile_only, shard)
        if not plan.work:
            raise SweepError(f"shard {shard[0]}/{shard[1]} holds no kernel of the selection")
    return plan
