"""Structured sparsity of wgmma.mma_async.sp (PTX ISA 9.7.15.6), as numpy models: how A is compressed, what
one metadata nibble says, and which thread's metadata register describes which chunk of A for each sparsity
selector.

The text (9.7.15.6.1, 9.7.15.6.3):
  * f16/bf16 (m64nNk32), e4m3/e5m2 and s8/u8 (m64nNk64): 2:4. Each chunk of 4 adjacent elements of a row of A
    holds 2 non-zeros; only they are stored, in order, and two 2-bit indices give their positions in the
    chunk. Values 0b0000, 0b0101, 0b1010, 0b1111 (both indices equal) are invalid; nothing else is.
  * tf32 (m64nNk16): 1:2. Each chunk of 2 holds 1 non-zero, stored; its 4-bit index is 0b0100 (position 0)
    or 0b1110 (position 1), any other value is undefined.
  * A is M x K/2 in its packed form. In shared memory it is described like any operand (the canonical layouts
    of 9.7.15.5.1.2 applied to the packed M x K/2 tile); in registers (RS) its fragment is the one of the
    dense instruction of the same type, over the packed columns (9.7.15.6.2 and the row/firstcol formulas of
    mma.sp, 9.7.14.6.2.2/.3/.6: thread l holds the non-zeros of the chunks its dense fragment's columns
    span).
  * Sparsity selector: f16/bf16 and tf32: 0 (threads T0, T1 of each group of four supply the metadata) or 1
    (T2, T3); e4m3/e5m2, s8/u8: 0, all threads supply it.
  * Each warp supplies the metadata of its 16 rows: warp w % 4 describes rows 16w .. 16w+15.

The figures (176 f16/bf16, 178 tf32, 180-181 8-bit; they reuse mma.sp's Figures 122, 125, 136-137), written
out: "Tk: [m..n] in cell [x][y..z]" says bits m..n of the metadata register of lane k hold the indices of the
chunk A[x][y..z]. With lane l = 4g + q (g = l / 4, q = l % 4) of warp w and one 4-bit nibble per chunk (nibble
c = bits 4c+3..4c):
  * k32 f16/bf16 and k16 tf32 (8 chunks per row), selector s: lane 4g + 2s + h (h = 0, 1) holds, in nibbles
    0-3, chunks 4h .. 4h+3 of row 16w + g and, in nibbles 4-7, the same chunks of row 16w + g + 8. So T(2s)
    describes the first half of K (columns 0-15 of f16, 0-7 of tf32), T(2s+1) the second.
  * k64 e4m3/e5m2/s8/u8 (16 chunks per row), selector 0: lane 4g + q holds, in nibbles 0-7, chunks
    8*(q/2) .. 8*(q/2)+7 of row 16w + g + 8*(q%2): T0 row g columns 0-31, T1 row g+8 columns 0-31, T2 row g
    columns 32-63, T3 row g+8 columns 32-63.
Inside a 2:4 nibble the index of the first stored element is bits 1..0 and of the second bits 3..2.

Where the text leaves a reading open (indices given in decreasing order, e.g. 0b0001: the text calls only
the four equal pairs invalid, so the model takes it literally: the first stored element goes to position 1),
results/FINDINGS.md says so and the cases that rest on it carry `unsettled`.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

WARPGROUP = 128
M = 64


class SparsityError(ValueError):
    """Metadata or a selector the PTX ISA calls invalid or undefined."""


@dataclass(frozen=True)
class SparseFormat:
    """The sparsity of one A element type."""
    atype: str
    k: int  # the instruction's (logical) K
    chunk: int  # elements per chunk of a row of A
    stored: int  # non-zeros stored per chunk
    selectors: tuple[int, ...]  # legal sparsity selector values

    @property
    def packed_k(self) -> int:
        return self.k // 2

    @property
    def chunks(self) -> int:
        """Chunks per row of A."""
        return self.k // self.chunk


FORMATS = {
    "f16": SparseFormat("f16", 32, 4, 2, (0, 1)),
    "bf16": SparseFormat("bf16", 32, 4, 2, (0, 1)),
    "tf32": SparseFormat("tf32", 16, 2, 1, (0, 1)),
    "e4m3": SparseFormat("e4m3", 64, 4, 2, (0,)),
    "e5m2": SparseFormat("e5m2", 64, 4, 2, (0,)),
    "s8": SparseFormat("s8", 64, 4, 2, (0,)),
    "u8": SparseFormat("u8", 64, 4, 2, (0,)),
}

TF32_NIBBLE = {0: 0b0100, 1: 0b1110}  # position of the non-zero in its 2-chunk -> its 4-bit index


def format_of(atype: str) -> SparseFormat:
    try:
        return FORMATS[atype]
    except KeyError:
        raise SparsityError(f"wgmma.mma_async.sp has no {atype!r} form; A is one of {', '.join(FORMATS)}") from None


# ---------------------------------------------------------------------------------------------------- one nibble

def nibble(fmt: SparseFormat, positions: tuple[int, ...]) -> int:
    """The 4-bit metadata of one chunk whose stored elements sit at `positions` (in storage order)."""
    if fmt.stored == 1:
        (p,) = positions
        return TF32_NIBBLE[p]
    p0, p1 = positions
    if not (0 <= p0 < 4 and 0 <= p1 < 4) or p0 == p1:
        raise SparsityError(f"2:4 positions {positions} must be two different indices 0..3")
    return p0 | (p1 << 2)


def positions(fmt: SparseFormat, value: int) -> tuple[int, ...]:
    """Where a chunk's stored elements go, in storage order, from its 4-bit metadata."""
    value = int(value) & 0xF
    if fmt.stored == 1:
        for p, v in TF32_NIBBLE.items():
            if v == value:
                return (p,)
        raise SparsityError(f"tf32 metadata {value:#06b} is undefined (0b0100 or 0b1110 only)")
    p0, p1 = value & 3, value >> 2
    if p0 == p1:
        raise SparsityError(f"2:4 metadata {value:#06b} is invalid (both indices {p0})")
    return (p0, p1)


