"""wgmma cases: one instruction form, one layout per operand, one set of inputs.

A case is pure data. `operand_scenarios` lists the shared-memory layouts an operand is tried in (every swizzle
mode and major-ness the form allows, packed and padded strides, starts off the swizzle pattern with and
without the matrix base offset, K-steps inside a swizzle atom); `cases_for_key` spreads them over the
variants of a kernel key so that every variant and every scenario of A and B appears, plus negative
controls whose descriptor deliberately disagrees with the image.
"""
from __future__ import annotations

import zlib
from functools import cached_property, lru_cache

import numpy as np
from dataclasses import dataclass

from harness.spec import dtypes, layouts
from harness.families.wgmma import forms as wgmma
from harness.spec.descriptors import expected_base_offset
from harness.spec.layouts import SmemLayout, LayoutError

REGION_ALIGN = 1024  # each operand's region starts on a 1024-byte boundary of the window


@dataclass(frozen=True)
class Operand:
    """How one operand sits in shared memory: the layout the image is written with, and the one the
    descriptor encodes (they differ only in negative controls)."""
    scenario: str
    layout: SmemLayout  # start is relative to the operand's region
    desc_layout: SmemLayout

    @property
    def tag(self) -> str:
        return f"{self.layout.major}/{self.layout.swizzle}{self.scenario}"


def case_id(case, head: list[str], after_operands: tuple[str, ...] = ()) -> str:
    """A wgmma-like case's id: `head` (shape, variant, A source), the operands' layouts, `after_operands`, then
    accumulate, input twist, data mode, negative control and fault injection where present."""
    parts = [*head, f"A:{case.a.tag}" if case.a else "A:regs", f"B:{case.b.tag}", *after_operands]
    if case.scale_d:
        parts.append("accum")
    if case.extra:
        parts.append(case.extra)
    if case.data != "exact":
        parts.append(case.data)
    if case.control:
        parts.append(f"neg:{case.control}")
    if case.inject:
        parts.append(f"inject:{case.inject}")
    return "-".join(parts)


@dataclass(frozen=True)
class Case:
    key: wgmma.KernelKey
    variant_index: int
    a: Operand | None  # None when A comes from registers
    b: Operand
    scale_d: int = 0
    data: str = "exact"  # 'exact' (integer-valued, bit-exact) or 'normal' (random normal, bounded error)
    control: str = ""  # '' or the kind of deliberately wrong descriptor (negative control)
    extra: str = ""  # input twist: 'ovf' (s32 overflow), 'tf32dirty' (junk in the ignored bits)
    inject: str = ""  # robustness tests only: plant a 'trap', 'hang' or 'misaligned' access in this CTA

    @property
    def variant(self) -> wgmma.Variant:
        return wgmma.variants(self.key)[self.variant_index]

    @cached_property  # asked for every case in the plan, the engine and every record: worked out once
    def id(self) -> str:
        k = self.key
        return case_id(self, [f"m64n{k.n}k{k.k}", self.variant.tag(k.dtype), k.a_src])

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())

    @property
    def control_input(self) -> str:
        """What a negative control gets deliberately wrong (its record's `why` names it)."""
        return "descriptor"


# ----------------------------------------------------------------------------------------------------

def majors(key: wgmma.KernelKey) -> tuple[str, ...]:
    # Only the 16-bit types have imm-trans-a/b; every other type is K-major in shared memory.
    if key.kind != "f16":
        return ("K",)
    return ("K", "MN")


