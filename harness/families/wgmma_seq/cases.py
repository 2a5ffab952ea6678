"""wgmma_seq cases: one sequence kernel, one variant, one tile per operand, one set of inputs.

An operand of a sequence is a `SeqTile`: rows (MN) x steps K-steps in shared memory, laid out as CUTLASS's
`tile_to_shape` lays out swizzle atoms (down MN first, then along K). Each step, and each warpgroup of a
two-warpgroup CTA, reads a sub-tile of it through a descriptor whose start is the tile's start plus the
sub-tile's offset, and whose LBO, SBO and swizzle are the tile's; the offsets are where the K-loop's advances
fall: inside a swizzle atom (K-major 128B: +32, +64, +96 bytes, the K = 64 sub-tiles of triton#6220; 64B: two
per atom) and across atoms (K-major 32B, MN-major, no swizzle).

Negative controls (`SeqControl`) change what the kernel is handed, never the kernel, and must be caught as
predicted: the result is exactly the misread the layout model predicts.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from enum import Enum

from harness.enums import DescStep, SeqPattern
from harness.families.wgmma import forms as wgmma_forms, kernel as wgmma_kernel
from harness.families.wgmma_seq import forms
from harness.spec import dtypes, layouts
from harness.spec.layouts import SmemLayout


class SeqControl(str, Enum):
    """The deliberate mistakes of the negative controls, each named after the bug class it stands for."""
    STEP_PLUS_16 = "step+16"  # every advance after the first is one 16-byte unit too far
    OR_BASE = "or-base"  # or-advance on a tile whose start shares a bit with an advance (or != add)
    STALE_A = "stale-a"  # RS: step j's A registers still hold step j-1's values (an early register reuse)
    SWAPPED_WG = "swapped-wg"  # two warpgroups: each reads the other's 64 rows of A

    def __str__(self) -> str:
        return self.value


# which controls a pattern has, and on which operand
CONTROLS = {
    SeqPattern.K_LOOP: ((SeqControl.STEP_PLUS_16, "A"), (SeqControl.STEP_PLUS_16, "B"),
                        (SeqControl.OR_BASE, "A"), (SeqControl.OR_BASE, "B")),
    SeqPattern.RS_PIPELINE: ((SeqControl.STEP_PLUS_16, "B"), (SeqControl.STALE_A, "A")),
    SeqPattern.TWO_WARPGROUPS: ((SeqControl.SWAPPED_WG, "A"), (SeqControl.STEP_PLUS_16, "B")),
}


@dataclass(frozen=True)
class SeqTile:
    """rows x (steps * k) elements of one operand, starting `start` bytes into its region (0 but for the
    or-base control)."""
    major: str
    swizzle: str
    dtype: str
    rows: int
    k: int  # elements per K-step (the instruction's K)
    steps: int
    start: int = 0

    def __post_init__(self):
        if self.major not in layouts.MAJORS or self.swizzle not in layouts.SWIZZLES:
            raise ValueError(f"a wgmma operand is K- or MN-major with swizzle {', '.join(layouts.SWIZZLES)}, not "
                             f"{self.major}/{self.swizzle}")
        if self.k * dtypes.get(self.dtype).bits != 256:
            raise ValueError(f"a wgmma K-step is 32 bytes; {self.k} {self.dtype} elements are not")
        if self.rows % 8 or not 8 <= self.rows <= 256:
            raise ValueError(f"rows = {self.rows} is no wgmma M (64 per warpgroup) or N")
        for j in range(self.steps):  # every sub-tile must be a canonical layout
            layouts.validate(self.sub(j))

    @property
    def tag(self) -> str:
        return f"{self.major}/{self.swizzle}"

    @property
    def row_bytes(self) -> int:
        return layouts.SWIZZLE_ROW_BYTES[self.swizzle]

    def full(self) -> SmemLayout:
        """The whole MN-major tile as one canonical layout (MN-major tiles are one layout for any K)."""
        lbo, sbo = layouts.packed_strides("MN", self.swizzle, self.dtype, self.rows, self.k * self.steps)
        return SmemLayout("MN", self.swizzle, self.dtype, self.rows, self.k * self.steps, lbo, sbo, self.start)

    def sub(self, step: int, mn0: int = 0, rows: int | None = None) -> SmemLayout:
        """The layout of rows mn0.. mn0+rows of K-step `step`: what that step's descriptor encodes (start
        relative to the region)."""
        rows = self.rows - mn0 if rows is None else rows
        if self.major == "MN":
            full = self.full()
            off = int(layouts.canonical_bit_offsets(full, mn0, step * self.k)) // 8
            return full.moved(rows=rows, cols=self.k, start=self.start + off)
        kb = 32 * step  # the step's first byte along K
        if self.swizzle == "none":
            # core matrices (8 rows x 16 B) down MN first: LBO steps along K, SBO down MN
            lbo = 16 * self.rows
            return SmemLayout("K", "none", self.dtype, rows, self.k, lbo, 128,
                              self.start + (kb // 16) * lbo + (mn0 // 8) * 128)
        w = self.row_bytes  # swizzle atoms of 8 rows x w bytes down MN first, then the next atom along K
        start = self.start + (kb // w) * self.rows * w + kb % w + (mn0 // 8) * 8 * w
        return SmemLayout("K", self.swizzle, self.dtype, rows, self.k, 16, 8 * w, start)

    def offset(self, step: int, mn0: int = 0) -> int:
        """Bytes from the tile's start to the sub-tile's: what the kernel adds to (or ors into) the base."""
        return self.sub(step, mn0).start - self.start


@dataclass(frozen=True)
class SeqCase:
    key: forms.SeqKey
    variant_index: int
    a: SeqTile | None  # None when A comes from registers
    b: SeqTile
    scale_d: int = 0
    control: SeqControl | None = None
    control_operand: str = ""  # 'A' or 'B'

    def __post_init__(self):
        key, v = self.key, self.variant
        if (self.a is None) != (key.inst.a_src == "RS"):
            raise ValueError(f"{key.name}: A is {'in registers' if key.inst.a_src == 'RS' else 'in shared memory'}")
        for tile, role, rows, trans, t in ((self.a, "A", key.m, v.trans_a, v.atype),
                                           (self.b, "B", key.inst.n, v.trans_b, v.btype)):
            if tile is None:
                continue
            if (tile.major == "MN") != bool(trans) or tile.rows != rows or tile.steps != key.steps \
                    or tile.dtype != t:
                raise ValueError(f"{key.name} variant {self.variant_index}: {role} is a {rows}-row "
                                 f"{'MN' if trans else 'K'}-major {t} tile of {key.steps} steps, not {tile}")
        if self.control is not None:
            if (self.control, self.control_operand) not in CONTROLS[key.pattern]:
                raise ValueError(f"{key.pattern} has no control {self.control}@{self.control_operand}")
            if self.control == SeqControl.OR_BASE and key.step_op != DescStep.OR:
                raise ValueError("the or-base control belongs to or-advance kernels")

    @property
    def variant(self) -> wgmma_forms.Variant:
        return forms.variants(self.key)[self.variant_index]

    @property
    def data(self) -> str:
        return "exact"  # integer-valued inputs: a result is right bit for bit or wrong

    @cached_property  # asked for every case in the plan, the engine and every record: worked out once
    def id(self) -> str:
        k, i = self.key, self.key.inst
        parts = [f"{k.pattern}-{k.step_op}", f"m{k.m}n{i.n}k{i.k}x{k.steps}", self.variant.tag(i.dtype), i.a_src,
                 f"A:{self.a.tag}" if self.a else "A:regs", f"B:{self.b.tag}"]
        if self.scale_d:
            parts.append("accum")
        if self.control is not None:
            parts.append(f"neg:{self.control}@{self.control_operand}")
        return "-".join(parts)

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())


# ----------------------------------------------------------------------------------------------------

def operand_tile(key: forms.SeqKey, role: str, major: str, swizzle: str, t: str) -> SeqTile:
    """A packed tile of operand `role` ('A' or 'B') for every step of the key."""
    return SeqTile(major=major, swizzle=swizzle, dtype=t, rows=key.m if role == "A" else key.inst.n, k=key.inst.k,
                   steps=key.steps)


def cases_for_key(key: forms.SeqKey, controls: bool = True) -> list[SeqCase]:
    """Every variant x every swizzle of A x every swizzle of B (the major-ness is the variant's), scale-d 0
    and 1 alternating, then the negative controls."""
    out = []
    for vi, v in enumerate(forms.variants(key)):
        ma, mb = ("MN" if v.trans_a else "K"), ("MN" if v.trans_b else "K")
        for sa in layouts.SWIZZLES if key.inst.a_src == "SS" else (None,):
            for sb in layouts.SWIZZLES:
                out.append(SeqCase(key=key, variant_index=vi,
                                   a=operand_tile(key, "A", ma, sa, v.atype) if sa else None,
                                   b=operand_tile(key, "B", mb, sb, v.btype), scale_d=len(out) % 2))
    if controls:
        out += negative_controls(key)
    return out


def negative_controls(key: forms.SeqKey) -> list[SeqCase]:
    """For each control of the pattern, variant 0 (K-major) with the target operand in each swizzle mode (the
    other operand 128B; one case for the register and row controls); a control the model says would read what
    was intended could not fail, and is dropped."""
    v = forms.variants(key)[0]
    out = []
    for control, operand in CONTROLS[key.pattern]:
        if control == SeqControl.OR_BASE and key.step_op != DescStep.OR:
            continue
        for sw in layouts.SWIZZLES:
            if control in (SeqControl.STALE_A, SeqControl.SWAPPED_WG) and sw != "128B":
                continue  # about registers / rows, not the swizzle
            a_sw, b_sw = (sw, "128B") if operand == "A" else ("128B", sw)
            a = operand_tile(key, "A", "K", a_sw, v.atype) if key.inst.a_src == "SS" else None
            b = operand_tile(key, "B", "K", b_sw, v.btype)
            if control == SeqControl.OR_BASE:  # start the target tile at the highest bit of its advances
                target = a if operand == "A" else b
                moved = replace(target, start=1 << (max(target.offset(j) for j in range(key.steps)).bit_length() - 1))
                a, b = (moved, b) if operand == "A" else (a, moved)
            case = SeqCase(key=key, variant_index=0, a=a, b=b, scale_d=0, control=control, control_operand=operand)
            if not reads_as_intended(case):
                out.append(case)
    return out


# ---------------------------------------------------------------------------------------------------- handed

@dataclass(frozen=True)
class Placement:
    """Where a case's operands sit in the window: A's region at 0, B's on the next WINDOW_ALIGN boundary after
    everything A's tile and descriptors touch (at 0 when A is in registers); the image covers what B's do."""
    region_b: int
    size: int  # image bytes


def _roundup(x: int, to: int) -> int:
    return -(-x // to) * to


@lru_cache(maxsize=4096)
def place(case: SeqCase) -> Placement:
    end = 0
    if case.a is not None:
        end = max(layouts.footprint(case.a.sub(j))[1] for j in range(case.key.steps))
        end = max([end] + [layouts.footprint(got)[1] for row in _reads(case, "A", Placement(0, 0))
                           for got, _ in row])
    p = Placement(_roundup(end, forms.WINDOW_ALIGN), 0)
    size = max(max(layouts.footprint(got)[1], layouts.footprint(want)[1]) for got, want in _reads(case, "B", p)[0])
    return Placement(p.region_b, _roundup(size, 16))


@dataclass(frozen=True)
class Handed:
    """The kernel's parameters for a case: base descriptors (start relative to the window), each step's advance
    per operand (in the descriptor's 16-byte units), and what warpgroup 1 adds to A's base."""
    desc_a: int
    desc_b: int
    steps_a: tuple[int, ...]
    steps_b: tuple[int, ...]
    wg_a: int


@lru_cache(maxsize=4096)
def handed(case: SeqCase) -> Handed:
    return _handed(case, place(case))


def _handed(case: SeqCase, p: Placement) -> Handed:
    key = case.key
    steps = range(key.steps)

    def advances(t: SeqTile, role: str) -> tuple[int, ...]:
        out = [t.offset(j) >> 4 for j in steps]
        if case.control == SeqControl.STEP_PLUS_16 and case.control_operand == role:
            out = [o + (1 if j else 0) for j, o in enumerate(out)]
        return tuple(out)

    desc_a, steps_a, wg_a = 0, (0,) * key.steps, 0
    if case.a is not None:
        mn0 = 64 if case.control == SeqControl.SWAPPED_WG else 0
        desc_a = wgmma_kernel.encode_desc(case.a.sub(0, mn0, 64))
        steps_a = advances(case.a, "A")
        if key.warpgroups == 2:
            wg_a = (case.a.offset(0, 64) >> 4) * (-1 if mn0 else 1) & forms.U64
    b0 = case.b.sub(0)
    desc_b = wgmma_kernel.encode_desc(b0.moved(start=p.region_b + b0.start))
    return Handed(desc_a, desc_b, steps_a, advances(case.b, "B"), wg_a)


@lru_cache(maxsize=4096)
def read_layouts(case: SeqCase, role: str) -> tuple[tuple[tuple[SmemLayout, SmemLayout], ...], ...]:
    """[warpgroup][step] -> (the layout the kernel's descriptor reads, the sub-tile the image holds there), for
    an operand in shared memory, both absolute in the window. The kernel's arithmetic runs on the descriptor
    values as if the window were at address 0: for add that is exact; for or it is exact because the window
    is WINDOW_ALIGN-aligned and every advance lies below that alignment (checked)."""
    return _reads(case, role, place(case))


def _reads(case: SeqCase, role: str, p: Placement) -> tuple[tuple[tuple[SmemLayout, SmemLayout], ...], ...]:
    key, h = case.key, _handed(case, p)
    t = case.a if role == "A" else case.b
    region = 0 if role == "A" else p.region_b
    base = h.desc_a if role == "A" else h.desc_b
    steps = h.steps_a if role == "A" else h.steps_b
    out = []
    for w in range(key.warpgroups if role == "A" else 1):
        wbase = forms.advance(base, h.wg_a, DescStep.ADD) if w else base
        desc0 = t.sub(0, 64 * w, 64 if role == "A" else None)
        row = []
        for j in range(key.steps):
            if key.step_op == DescStep.OR and steps[j] >= forms.WINDOW_ALIGN >> 4:
                raise ValueError(f"{case.id}: an or-advance of {steps[j] << 4} bytes reaches past the window's "
                                 f"{forms.WINDOW_ALIGN}-byte alignment; the model cannot predict it")
            value = forms.advance(wbase, steps[j], key.step_op)
            if value >> 14 != base >> 14:
                raise ValueError(f"{case.id}: step {j} of {role} carries out of the start field")
            got = desc0.moved(start=(value & 0x3FFF) << 4)
            want = t.sub(j, 64 * w, desc0.rows)
            row.append((got, want.moved(start=region + want.start)))
        out.append(tuple(row))
    return tuple(out)


def reads_as_intended(case: SeqCase) -> bool:
    """The model says the kernel reads exactly the intended sub-tiles (true of every ordinary case; a control
    for which it is true could not fail, and is dropped)."""
    if case.control in (SeqControl.STALE_A, SeqControl.SWAPPED_WG):
        return False  # the registers / rows are exchanged, whatever the layouts
    for role in ("A", "B") if case.a is not None else ("B",):
        for row in read_layouts(case, role):
            for got, want in row:
                if not (layouts.element_bit_addresses(got) == layouts.element_bit_addresses(want)).all():
                    return False
    return True