@lru_cache(maxsize=None)  # each sparse case asks it several times
def legal_nibbles(fmt: SparseFormat, ordered_only: bool = False) -> tuple[int, ...]:
    """Every metadata value the text allows for one chunk (2:4: 12, the 6 increasing pairs with
    ordered_only; 1:2: 2)."""
    if fmt.stored == 1:
        return tuple(TF32_NIBBLE.values())
    pairs = itertools.combinations(range(4), 2) if ordered_only else itertools.permutations(range(4), 2)
    return tuple(nibble(fmt, p) for p in pairs)


def is_ordered(fmt: SparseFormat, value: int) -> bool:
    """The chunk's indices increase (what CUTLASS's compressor and mma.sp::ordered_metadata produce)."""
    pos = positions(fmt, value)
    return list(pos) == sorted(pos)


# ---------------------------------------------------------------------------------------------------- A

def decompress(fmt: SparseFormat, packed: np.ndarray, nibbles: np.ndarray) -> np.ndarray:
    """The logical M x K matrix A from its packed M x K/2 values and its [M, chunks] metadata nibbles: stored
    element p of chunk c (packed column stored*c + p) goes to column chunk*c + position p; the rest are zero."""
    packed = np.asarray(packed)
    rows = packed.shape[0]
    nib = np.asarray(nibbles, dtype=np.int64)
    if nib.shape != (rows, fmt.chunks) or packed.shape[1] != fmt.packed_k:
        raise SparsityError(f"{fmt.atype}: packed A must be {rows}x{fmt.packed_k} with {rows}x{fmt.chunks} "
                            f"nibbles, not {packed.shape} and {nib.shape}")
    pos = position_table(fmt).take(nib, axis=0)  # [rows, chunks, stored]
    if (pos < 0).any():
        r, c = np.argwhere((pos < 0).any(axis=2))[0]
        raise SparsityError(f"row {r} chunk {c}: metadata {int(nib[r, c]):#06b} is not valid for {fmt.atype}")
    out = np.zeros((rows, fmt.k), dtype=packed.dtype)
    r = np.arange(rows)[:, None, None]
    c = np.arange(fmt.chunks)[None, :, None]
    # flat indices: numpy's three-array indexing of both sides took most of this function's time
    out.ravel()[(r * fmt.k + fmt.chunk * c + pos).ravel()] = packed.ravel()  # packed column stored*c + p, in order
    return out


