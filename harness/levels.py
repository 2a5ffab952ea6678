"""Fleet levels of the sweep (`sweep --level N`), as DCGM's diag levels are to its tests: a seconds-long sample for a
Slurm prolog or a pod's init container, and the full sweep.

- Level 1: a fixed sample of the plan that covers, in every family it holds, every *form* (the kernel's compiled-in
  instruction form, N aside: for wgmma the kind, accumulator type and A's source; for tcgen05 the kind, CTA group,
  .ws, A's source and sparsity; for wgmma_seq the sequence pattern and its instruction form), every swizzle and
  every major-ness of each operand at least once, and one negative control (so that the run proves, on that node,
  that a misread is caught). It is computed from the plan the selection makes (deterministic: the same plan gives
  the same sample), preferring the first kernel of each form (the smallest N) and cases of kernels already taken.
  On a node whose GPUs run some families, the others are left out of level 1 (a note says so); on a machine
  without a GPU every family stays (compiled, recorded not run).
- Level 3: the full sweep (the plan as it is).

tests/test_levels.py proves the coverage over the whole plan, that the sample is small, and that it is the same
every time; benchmarks/level1_timing.sh times it end to end on an H100 node, cold and warm.
"""
from __future__ import annotations

import dataclasses

from harness import registry
from harness.plan import Plan

LEVELS = (1, 3)
FULL = 3


def _without_n(obj):
    """A kernel form as a hashable value, every field named `n` left out (nested forms too)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return (type(obj).__name__,) + tuple((f.name, _without_n(getattr(obj, f.name)))
                                             for f in dataclasses.fields(obj) if f.name != "n")
    return str(obj) if hasattr(obj, "value") else obj  # an enum as its spelling


def form_of(kernel) -> tuple:
    """The form a kernel compiles in, N aside (what level 1 covers once per family)."""
    return (str(kernel.family), _without_n(kernel.form))


def _operand_layouts(case):
    """(operand, swizzle, major) of a case's shared-memory operands: the families spell them as operand objects with
    a layout (wgmma, wgmma_sp), as tiles with swizzle and major (wgmma_seq), or as swizzle_a / major_a fields
    (tcgen05). An operand not in shared memory (RS's A, TS's A) has none."""
    out = []
    for op in ("a", "b"):
        obj = getattr(case, op, None)
        lay = getattr(obj, "layout", obj)
        sw, major = getattr(lay, "swizzle", None), getattr(lay, "major", None)
        if sw is None:
            sw, major = getattr(case, f"swizzle_{op}", None), getattr(case, f"major_{op}", None)
        if sw is not None and major is not None:
            out.append((op.upper(), str(sw), str(major)))
    return out


def coverage(kernel, case, fam, form: tuple | None = None) -> set[tuple]:
    """What a case covers: its form (`form`: form_of(kernel), given where it is known), each operand's swizzle and
    major-ness (ordinary cases), or its family's negative control (controls)."""
    family = str(kernel.family)
    if fam.facets_of(case).get("control"):
        return {("control", family)}
    cov = {("form", *(form or form_of(kernel)))}
    for op, sw, major in _operand_layouts(case):
        cov |= {("swizzle", family, op, sw), ("major", family, op, major)}
    return cov


def sample(plan: Plan, level: int, runnable: set[str] | frozenset[str] = frozenset()) -> Plan:
    """The plan a level runs: level 3 the plan itself; level 1 the covering sample (see the module docstring), its
    kernels and cases in the plan's order, the other archs' compile-only kernels of those kernels, and a note.
    `runnable`: the families a GPU here can run (sweep.run_archs). Where there are some, level 1 leaves out the
    others, saying so in a note: a node gate has no use for kernels its GPUs cannot launch, and compiling them (the
    tcgen05 kernels for sm_100a and sm_103a on an H100 node) was most of a cold level 1's compile. Where there are
    none (a CPU machine), every family stays: their kernels are compiled and SASS-checked, their cases recorded not
    run."""
    if level not in LEVELS:
        raise ValueError(f"--level {level}: one of {', '.join(map(str, LEVELS))}")
    if level == FULL:
        return plan
    fams = {}
    covers = []  # per kernel of the plan: [(case, its coverage)]
    for kernel, cases in plan.work:
        fam = fams.setdefault(str(kernel.family), registry.get(kernel.family))
        form = form_of(kernel)
        covers.append([(c, coverage(kernel, c, fam, form)) for c in cases])
    first_of_form: dict[tuple, int] = {}
    for i, (kernel, _) in enumerate(plan.work):
        first_of_form.setdefault(form_of(kernel), i)
    chosen = set(first_of_form.values())
    picked: dict[int, list] = {}
    covered: set[tuple] = set()
    # the forms' first kernels, then every other kernel (a swizzle or major-ness those kernels lack)
    order = sorted(chosen) + [i for i in range(len(plan.work)) if i not in chosen]
    for i in order:
        for case, cov in covers[i]:
            if cov - covered:
                picked.setdefault(i, []).append(case)
                covered |= cov
    work = [(plan.work[i][0], picked[i]) for i in sorted(picked)]
    notes = list(plan.notes)
    if runnable and any(str(k.family) in runnable for k, _ in work):
        left = {}
        for k, cs in work:
            if str(k.family) not in runnable:
                left[str(k.family)] = left.get(str(k.family), 0) + len(cs)
        work = [(k, cs) for k, cs in work if str(k.family) in runnable]
        notes += [f"level 1: {fam} left out: no GPU here runs it ({n} cases of the sample)" for fam, n in left.items()]
    names = {k.name for k, _ in work}
    every = set().union(*(cov for cs in covers for _, cov in cs)) if covers else set()
    missing = every - covered
    if missing:  # cannot happen: every token comes from some case, each of which was looked at
        raise AssertionError(f"level 1 left {sorted(missing)[:3]} uncovered")
    note = (f"level 1: {sum(len(cs) for _, cs in work)} of {plan.cases} cases in {len(work)} of {len(plan.work)} "
            f"kernels: every form, swizzle and major-ness of the selection once, and a negative control a family")
    return Plan(work, [k for k in plan.compile_only if k.name in names], [*notes, note])
