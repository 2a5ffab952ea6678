"""wgmma.mma_async.sp cases: one sparse form, one layout per operand, one metadata pattern, one set of inputs.

The operands are laid out as the dense cases' are (harness.families.wgmma.cases.operand_scenarios): A is the packed
64 x K/2 tile, B the N x K one, so a K-major B of 64 bytes of K has no 32-byte swizzle (one descriptor cannot
describe two swizzle atoms along K) and its K-steps are 64 bytes. A case also names the metadata pattern
its A is compressed with:

  cycle     every legal increasing index pair (2:4: 6, tf32: 2), in turn along each row and shifted from row
            to row, so each pair sits at every chunk and row position and neighbouring chunks, rows g and
            g+8, and the two threads of a pair differ;
  random    an increasing pair per chunk drawn from the case's seed;
  rows      one pair per row (a misread of a chunk within a row goes unseen, one of a row does not);
  cols      one pair per chunk column (the converse);
  reversed  2:4 only: the six decreasing pairs (0b0001, ...), legal by the text but never produced by
            CUTLASS: these cases rest on a reading (results/FINDINGS.md) and carry `unsettled`.

The registers of the thread pair a selector does not read hold a different valid metadata (a decoy), so a
selector read the wrong way round changes the result.

Negative controls (each must be caught as the model predicts, see reference.py):
  meta:other-pattern    the metadata of another pattern than the one A was compressed with;
  meta:swapped-nibbles  nibbles 0 and 1 (two neighbouring chunks' indices) exchanged in every register;
  meta:swapped-threads  the registers of T(2s) and T(2s+1) (f16/tf32: the two halves of K) or of T0 and T1
                        (8-bit: rows g and g+8) exchanged in every group of four;
  wrong-selector        f16/tf32: the metadata placed for one selector, the instruction issued with the other;
  and the dense family's wrong-descriptor controls (wrong-swizzle, swapped-lbo-sbo, start+16) on B and A.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import cached_property

from harness.families.wgmma import cases as dense
from harness.families.wgmma.cases import Operand, operand_scenarios, plain_operand
from harness.families.wgmma_sp import forms
from harness.spec import dtypes, layouts, sparsity

PATTERNS = ("cycle", "random", "rows", "cols", "reversed")
META_CONTROLS = ("meta:other-pattern", "meta:swapped-nibbles", "meta:swapped-threads")
SELECTOR_CONTROL = "wrong-selector"
RICH_N = dense.RICH_N


def patterns_for(atype: str) -> tuple[str, ...]:
    """The patterns a type has: 'reversed' needs two indices per chunk (2:4)."""
    return PATTERNS if sparsity.format_of(atype).stored == 2 else PATTERNS[:-1]


@dataclass(frozen=True)
class Case:
    key: forms.KernelKey
    variant_index: int
    a: Operand | None  # the packed 64 x K/2 A in shared memory; None when A comes from registers
    b: Operand  # N x K
    pattern: str = "cycle"  # the metadata pattern A is compressed with
    scale_d: int = 0
    data: str = "exact"  # 'exact' (integer-valued, bit-exact) or 'normal' (random normal, bounded error)
    control: str = ""  # '' or the kind of deliberately wrong descriptor, metadata or selector
    extra: str = ""  # 'ovf' (s32 overflow), 'tf32dirty' (junk in the ignored bits)
    inject: str = ""  # robustness tests only: plant a 'trap', 'hang' or 'misaligned' access in this CTA

    def __post_init__(self):
        forms.validate_key(self.key)
        if self.pattern not in patterns_for(self.variant.atype):
            raise ValueError(f"metadata pattern {self.pattern!r} is not one of "
                             f"{', '.join(patterns_for(self.variant.atype))}")
        known = ("",) + META_CONTROLS + (SELECTOR_CONTROL,) + tuple(dense.CONTROLS) + tuple(
            c + "@A" for c in dense.CONTROLS)
        if self.control not in known:
            raise ValueError(f"unknown sparse control {self.control!r}")
        if self.control == SELECTOR_CONTROL and len(sparsity.format_of(self.variant.atype).selectors) < 2:
            raise ValueError(f"{self.variant.atype} has one legal sparsity selector: no wrong-selector control")
        if (self.a is None) != (self.key.a_src == "RS"):
            raise ValueError("A is in shared memory exactly when the form is SS")

    @property
    def variant(self) -> forms.Variant:
        return forms.variants(self.key)[self.variant_index]

    @property
    def placed_selector(self) -> int:
        """The selector the metadata registers are laid out for (the instruction's, except in wrong-selector)."""
        sel = self.variant.selector
        return 1 - sel if self.control == SELECTOR_CONTROL else sel

    @cached_property  # asked for every case in the plan, the engine and every record: worked out once
    def id(self) -> str:
        k = self.key
        return dense.case_id(self, [f"m64n{k.n}k{k.k}", "sp", self.variant.tag(k.dtype), k.a_src],
                             (f"meta:{self.pattern}",))

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())

    @property
    def control_input(self) -> str:
        if self.control.startswith("meta:"):
            return "metadata"
        return "sparsity selector" if self.control == SELECTOR_CONTROL else "descriptor"

    @property
    def unsettled(self) -> str | None:
        """Why the expected value rests on a reading the PTX ISA and NVIDIA's code do not settle, or None."""
        if self.pattern == "reversed":
            return ("2:4 metadata with decreasing indices (e.g. 0b0001): the PTX ISA calls only equal indices invalid, "
                    "CUTLASS's compressor never emits them, mma.sp::ordered_metadata calls them meaningless; the model "
                    "places the first stored element at the first index (results/FINDINGS.md)")
        return None


