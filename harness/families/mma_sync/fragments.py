"""Which matrix element each lane's register holds, for every mma.sync / mma.sp form (PTX ISA 9.7.14.5, 9.7.14.6.2).

A fragment map is a function (lane, value index) -> (row, col) of the operand's matrix (A: M x K, B: K x N,
C/D: M x N; a sparse A is its compressed M x K/2 storage), evaluated on numpy arrays. Value v of a lane sits in
register v // per_register at sub-element v % per_register (the ISA lists a fragment's elements low to high,
register after register: `.f16x2` holds two, a `.b32` four 8-bit, eight 4-bit or thirty-two 1-bit elements; f64
registers are 64 bits wide and hold one). The inverse, element -> (lane, register, sub-element), is solved from the
map (`FragmentMap.inverse`), never written out a second time.

Every form but m8n8k4 .f16 follows one pattern, written once (`_packed_a`, `_packed_b`, `_acc`): with
groupID g = lane >> 2 and threadID_in_group t = lane % 4, a register of A holds `per_register` consecutive K
elements of one row, starting at per_register * t, its rows alternating g, g + 8 (m16 shapes) and then stepping
K by 4 * per_register; a register of B holds per_register consecutive K elements of column g; accumulator
element i sits at row g + 8 * (i // 2), column 2t + i % 2. m8n8k4 .f16 runs four independent MMAs, one per
quad pair (lanes 4q..4q+3 and 4q+16..4q+19), which `instance` numbers.

The sparse A operand's metadata (ISA 9.7.14.6.1): each chunk of a row (4 elements of a 16- or 8-bit type, 2 of
.tf32, 8 of a 4-bit type taken as 4 pairs) has a 4-bit field, bits [1:0] the index of the first kept element
(pair, for 4-bit; 16-bit half, for .tf32), bits [3:2] the second. A row's fields follow one another from bit 0.
In each group of four threads, `metadata_threads` of them (selected by the sparsity selector) hold the fields of
rows g and g + 8; the group's bits are cut in units (16 bits for 16- and 32-bit types, else min(32, bits per row)):
unit u holds row g + 8 * (u % 2), chunks from (u // 2) * unit / 4 on (`metadata_map`). So a thread of m16n8k32
.f16 or m16n8k16 .tf32 holds half of row g's K in bits [15:0] and the same half of row g + 8's in [31:16], its
pair partner the other half; a thread of m16n8k32 .s8 holds the whole of one row.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Callable

import numpy as np

from harness.families.mma_sync.forms import (BITS, MatrixLayout, MmaForm, Shape, chunk_elements, kept_per_chunk,
                                             metadata_threads)
from harness.spec.fragments import Fragment

WARP = 32
Coords = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


def group_id(lane):
    return np.asarray(lane) >> 2


def thread_in_group(lane):
    return np.asarray(lane) % 4


@dataclass(frozen=True)
class FragmentMap:
    """One operand's fragment: `coords(lane, value)` -> (row, col, instance) arrays, broadcast."""
    operand: str  # 'A', 'B' or 'C' (C and D share their map)
    rows: int
    cols: int
    bits: int  # one element's width in its register
    values: int  # elements per lane
    coords: Coords
    instances: int = 1  # independent MMAs the warp runs (4 for m8n8k4 .f16)

    @property
    def per_register(self) -> int:
        return max(1, 32 // self.bits)

    @property
    def registers(self) -> int:
        return self.values // self.per_register

    @property
    def register_bits(self) -> int:
        return max(32, self.bits)

    def register_of(self, value):
        """(register, sub-element) of value index v."""
        v = np.asarray(value)
        return v // self.per_register, v % self.per_register

    @cached_property
    def table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, col, instance), each [32 lanes, values] (read-only)."""
        lane = np.arange(WARP)[:, None]
        value = np.arange(self.values)[None, :]
        out = tuple(np.broadcast_to(np.asarray(a, dtype=np.int64), (WARP, self.values)).copy()
                    for a in self.coords(lane, value))
        for a in out:
            a.flags.writeable = False
        return out

    @cached_property
    def inverse(self) -> tuple[np.ndarray, np.ndarray]:
        """(lane, value), each [instances, rows, cols]: who holds each element; ValueError unless the map is a
        bijection of the 32 x values slots onto the instances' matrices."""
        row, col, inst = self.table
        if (row.min() < 0 or col.min() < 0 or inst.min() < 0 or row.max() >= self.rows or col.max() >= self.cols
                or inst.max() >= self.instances):
            raise ValueError(f"{self.operand} map reaches outside its {self.instances} x {self.rows} x {self.cols}")
        flat = (inst * self.rows + row) * self.cols + col
        count = np.bincount(flat.ravel(), minlength=self.instances * self.rows * self.cols)
        if count.max() != 1 or count.min() != 1:
            raise ValueError(f"{self.operand} map is not one-to-one: {int((count == 0).sum())} elements unheld, "
                             f"{int((count > 1).sum())} held twice")
        lane = np.empty(flat.size, np.int64)
        value = np.empty(flat.size, np.int64)
        lane[flat.ravel()] = np.repeat(np.arange(WARP), self.values)
        value[flat.ravel()] = np.tile(np.arange(self.values), WARP)
        shape = (self.instances, self.rows, self.cols)
        lane, value = lane.reshape(shape), value.reshape(shape)
        lane.flags.writeable = value.flags.writeable = False
        return lane, value

    def locate(self, row, col, instance=0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lane, register, sub-element) holding matrix element (row, col) of MMA `instance`."""
        lane, value = self.inverse
        v = value[instance, row, col]
        reg, sub = self.register_of(v)
        return lane[instance, row, col], reg, sub

    def spec_fragment(self) -> Fragment:
        """The map as harness.spec.fragments.Fragment (32 threads), for gather_registers / scatter_registers."""
        if self.instances != 1:
            raise ValueError("a map of several MMAs (m8n8k4 .f16) has no single-matrix Fragment")
        row, col, _ = self.table
        reg, sub = self.register_of(np.broadcast_to(np.arange(self.values), row.shape))
        return Fragment(row, col, reg, sub * self.bits, self.bits, self.registers)


# ------------------------------------------------------------------------------------------------ the patterns

def _packed_a(m: int, k: int, bits: int) -> FragmentMap:
    """A (M x K, row-major per lane) of every form but m8n8k4 .f16; a sparse A is passed its compressed K."""
    per_reg = max(1, 32 // bits)
    values = m * k // WARP

    def coords(lane, v):
        g, t = group_id(lane), thread_in_group(lane)
        reg, sub = v // per_reg, v % per_reg
        row_blocks = m // 8  # 1 (m8) or 2 (m16): registers alternate row blocks first, then step along K
        row = g + 8 * (reg % row_blocks)
        col = per_reg * t + sub + 4 * per_reg * (reg // row_blocks)
        return row, col, 0 * row

    return FragmentMap("A", m, k, bits, values, coords)


def _packed_b(k: int, n: int, bits: int) -> FragmentMap:
    """B (K x N, column-major per lane) of every form but m8n8k4 .f16."""
    per_reg = max(1, 32 // bits)

    def coords(lane, v):
        g, t = group_id(lane), thread_in_group(lane)
        reg, sub = v // per_reg, v % per_reg
        row = per_reg * t + sub + 4 * per_reg * reg
        return row, g + 0 * row, 0 * row

    return FragmentMap("B", k, n, bits, k * n // WARP, coords)


def _acc(m: int, n: int, bits: int) -> FragmentMap:
    """C / D of every form but m8n8k4 .f16: element i at row g + 8 * (i // 2), column 2t + i % 2."""
    def coords(lane, i):
        g, t = group_id(lane), thread_in_group(lane)
        row = g + 8 * (i // 2)
        return row, 2 * t + i % 2, 0 * row

    return FragmentMap("C", m, n, bits, m * n // WARP, coords)


def _quad_pair(lane):
    """m8n8k4 .f16: (MMA instance, thread within its quad pair 0..3, high group 0/1) of a lane."""
    lane = np.asarray(lane)
    return (lane % 16) // 4, lane % 4, lane // 16


def _m8n8k4_f16_a(layout: MatrixLayout) -> FragmentMap:
    def coords(lane, i):
        q, t, hi = _quad_pair(lane)
        if layout is MatrixLayout.ROW:
            return t + 4 * hi + 0 * i, i + 0 * t, q + 0 * i
        return i + 4 * hi + 0 * t, t + 0 * i, q + 0 * i

    return FragmentMap("A", 8, 4, 16, 4, coords, instances=4)


def _m8n8k4_f16_b(layout: MatrixLayout) -> FragmentMap:
    def coords(lane, i):
        q, t, hi = _quad_pair(lane)
        if layout is MatrixLayout.COL:  # a column of B per thread
            return i + 0 * t, t + 4 * hi + 0 * i, q + 0 * i
        return t + 0 * i, i + 4 * hi + 0 * t, q + 0 * i

    return FragmentMap("B", 4, 8, 16, 4, coords, instances=4)


def _m8n8k4_f16_acc(dtype: str) -> FragmentMap:
    def coords(lane, i):
        q, t, hi = _quad_pair(lane)
        if dtype == "f16":  # a whole row per thread
            return t + 4 * hi + 0 * i, i + 0 * t, q + 0 * i
        return (t & 1) + (i & 2) + 4 * hi, (t & 2) + (i & 1) + (i & 4), q + 0 * i

    return FragmentMap("C", 8, 8, BITS[dtype], 8, coords, instances=4)


# ------------------------------------------------------------------------------------------------ per form

def _key(form: MmaForm):
    """What the fragment maps depend on (not signedness, satfinite, bit op or selector)."""
    return (form.shape, BITS[form.atype], BITS[form.btype], form.dtype, form.sparse,
            form.alayout if form.shape is Shape.M8N8K4 else None, form.blayout if form.shape is Shape.M8N8K4 else None)


@lru_cache(maxsize=None)
def _maps(shape: Shape, abits: int, bbits: int, dtype: str, sparse: bool, alayout, blayout):
    m, n, k = shape.mnk
    if shape is Shape.M8N8K4 and abits == 16:
        return _m8n8k4_f16_a(alayout), _m8n8k4_f16_b(blayout), _m8n8k4_f16_acc(dtype)
    return _packed_a(m, k // 2 if sparse else k, abits), _packed_b(k, n, bbits), _acc(m, n, BITS[dtype])


def a_map(form: MmaForm) -> FragmentMap:
    """A's map; for mma.sp, over the compressed M x K/2 storage (`expand_columns` gives the logical columns)."""
    return _maps(*_key(form))[0]


def b_map(form: MmaForm) -> FragmentMap:
    return _maps(*_key(form))[1]


def c_map(form: MmaForm) -> FragmentMap:
    """C's map, which is D's too (the ISA gives one for both) where C and D are of one type: see `acc_map`."""
    return _maps(*_key(form))[2]


def acc_map(form: MmaForm, operand: str) -> FragmentMap:
    """C's ('C') or D's ('D') map in its own type: they differ only where the types do (m8n8k4 .f32.f16.f16.f16,
    an .f32 D of 8 registers from an .f16 C of 4, the ISA's f16 and f32 accumulator fragments)."""
    if operand not in ("C", "D"):
        raise ValueError(f"an accumulator operand is 'C' or 'D', not {operand!r}")
    shape, abits, bbits, _, sparse, alayout, blayout = _key(form)
    return _maps(shape, abits, bbits, form.ctype if operand == "C" else form.dtype, sparse, alayout, blayout)[2]


# ------------------------------------------------------------------------------------------------ sparse A

@dataclass(frozen=True)
class MetadataMap:
    """Metadata bit b of `lane`'s register: row[lane, b], chunk[lane, b], slot (0: bits [1:0], the first kept
    element's index; 1: bits [3:2]) and index_bit (0/1 within the 2-bit index); held[lane] says whether the lane
    holds metadata at all under the selector."""
    row: np.ndarray
    chunk: np.ndarray
    slot: np.ndarray
    index_bit: np.ndarray
    held: np.ndarray


def metadata_map(form: MmaForm) -> MetadataMap:
    if not form.sparse:
        raise ValueError(f"{form.describe()} is dense: it has no metadata")
    m, _, k = form.mnk
    per_group = metadata_threads(form.shape, form.atype)
    bits_per_row = (k // chunk_elements(form.atype)) * 4
    # a register holds rows g and g + 8 in 16-bit halves for 16- and 32-bit types, the thread pair of m16n8k32 .f16
    # and m16n8k16 .tf32 splitting K between them; 8- and 4-bit types give a row 32 bits of a register (an H100
    # showed the 16-bit halves where a first reading had whole rows: FINDINGS section 9)
    unit = 16 if BITS[form.atype] >= 16 else min(32, bits_per_row)
    lane = np.arange(WARP)[:, None]
    b = np.arange(32)[None, :]
    g, t = group_id(lane), thread_in_group(lane)
    member = t - per_group * form.selector  # which of the selected threads of the group, 0 .. per_group-1
    held = (member >= 0) & (member < per_group)
    p = np.clip(member, 0, per_group - 1) * 32 + b  # position in the group's metadata bitstream
    u = p // unit
    row = g + 8 * (u % 2)
    chunk = (u // 2) * (unit // 4) + (p % unit) // 4
    nibble_bit = p % 4
    shape = (WARP, 32)
    return MetadataMap(*(np.broadcast_to(a, shape).copy() for a in (row, chunk, nibble_bit // 2, nibble_bit % 2)),
                       held.ravel())


def metadata_holders(form: MmaForm, row: int, chunk: int) -> tuple[int, int]:
    """(lane, lowest bit) of the 4-bit metadata field of (row, chunk): solved from `metadata_map`."""
    mm = metadata_map(form)
    hit = mm.held[:, None] & (mm.row == row) & (mm.chunk == chunk)
    lanes, bits = np.nonzero(hit)
    if lanes.size != 4:
        raise ValueError(f"metadata of row {row}, chunk {chunk} is held {lanes.size} bits wide, not 4")
    return int(lanes[0]), int(bits.min())


def field_indices(form: MmaForm, kept: np.ndarray) -> np.ndarray:
    """The two 2-bit indices a chunk's metadata field holds, from the positions (within the chunk) of the kept
    elements [..., kept_per_chunk]: positions of elements for 16/8-bit types, of pairs for 4-bit types; a .tf32
    element e is 16-bit halves (2e, 2e + 1)."""
    kept = np.asarray(kept)
    if BITS[form.atype] == 32:
        return np.concatenate([2 * kept, 2 * kept + 1], axis=-1)
    if BITS[form.atype] == 4:
        return kept[..., ::2] // 2
    return kept


def legal_field(form: MmaForm, field) -> np.ndarray:
    """Whether 4-bit metadata fields are defined for the form: two different indices (0b0000, 0b0101, 0b1010,
    0b1111 are undefined), ascending under ::ordered_metadata; .tf32 takes 0b0100 and 0b1110 only."""
    f = np.asarray(field)
    lo, hi = f & 3, (f >> 2) & 3
    if BITS[form.atype] == 32:
        return (f == 0b0100) | (f == 0b1110)
    ok = lo != hi
    if form.sparsity.value == "sp::ordered_metadata":
        ok &= lo < hi
    return ok


def encode_metadata(form: MmaForm, fields: np.ndarray) -> np.ndarray:
    """Each lane's metadata register (uint32 [32]) from the fields [M rows, K / chunk] (4-bit values); lanes the
    selector leaves out hold 0."""
    mm = metadata_map(form)
    f = np.asarray(fields, dtype=np.uint64)
    bit = (f[mm.row, mm.chunk] >> (2 * mm.slot + mm.index_bit).astype(np.uint64)) & np.uint64(1)
    regs = (bit << np.arange(32, dtype=np.uint64)[None, :]).sum(axis=1)
    return np.where(mm.held, regs, 0).astype(np.uint32)


def decode_metadata(form: MmaForm, regs: np.ndarray) -> np.ndarray:
    """The fields [M, K / chunk] the held lanes' registers give (the inverse of `encode_metadata`)."""
    m, _, k = form.mnk
    mm = metadata_map(form)
    r = np.asarray(regs, dtype=np.uint64)
    bit = (r[:, None] >> np.arange(32, dtype=np.uint64)[None, :]) & np.uint64(1)
    out = np.zeros((m, k // chunk_elements(form.atype)), np.uint64)
    lanes = np.nonzero(mm.held)[0]
    np.bitwise_or.at(out, (mm.row[lanes], mm.chunk[lanes]),
                     bit[lanes] << (2 * mm.slot[lanes] + mm.index_bit[lanes]).astype(np.uint64))
    return out.astype(np.uint8)


def expand_columns(form: MmaForm, fields: np.ndarray) -> np.ndarray:
    """[M, K / 2]: the logical column of A that each compressed column holds, from the metadata fields."""
    f = np.asarray(fields, dtype=np.int64)
    m, _, k = form.mnk
    chunk_len, kept = chunk_elements(form.atype), kept_per_chunk(form.atype)
    c = np.arange(k // 2)[None, :]
    chunk, slot = c // kept, c % kept
    field = f[np.arange(m)[:, None], chunk]
    bits = BITS[form.atype]
    if bits == 32:  # the kept element is the one whose halves the field names: index of its first half / 2
        return chunk * chunk_len + (field & 3) // 2
    if bits == 4:  # kept pairs: compressed columns 2s, 2s+1 are pair `index[s]`
        index = (field >> (2 * (slot // 2))) & 3
        return chunk * chunk_len + 2 * index + slot % 2
    return chunk * chunk_len + ((field >> (2 * slot)) & 3)
