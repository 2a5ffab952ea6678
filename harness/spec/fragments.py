"""Register fragments: which (row, col) of a matrix each thread's register element holds.

wgmma (PTX ISA 9.7.15.5.1.1, the facts of Figures 148-155 as written out in the spec README): a warpgroup is
128 threads; thread t is lane l = t % 32 of warp w = t // 32, and warp w owns rows 16w .. 16w+15.

tcgen05: the accumulator lives in Tensor Memory (lane = row, column = 32-bit column); `tcgen05.ld` moves it
to registers with one of the data-path shapes of PTX ISA 9.7.16.8; the maps are in `tmem_ld_fragment`.

Every map is a pair of int arrays (row, col) indexed [thread, element], vectorised.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

WARPGROUP = 128

# wgmma K per instruction, by A/B element type: always 32 bytes of K.
WGMMA_K = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32, "b1": 256}


@dataclass(frozen=True)
class Fragment:
    """Element e of thread t sits in register reg[t, e] at bit `shift[t, e]`, and is matrix[row, col]."""
    row: np.ndarray
    col: np.ndarray
    reg: np.ndarray
    shift: np.ndarray
    bits: int  # width of one element in the register
    regs_per_thread: int

    def __post_init__(self):
        # its own read-only copies: `extent` is computed once, and an array changed in place afterwards (the
        # caller's, or this one's) would send gather_registers down its flat path with a stale extent
        for name in ("row", "col", "reg", "shift"):
            a = np.array(getattr(self, name))
            a.flags.writeable = False
            object.__setattr__(self, name, a)

    @cached_property
    def in_register_order(self) -> bool:
        """Element e of every thread sits in register e // (elements per register), in order (every wgmma
        fragment): its fields never overlap, so a register is the sum of its elements' shifted bits."""
        per_reg = self.row.shape[1] // self.regs_per_thread
        return per_reg * self.regs_per_thread == self.row.shape[1] and bool(
            np.array_equal(self.reg, np.broadcast_to(np.arange(self.row.shape[1]) // per_reg, self.reg.shape)))

    @cached_property
    def byte_packed(self) -> bool:
        """Elements of 8, 16 or 32 bits in register order filling their registers, element e at bit
        (e % per register) * bits: a register is its elements' bits laid out as little-endian words (the wgmma
        fragments of those widths)."""
        per_reg = self.row.shape[1] // self.regs_per_thread
        return self.bits in (8, 16, 32) and per_reg * self.bits == 32 and self.in_register_order and bool(
            np.array_equal(self.shift, np.broadcast_to(np.arange(self.row.shape[1]) % per_reg * self.bits,
                                                       self.shift.shape)))

    @cached_property
    def shifted(self) -> bool:
        """Whether any element sits above bit 0 of its register."""
        return bool(self.shift.any())

    @cached_property
    def flat_indices(self) -> dict[int, np.ndarray]:
        """matrix width -> each element's index in a row-major matrix of that width (filled by flat_index)."""
        return {}

    @cached_property
    def extent(self) -> tuple[int, int, int, int]:
        """(least row, greatest row, least col, greatest col) of the elements it names."""
        return int(self.row.min()), int(self.row.max()), int(self.col.min()), int(self.col.max())

    def inside(self, shape) -> bool:
        """Whether every element it names lies in a matrix of `shape` (rows, cols), no index negative."""
        r0, r1, c0, c1 = self.extent
        return r0 >= 0 and c0 >= 0 and r1 < shape[0] and c1 < shape[1]

    def flat_index(self, width: int) -> np.ndarray:
        """Each element's index in a row-major matrix `width` wide (kept per width, read-only)."""
        index = self.flat_indices.get(width)
        if index is None:
            index = self.flat_indices[width] = self.row * width + self.col
            index.flags.writeable = False  # kept for every later gather, like the fragment's own arrays
        return index


def _threads():
    t = np.arange(WARPGROUP)[:, None]
    return t // 32, t % 32


@lru_cache(maxsize=None)
def wgmma_d_fragment(n: int, dtype: str) -> Fragment:
    """Accumulator D of m64nNk*: N/2 elements per thread; f32/s32 one per register, f16 two per register."""
    if n % 8 or not 8 <= n <= 256:
        raise ValueError(f"N = {n} is not a wgmma N (8..256, step 8)")
    w, l = _threads()
    i = np.arange(n // 2)[None, :]
    row = 16 * w + l // 4 + 8 * ((i // 2) % 2)
    col = 8 * (i // 4) + 2 * (l % 4) + (i % 2)
    row, col = np.broadcast_arrays(row, col)
    if dtype in ("f32", "s32"):
        reg, shift, bits, nregs = i + 0 * row, 0 * row, 32, n // 2
    elif dtype == "f16":
        reg, shift, bits, nregs = i // 2 + 0 * row, 16 * (i % 2) + 0 * row, 16, n // 4
    else:
        raise ValueError(f"wgmma accumulators are f32, s32 or f16, not {dtype!r}")
    return Fragment(row, col, np.broadcast_to(reg, row.shape), np.broadcast_to(shift, row.shape), bits, nregs)


@lru_cache(maxsize=None)
def wgmma_a_fragment(atype: str) -> Fragment:
    """A in registers for m64nNk8/16/32/256: four 32-bit registers per thread."""
    k = WGMMA_K.get(atype)
    if k is None:
        raise ValueError(f"no wgmma A fragment for {atype!r}")
    w, l = _threads()
    if k == 16:  # 8 x 16-bit
        j = np.arange(8)[None, :]
        row = 16 * w + l // 4 + 8 * ((j // 2) % 2)
        col = 2 * (l % 4) + (j % 2) + 8 * (j // 4)
        bits = 16
    elif k == 8:  # 4 x tf32
        j = np.arange(4)[None, :]
        row = 16 * w + l // 4 + 8 * (j % 2)
        col = (l % 4) + 4 * (j // 2)
        bits = 32
    elif k == 32:  # 16 x 8-bit
        j = np.arange(16)[None, :]
        row = 16 * w + l // 4 + 8 * ((j // 4) % 2)
        col = 4 * (l % 4) + (j % 4) + 16 * (j // 8)
        bits = 8
    else:  # 128 x 1-bit
        j = np.arange(128)[None, :]
        row = 16 * w + l // 4 + 8 * ((j // 32) % 2)
        col = 32 * (l % 4) + (j % 32) + 128 * (j // 64)
        bits = 1
    per_reg = 32 // bits
    row, col = np.broadcast_arrays(row, col)
    jj = np.broadcast_to(j, row.shape)
    return Fragment(row, col, jj // per_reg, (jj % per_reg) * bits, bits, 4)


def gather_registers(frag: Fragment, matrix_bits: np.ndarray) -> np.ndarray:
    """Pack a matrix's raw element bits into per-thread registers: uint32 [128, regs_per_thread]; a stack of
    matrices [cases, rows, cols] into [cases, 128, regs_per_thread], each as it would be alone."""
    matrix = np.asarray(matrix_bits)
    if matrix.dtype.kind != "u" or 8 * matrix.dtype.itemsize < max(frag.bits, 32):
        # bits in an unsigned type as wide as a register (or wider) are packed in it; anything else as uint64
        matrix = matrix.astype(np.uint64)
    if matrix.ndim == 3:
        if not matrix.shape[0]:
            return np.zeros((0, frag.row.shape[0], frag.regs_per_thread), np.uint32)
        lead = matrix.shape[0]
        if not frag.inside(matrix.shape[1:]) or not frag.in_register_order:
            return np.stack([gather_registers(frag, m) for m in matrix])
        vals = matrix.reshape(lead, -1).take(frag.flat_index(matrix.shape[2]), axis=1)
    elif matrix.ndim == 2 and frag.inside(matrix.shape):
        # one flat index, not the (row, col) pair: numpy's two-array indexing took 6x as long (a case packs two
        # or three fragments)
        lead = None
        vals = matrix.ravel().take(frag.flat_index(matrix.shape[1]))
    else:  # numpy's own indexing: its error for an element outside the matrix, its meaning of a negative index
        lead = None
        vals = matrix[frag.row, frag.col]
    per_reg = frag.row.shape[1] // frag.regs_per_thread
    if frag.byte_packed:  # whole bytes in order, low first: the register is its elements' little-endian bytes
        little = vals.astype(f"<u{frag.bits // 8}", copy=False).view("<u4")
        return little.reshape((*vals.shape[:-1], frag.regs_per_thread)).astype(np.uint32, copy=False)
    vals = vals & vals.dtype.type((1 << frag.bits) - 1)
    if frag.in_register_order:  # a sum over each register's elements is their bitwise OR
        if per_reg == 1 and not frag.shifted:
            return vals.astype(np.uint32)
        shifted = vals.astype(np.uint64) << frag.shift.astype(np.uint64)
        shape = (frag.row.shape[0], frag.regs_per_thread, per_reg)
        return shifted.reshape(shape if lead is None else (lead, *shape)).sum(axis=-1).astype(np.uint32)
    regs = np.zeros((frag.row.shape[0], frag.regs_per_thread), dtype=np.uint64)
    t = np.broadcast_to(np.arange(frag.row.shape[0])[:, None], frag.row.shape)
    np.bitwise_or.at(regs, (t, frag.reg), vals << frag.shift.astype(np.uint64))
    return regs.astype(np.uint32)


def scatter_registers(frag: Fragment, regs: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Unpack per-thread registers into a matrix of raw element bits (uint64)."""
    r = np.asarray(regs, dtype=np.uint64)
    t = np.broadcast_to(np.arange(frag.row.shape[0])[:, None], frag.row.shape)
    vals = (r[t, frag.reg] >> frag.shift.astype(np.uint64)) & np.uint64((1 << frag.bits) - 1)
    out = np.zeros(shape, dtype=np.uint64)
    out[frag.row, frag.col] = vals
    return out


# ----------------------------------------------------------------------------------------------------
# tcgen05: Tensor Memory -> registers through tcgen05.ld (PTX ISA 9.7.16.8.x data-path layouts).
#
# A warp reads the 32 lanes of its lane quarter (warp w % 4 may access lanes 32*(w%4) .. +31). For each shape
# the value register r of lane l of the warp reads TMEM (lane, column) relative to the instruction's base
# address, where .num = xN repeats the base pattern N times along the columns.

TMEM_LD_SHAPES = ("32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2")


def tmem_ld_fragment(shape: str, num: int = 1, imm_half_offset: int = 0):
    """(lane, column) arrays [32 threads, registers] of one warp's tcgen05.ld.sync.aligned.<shape>.x<num>.

    Lanes are relative to the warp's 32-lane quarter base; columns are 32-bit TMEM columns from the
    instruction's column address. For 16x32bx2, `imm_half_offset` is the immediate column offset of the
    second half (lanes 16..31).
    """
    l = np.arange(32)[:, None]
    if shape == "32x32b":  # thread l reads lane l; register r is column r
        r = np.arange(num)[None, :]
        lane, col = l + 0 * r, r + 0 * l
    elif shape == "16x64b":  # 16 lanes x 2 columns per .num
        r = np.arange(num)[None, :]
        lane, col = l // 4 + 8 * (l % 2) + 0 * r, (l // 2) % 2 + 2 * r
    elif shape == "16x128b":  # 16 lanes x 4 columns per .num, two registers each
        r = np.arange(2 * num)[None, :]
        lane, col = l // 4 + 8 * (r % 2), l % 4 + 4 * (r // 2)
    elif shape == "16x256b":  # 16 lanes x 8 columns per .num, four registers each (the mma.sync C shape)
        r = np.arange(4 * num)[None, :]
        lane, col = l // 4 + 8 * ((r // 2) % 2), r % 2 + 2 * (l % 4) + 8 * (r // 4)
    elif shape == "16x32bx2":  # two 16-lane x 32-bit accesses, the second at +imm_half_offset columns
        r = np.arange(num)[None, :]
        lane, col = l % 16 + 0 * r, r + imm_half_offset * (l // 16)
    else:
        raise ValueError(f"unknown tcgen05.ld shape {shape!r}; one of {', '.join(TMEM_LD_SHAPES)}")
    lane, col = np.broadcast_arrays(lane, col)
    return lane.copy(), col.copy()