# ----------------------------------------------------------------------------------------------------

def scenarios(key: forms.KernelKey, atype: str):
    """(A scenarios or [None], B scenarios): every layout of the packed A and of B the form allows. B's
    unswizzled K-major tile also gets padded strides of its own: the dense family's padding (LBO + 48, SBO + 80)
    would overlap its four 16-byte chunks of K."""
    majors = dense.majors(key.dense)
    a = operand_scenarios(atype, forms.M, key.packed_k, majors) if key.a_src == "SS" else [None]
    b = list(operand_scenarios(atype, key.n, key.k, majors))
    base = next(i for i, (suffix, lay) in enumerate(b) if not suffix and lay.major == "K" and lay.swizzle == "none")
    if not any(sfx == "+pad" and lay.major == "K" and lay.swizzle == "none" for sfx, lay in b):
        lay = b[base][1]
        lbo = lay.lbo + 48
        padded = lay.moved(lbo=lbo, sbo=(key.k * dtypes.get(atype).bits // 128 - 1) * lbo + 128 + 80)
        layouts.validate(padded)
        layouts.check_distinct(padded)
        b.insert(base + 1, ("+pad", padded))
    return a, tuple(b)


def cases_for_key(key: forms.KernelKey, data_modes=("exact",), controls: bool = True) -> list[Case]:
    """Every variant x every scenario of A and of B x every metadata pattern (spread, not crossed), the full
    cross of A and B layouts for the RICH_N of an SS form, plus negative controls."""
    forms.validate_key(key)
    vs = forms.variants(key)
    atype0 = vs[0].atype
    a_scen, b_scen = scenarios(key, atype0)
    pats = patterns_for(atype0)
    rich = key.n in RICH_N
    count = max(len(vs), len(a_scen), len(b_scen), len(pats)) * (2 if rich else 1)
    out = []
    for mode in data_modes:
        if mode == "normal" and key.kind == "s8":
            continue  # integer results are exact whatever the inputs
        for i in range(count):
            vi = i % len(vs)
            v = vs[vi]
            a = a_scen[(i * 5 + 1) % len(a_scen)]
            b = b_scen[(i * 7 + 3) % len(b_scen)]
            if key.kind == "f16":  # the major-ness is part of the variant (imm-trans)
                if a is not None and a[1].major != ("MN" if v.trans_a else "K"):
                    a = dense.matching(a_scen, "MN" if v.trans_a else "K", i)
                if b[1].major != ("MN" if v.trans_b else "K"):
                    b = dense.matching(b_scen, "MN" if v.trans_b else "K", i)
            extra = ""
            if key.kind == "s8" and i % 3 == 2:
                extra = "ovf"
            elif key.kind == "tf32" and i % 2 == 1:
                extra = "tf32dirty"
            scale_d = 1 if (i % 2 == 1 or extra == "ovf") else 0
            pattern = pats[(i * 3 + i // len(pats)) % len(pats)]
            out.append(Case(key, vi, plain_operand(*a) if a else None, plain_operand(*b), pattern, scale_d, mode,
                            "", extra))
        if rich and key.a_src == "SS":
            out.extend(Case(key, vi, a, b, "cycle", n % 2, mode)  # selector 0 and 1 in turn
                       for n, vi, a, b in dense.crossed_operands(vs, a_scen, b_scen))
    if controls:
        out.extend(negative_controls(key, a_scen, b_scen))
    return dense.unique_by_id(out)



def negative_controls(key, a_scen, b_scen) -> list[Case]:
    """Wrong descriptors (the dense family's), wrong metadata and, where two selectors are legal, the wrong
    selector, each on a K-major case with the 'cycle' pattern (every pair, every neighbour different)."""
    vs = forms.variants(key)
    a_plain = plain_operand(*next(s for s in a_scen if s[1].major == "K")) if key.a_src == "SS" else None
    b_plain = plain_operand(*next(s for s in b_scen if s[1].major == "K"))
    out = [Case(key, 0, a, b, "cycle", 0, "exact", name)
           for name, a, b in dense.descriptor_controls(a_scen, b_scen, key.a_src == "SS")]
    out += [Case(key, 0, a_plain, b_plain, "cycle", 0, "exact", name) for name in META_CONTROLS]
    if len(sparsity.format_of(vs[0].atype).selectors) == 2:
        for sel in (0, 1):  # metadata for the other pair of threads than the instruction reads
            out.append(Case(key, forms.with_selector(key, 0, sel), a_plain, b_plain, "cycle", 0, "exact",
                            SELECTOR_CONTROL))
    return out