def position_table(fmt: SparseFormat) -> np.ndarray:
    """[16, stored]: `positions` of each 4-bit metadata value, -1 where the value is not valid (read-only). Cached
    under the `positions` this module holds now, so that one planted in its place is read, not the cached table."""
    return positions_table_of(fmt, positions)


@lru_cache(maxsize=None)
def positions_table_of(fmt: SparseFormat, positions_of) -> np.ndarray:
    table = np.full((16, fmt.stored), -1, np.int64)
    for v in range(16):
        try:
            table[v] = positions_of(fmt, v)
        except SparsityError:
            pass
    table.flags.writeable = False
    return table


# ---------------------------------------------------------------------------------------------------- registers

@lru_cache(maxsize=None)
def metadata_map(atype: str, selector: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, chunk) [128 threads, 8 nibbles] that nibble i of thread t's metadata register describes when the
    instruction is issued with `selector`; -1 for the threads whose register is not read."""
    fmt = format_of(atype)
    if selector not in fmt.selectors:
        raise SparsityError(f"sparsity selector {selector} is undefined for {atype} (legal: "
                            f"{', '.join(map(str, fmt.selectors))})")
    t = np.arange(WARPGROUP)[:, None]
    w, lane = t // 32, t % 32
    g, q = lane // 4, lane % 4
    i = np.arange(8)[None, :]
    if fmt.chunks == 8:  # f16/bf16, tf32: a thread pair per group of four
        h = q - 2 * selector
        row = 16 * w + g + 8 * (i // 4)
        chunk = 4 * h + i % 4
        read = (h == 0) | (h == 1)
    else:  # 8-bit: all four threads
        row = 16 * w + g + 8 * (q % 2) + 0 * i
        chunk = 8 * (q // 2) + i
        read = np.ones_like(q, bool)
    row, chunk = np.broadcast_arrays(np.where(read, row, -1), np.where(read, chunk, -1))
    row, chunk = row.copy(), chunk.copy()
    row.flags.writeable = chunk.flags.writeable = False
    return row, chunk


def metadata_registers(atype: str, nibbles: np.ndarray, selector: int, others: np.ndarray | None = None) -> np.ndarray:
    """uint32 [128]: every thread's metadata register for [64, chunks] nibbles issued with `selector`; the
    registers of threads the selector does not read are `others` (uint32 [128]) or 0."""
    row, chunk = metadata_map(atype, selector)
    nib = np.asarray(nibbles, dtype=np.uint64)
    if nib.shape != (M, format_of(atype).chunks):
        raise SparsityError(f"{atype}: metadata must be {M}x{format_of(atype).chunks} nibbles, not {nib.shape}")
    read = row[:, 0] >= 0
    vals = np.where(row >= 0, nib.ravel().take(np.maximum(row, 0) * nib.shape[1] + np.maximum(chunk, 0)), 0)
    regs = (vals << (4 * np.arange(8, dtype=np.uint64))[None, :]).sum(axis=1).astype(np.uint32)
    if others is not None:
        regs = np.where(read, regs, np.asarray(others, dtype=np.uint32))
    return regs


def metadata_read(atype: str, regs: np.ndarray, selector: int) -> np.ndarray:
    """The [64, chunks] nibbles the tensor core takes from the threads' metadata registers for `selector`."""
    fmt = format_of(atype)
    row, chunk = metadata_map(atype, selector)
    r = np.asarray(regs, dtype=np.uint64)[:, None]
    vals = (r >> (4 * np.arange(8, dtype=np.uint64))[None, :]) & np.uint64(0xF)
    out = np.full((M, fmt.chunks), -1, np.int64)
    sel = row >= 0
    out[row[sel], chunk[sel]] = vals[sel].astype(np.int64)
    if (out < 0).any():
        raise AssertionError(f"{atype} selector {selector}: the metadata map leaves chunks undescribed")
    return out