@lru_cache(maxsize=None)
def operand_scenarios(dtype: str, rows: int, cols: int, majors: tuple[str, ...]) -> tuple[tuple[str, SmemLayout], ...]:
    """(scenario suffix, layout relative to a 1024-aligned region) for one operand."""
    out = []
    for major in majors:
        for sw in layouts.SWIZZLES:
            lbo, sbo = layouts.packed_strides(major, sw, dtype, rows, cols)
            base = SmemLayout(major, sw, dtype, rows, cols, lbo, sbo, 0, 0)
            pat = layouts.PATTERN_BYTES[sw]
            cand = [("", base)]
            if sw == "none":
                cand.append(("+pad", base.moved(lbo=lbo + 48, sbo=sbo + 16 if major == "MN" else sbo + 80)))
                cand.append(("+start48", base.moved(start=48)))
            else:
                if major == "K":
                    cand.append(("+pad", base.moved(sbo=sbo + pat)))
                    cand.append(("+oddsbo", base.moved(sbo=sbo + 384)))
                    # the spec: LBO is "not used, assumed 1" for swizzled K-major; put junk there
                    cand.append(("+lbojunk", base.moved(lbo=0x2A50)))
                    # K-steps: the start advanced by whole tiles of K inside the swizzle row (32 bytes for every
                    # dense form; 64 for the B of a sparse one)
                    k_bytes = cols * dtypes.get(dtype).bits // 8
                    row_bytes = layouts.SWIZZLE_ROW_BYTES[sw]
                    for step in (1, row_bytes // k_bytes - 1):
                        if step >= 1 and k_bytes * step < row_bytes:
                            cand.append((f"+kstep{step}", base.moved(start=k_bytes * step)))
                else:
                    cand.append(("+pad", base.moved(lbo=lbo + pat, sbo=sbo + 2 * pat)))
                    cand.append(("+oddlbo", base.moved(lbo=lbo + 384, sbo=sbo + 2 * pat + 384)))
                off = 384 % pat if pat > 128 else 0
                if off:
                    cand.append((f"+off{off}", base.moved(start=off)))
                    cand.append((f"+off{off}bo{expected_base_offset(off, sw)}",
                                 base.moved(start=off, base_offset=expected_base_offset(off, sw))))
            seen = set()
            for suffix, lay in cand:
                try:
                    layouts.validate(lay)
                    if not layouts.is_distinct(lay):
                        continue
                except LayoutError:
                    continue
                if (suffix, lay) not in seen:
                    seen.add((suffix, lay))
                    out.append((suffix, lay))
    return tuple(out)


# Negative controls: (name, function making the wrong descriptor layout from the right one)
def _wrong_swizzle(lay: SmemLayout) -> SmemLayout:
    other = {"none": "128B", "32B": "none", "64B": "32B", "128B": "64B"}[lay.swizzle]
    return lay.moved(swizzle=other, base_offset=0)


CONTROLS = {
    "wrong-swizzle": _wrong_swizzle,
    "swapped-lbo-sbo": lambda lay: lay.moved(lbo=lay.sbo, sbo=lay.lbo),
    "start+16": lambda lay: lay.moved(start=lay.start + 16),
}

RICH_N = {8, 16, 24, 64, 128, 136, 256}  # N values that get every layout scenario x several repeats


def plain_operand(suffix: str, lay: SmemLayout) -> Operand:
    return Operand(suffix, lay, lay)


def cases_for_key(key: wgmma.KernelKey, data_modes=("exact",), controls: bool = True) -> list[Case]:
    """Every variant x every scenario of A and of B (spread, not crossed), plus negative controls."""
    wgmma.validate_key(key)
    vs = wgmma.variants(key)
    atype0 = vs[0].atype
    a_scen = (operand_scenarios(atype0, wgmma.M, key.k, majors(key)) if key.a_src == "SS" else [None])
    b_scen = operand_scenarios(atype0, key.n, key.k, majors(key))
    rich = key.n in RICH_N
    count = max(len(vs), len(a_scen), len(b_scen)) * (2 if rich else 1)
    out = []
    for mode in data_modes:
        if mode == "normal" and key.kind in ("s8", "b1"):
            continue  # integer results are exact whatever the inputs
        for i in range(count):
            vi = i % len(vs)
            v = vs[vi]
            a = a_scen[(i * 5 + 1) % len(a_scen)]
            b = b_scen[(i * 7 + 3) % len(b_scen)]
            # The major-ness is part of the variant (imm-trans); pick scenarios that match it.
            if key.kind == "f16":
                want_a = "MN" if v.trans_a else "K"
                want_b = "MN" if v.trans_b else "K"
                if a is not None and a[1].major != want_a:
                    a = matching(a_scen, want_a, i)
                if b[1].major != want_b:
                    b = matching(b_scen, want_b, i)
            extra = ""
            if key.kind == "s8" and i % 3 == 2:
                extra = "ovf"
            elif key.kind == "tf32" and i % 2 == 1:
                extra = "tf32dirty"
            scale_d = 1 if (i % 2 == 1 or extra == "ovf") else 0
            out.append(Case(key, vi, plain_operand(*a) if a else None, plain_operand(*b), scale_d, mode, "", extra))
        if rich and key.a_src == "SS":
            out.extend(Case(key, vi, a, b, n % 2, mode) for n, vi, a, b in crossed_operands(vs, a_scen, b_scen))
    if controls:
        out.extend(negative_controls(key, a_scen, b_scen))
    return unique_by_id(out)


def unique_by_id(cases: list) -> list:
    """The cases in order, each id once (scenario spreading may draw the same case twice)."""
    unique = {}
    for c in cases:
        unique.setdefault(c.id, c)
    return list(unique.values())


def crossed_operands(vs, a_scen, b_scen):
    """Every (swizzle, major) of A against every (swizzle, major) of B, packed strides: (n, variant index, A, B)
    with n = i + j of the pair, the variant cycling through the unscaled ones of the pair's transposes (dense and
    sparse cases alike take scale-d, and the sparse ones the selector, from n % 2)."""
    a_base = [s for s in a_scen if not s[0]]
    b_base = [s for s in b_scen if not s[0]]
    for i, a in enumerate(a_base):
        for j, b in enumerate(b_base):
            ta, tb = int(a[1].major == "MN"), int(b[1].major == "MN")
            pool = [k for k, v in enumerate(vs)
                    if v.trans_a == ta and v.trans_b == tb and v.scale_a == v.scale_b == 1]
            yield i + j, pool[(i + j) % len(pool)], plain_operand(*a), plain_operand(*b)


def matching(scen, major, i):
    """A scenario of the given major-ness, picked by i (the variant fixes the major-ness through imm-trans)."""
    pool = [s for s in scen if s[1].major == major]
    return pool[(i * 3) % len(pool)]


def descriptor_controls(a_scen, b_scen, a_in_smem: bool) -> list[tuple[str, Operand | None, Operand]]:
    """(control name, A operand, B operand) per wrong-descriptor control kind and operand role, for packed
    K-major scenarios (preferring 128B), the wrong descriptor on B (and on A when A is in shared memory); the
    operand that is not the target is a plain K-major one (None for A in registers). A control is only kept
    where the model says the wrong descriptor reads different bytes (with N = 8, for example, SBO is never
    used and swapping it with the unused LBO of a swizzled K-major tile changes nothing)."""
    def packed_k(scen):
        pool = [s for s in scen if s[1].major == "K" and not s[0]]
        return sorted(pool, key=lambda s: s[1].swizzle != "128B")

    def k_plain(scen):
        return next(s for s in scen if s[1].major == "K")

    out = []
    for name, wrong in CONTROLS.items():
        for role in ("B", "A") if a_in_smem else ("B",):
            for suffix, lay in packed_k(b_scen if role == "B" else a_scen):
                bad = wrong(lay)
                try:
                    layouts.validate(bad)
                except LayoutError:
                    continue
                if np.array_equal(layouts.element_bit_addresses(bad), layouts.element_bit_addresses(lay)):
                    continue  # vacuous for this tile: try the next layout
                target = Operand(suffix, lay, bad)
                if role == "B":
                    a = plain_operand(*k_plain(a_scen)) if a_in_smem else None
                    out.append((name, a, target))
                else:
                    out.append((name + "@A", target, plain_operand(*k_plain(b_scen))))
                break
    return out


def negative_controls(key, a_scen, b_scen) -> list[Case]:
    """A wrong descriptor on B (and on A for SS) for each control kind: each must be caught. Variant 0 is
    K-major for both operands, so the controls take packed K-major scenarios (descriptor_controls)."""
    return [Case(key, 0, a, b, 0, "exact", name)
            for name, a, b in descriptor_controls(a_scen, b_scen, key.a_src == "SS")]
