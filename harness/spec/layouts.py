"""Canonical shared-memory layouts of tensor-core operands (PTX ISA 9.7.15.5.1.2 and 9.7.16.3).

A tile is MN x K logical elements (rows = MN index, cols = K index). The spec writes its layouts in CuTe
notation, in units of elements, with T = 128 / element-bits elements per 16-byte chunk:

    MN-major, interleave  ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))     Swizzle<0,4,3>
    MN-major, 32B/64B/128B ((T,W,m),(8,k)) : ((1,T,LBO),(WT,SBO))    Swizzle<1|2|3,4,3>, W = 2|4|8
    K-major,  interleave  ((8,m),(T,2k))  : ((1T,SBO),(1,LBO))       Swizzle<0,4,3>
    K-major,  32B/64B/128B ((8,m),(T,2k))  : ((WT,SBO),(1,T))         Swizzle<1|2|3,4,3>

The layout gives an offset from the matrix start address; the swizzle then acts on the *byte address in
shared memory* (as CuTe's swizzle does on a shared-memory pointer), so the pattern is anchored to address
bits 4..9, not to the tile. The matrix base offset moves that anchor: the spec says it is 0 when the
pattern starts on its boundary (1024/512/256 B) and otherwise (pattern_start >> 7) & 7; we model it as
shifting the row phase taken from address bits 7..9 back by base_offset rows, which makes a pattern that
starts at `pattern_start` swizzle as if it started on the boundary.

Everything here is vectorised numpy; addresses are absolute byte addresses in the CTA's shared window.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from harness.spec import dtypes


class LayoutError(ValueError):
    """A tile the descriptor cannot express, or parameters out of range."""


# Swizzle<B, M, S> of CuTe on byte addresses: bits [M+S, M+S+B) are XORed into bits [M, M+B).
SWIZZLE_BMS = {
    "none": (0, 4, 3),
    "32B": (1, 4, 3),
    "64B": (2, 4, 3),
    "128B": (3, 4, 3),
    # tcgen05 only: 128-byte rows swizzled in 32-byte units (CUTLASS's SW128_32B atom, Swizzle<2,5,2>).
    "128B_base32b": (2, 5, 2),
}
# Bytes one swizzle row spans (the atom's width); for 'none' a core-matrix row of 16 bytes.
SWIZZLE_ROW_BYTES = {"none": 16, "32B": 32, "64B": 64, "128B": 128, "128B_base32b": 128}
# K-rows an MN-major swizzle atom spans (SBO steps over this many): 8 for the 16-byte-atomicity swizzles (the
# canonical layouts' ((T,W,m),(8,k)) : ((1,T,LBO),(WT,SBO))); 4 for 128B_base32b, whose Swizzle<2,5,2> repeats
# every 4 rows of 128 bytes. The ISA's canonical-layout table has no 128B_base32b row; CUTLASS's atom is 4 K-rows
# (cute/atom/mma_traits_sm100.hpp:72 Layout_MN_SW128_32B_Atom_Bits, Shape<_1024,_4>; make_umma_desc<Major::MN>
# strides SBO over SwizzleAtomKSize = 4 rows), DeepGEMM's tf32 MN-major descriptors likewise, and the swept tcgen05
# cases tile B so (tests/test_tcgen05_vs_cutlass.py diffs every CuTe SW128_32B tile, element by element).
MN_KROWS_PER_ATOM = {"128B_base32b": 4}
# Where the repeating pattern must start for base offset 0 (spec table).
PATTERN_BYTES = {"none": 16, "32B": 256, "64B": 512, "128B": 1024, "128B_base32b": 1024}
SMEM_BYTES = 1 << 18  # a descriptor's 14-bit address fields (16-byte units) reach 256 KiB
MAJORS = ("K", "MN")
SWIZZLES = ("none", "32B", "64B", "128B")


def swizzle_address(addr, swizzle: str, base_offset: int = 0):
    """Apply the swizzle of `swizzle` to byte addresses, anchored per `base_offset`."""
    b, m, s = SWIZZLE_BMS[swizzle]
    if b == 0:
        return addr
    mask = (1 << b) - 1
    a = np.asarray(addr, dtype=np.int64)
    phase = ((a >> (m + s)) - base_offset) & mask
    return a ^ (phase << m)


@dataclass(frozen=True)
class SmemLayout:
    major: str  # 'K' or 'MN'
    swizzle: str  # one of SWIZZLE_BMS
    dtype: str  # element type name (its bits give T)
    rows: int  # MN extent
    cols: int  # K extent
    lbo: int  # bytes
    sbo: int  # bytes
    start: int = 0  # byte address of the matrix start
    base_offset: int = 0

    @property
    def bits(self) -> int:
        return dtypes.get(self.dtype).bits

    @property
    def T(self) -> int:
        return 128 // self.bits

    @property
    def row_bytes(self) -> int:
        return SWIZZLE_ROW_BYTES[self.swizzle]

    def moved(self, **changes) -> "SmemLayout":
        return replace(self, **changes)


def validate(layout: SmemLayout) -> SmemLayout:
    """Refuse, with one clear sentence, any tile the canonical layouts cannot express."""
    L = layout
    if L.major not in MAJORS:
        raise LayoutError(f"major must be K or MN, not {L.major!r}")
    if L.swizzle not in SWIZZLE_BMS:
        raise LayoutError(f"unknown swizzle {L.swizzle!r}; one of {', '.join(SWIZZLE_BMS)}")
    bits = dtypes.get(L.dtype).bits
    if 128 % bits:
        raise LayoutError(f"{L.dtype} is {bits} bits wide; canonical layouts need a width dividing 128 "
                          "(6-bit types sit in 8-bit containers)")
    T = 128 // bits
    for name in ("lbo", "sbo", "start"):
        v = getattr(L, name)
        if v < 0 or v % 16:
            raise LayoutError(f"{name} = {v} must be a non-negative multiple of 16 bytes")
    if not 0 <= L.base_offset <= 7:
        raise LayoutError(f"base offset {L.base_offset} must be in 0..7")
    if L.swizzle == "none" and L.base_offset:
        raise LayoutError("the matrix base offset is not valid with no swizzle")
    if L.rows <= 0 or L.cols <= 0:
        raise LayoutError("rows and cols must be positive")
    if L.major == "K":
        if L.rows % 8:
            raise LayoutError(f"K-major tiles come in core matrices of 8 rows; rows = {L.rows}")
        if L.cols % T:
            raise LayoutError(f"K-major: cols = {L.cols} is not a whole number of 16-byte chunks "
                              f"({T} {L.dtype} elements each)")
        k_bytes = L.cols * bits // 8
        if L.swizzle != "none" and k_bytes > L.row_bytes:
            raise LayoutError(
                f"K-major {L.swizzle} tile is {k_bytes} bytes wide along K but one swizzle row holds "
                f"{L.row_bytes} bytes; the descriptor has no stride for a second atom along K "
                "(issue one instruction per K-step instead)")
    else:
        if L.rows % T:
            raise LayoutError(f"MN-major: rows = {L.rows} is not a whole number of 16-byte chunks "
                              f"({T} {L.dtype} elements each)")
        krows = MN_KROWS_PER_ATOM.get(L.swizzle, 8)
        if L.cols % krows:
            raise LayoutError(f"MN-major {L.swizzle} tiles come in groups of {krows} K-rows; cols = {L.cols}")
    return L


def canonical_bit_offsets(layout: SmemLayout, mn=None, k=None, checked: bool = True) -> np.ndarray:
    """Bit offset from the start address of element (mn, k), before swizzling (the CuTe layout). `checked` False:
    the offsets the descriptor's fields give without the canonical layout's rules (validate), as the tensor core
    reads them from any descriptor (a narrower swizzle than its tile still reads somewhere)."""
    L = validate(layout) if checked else layout
    if mn is None:  # the whole tile: a column of MN indices against a row of K indices (broadcast at the end,
        # so the index arithmetic runs on rows + cols values, not rows x cols)
        mn, k = np.arange(L.rows)[:, None], np.arange(L.cols)[None, :]
    mn = np.asarray(mn, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    T, bits, W = L.T, L.bits, L.row_bytes
    if L.major == "K":
        chunk, elem = k // T, k % T
        row, group = mn % 8, mn // 8
        if L.swizzle == "none":
            byte = group * L.sbo + chunk * L.lbo + row * 16
        else:  # LBO is not used for swizzled K-major layouts
            byte = group * L.sbo + row * W + chunk * 16
    else:
        chunk, elem = mn // T, mn % T
        krows = MN_KROWS_PER_ATOM.get(L.swizzle, 8)
        krow, kgroup = k % krows, k // krows
        if L.swizzle == "none":
            byte = chunk * L.sbo + kgroup * L.lbo + krow * 16
        else:
            per_row = W // 16
            byte = (chunk % per_row) * 16 + (chunk // per_row) * L.lbo + krow * W + kgroup * L.sbo
    return byte * 8 + elem * bits  # terms of MN and of K both: the sum broadcasts to the whole tile


@lru_cache(maxsize=4096)
def element_bit_addresses(layout: SmemLayout) -> np.ndarray:
    """(rows, cols) absolute bit address of every element, as the tensor core reads it (read-only)."""
    off = canonical_bit_offsets(layout)
    byte = layout.start + (off >> 3)
    out = (swizzle_address(byte, layout.swizzle, layout.base_offset) << 3) | (off & 7)
    out.flags.writeable = False
    return out


def smem_address(layout: SmemLayout) -> np.ndarray:
    """(rows, cols) shared-memory byte address each logical element is read from."""
    return element_bit_addresses(layout) >> 3


@lru_cache(maxsize=4096)  # a kernel's cases place the same few layouts over and over
def footprint(layout: SmemLayout) -> tuple[int, int]:
    """[lo, hi) byte range of the 16-byte chunks the tile touches."""
    a = smem_address(layout)
    return int(a.min()) & ~15, (int(a.max()) | 15) + 1


@lru_cache(maxsize=4096)
def is_distinct(layout: SmemLayout) -> bool:
    # Every element sits on a multiple of its own width, so element slots are addresses // bits; counting
    # them over the tile's small span is far cheaper than sorting or hashing the addresses.
    slot = element_bit_addresses(layout).ravel() // layout.bits
    return int(np.bincount(slot - slot.min()).max()) <= 1


def check_distinct(layout: SmemLayout) -> None:
    """Refuse layouts whose strides make two elements share storage."""
    if not is_distinct(layout):
        raise LayoutError(f"LBO={layout.lbo} / SBO={layout.sbo} make two elements of the "
                          f"{layout.rows}x{layout.cols} {layout.major}-major tile overlap")


def write_image(layout: SmemLayout, element_bits: np.ndarray, image: np.ndarray) -> None:
    """Place the raw bits of a (rows, cols) matrix into a uint8 shared-memory image (in place)."""
    check_distinct(layout)
    addr = element_bit_addresses(layout)
    if addr.max() // 8 >= image.size:
        raise LayoutError(f"tile reaches byte {addr.max() // 8}, beyond the {image.size}-byte image")
    v = np.asarray(element_bits, dtype=np.uint64)
    if v.shape != addr.shape:
        raise LayoutError(f"matrix is {v.shape}, layout is {addr.shape}")
    words = image_words(layout, image)
    if words is not None:
        view, index = words
        view[index] = v.astype(view.dtype)  # the low `bits` bits, little-endian, as write_bits writes them
        return
    write_bits(image, addr, v, layout.bits, disjoint=True)


# Element widths that are whole little-endian words: an element that starts on a multiple of its width is one
# word of the image, written and read in one indexing (not byte by byte).
WORDS = {8: np.dtype("<u1"), 16: np.dtype("<u2"), 32: np.dtype("<u4"), 64: np.dtype("<u8")}


# layout -> (the element_bit_addresses array the entry was derived from, its word index): kept only while that
# array is the one element_bit_addresses gives, so a model patched under test (its caches cleared) is never
# answered from indices of the model before the patch
WORD_INDEX_CACHE: dict[SmemLayout, tuple[np.ndarray, np.ndarray | None]] = {}


def word_index(layout: SmemLayout) -> np.ndarray | None:
    """(rows, cols) index of each element in the image seen as words of its width; None for a sub-byte width
    (read-only)."""
    addr = element_bit_addresses(layout)
    hit = WORD_INDEX_CACHE.get(layout)
    if hit is not None and hit[0] is addr:
        return hit[1]
    out = None
    if layout.bits in WORDS and not (addr % layout.bits).any():  # never misaligned for a valid layout
        out = addr // layout.bits
        out.flags.writeable = False
    if len(WORD_INDEX_CACHE) >= 4096:  # as many layouts as element_bit_addresses keeps
        WORD_INDEX_CACHE.clear()
    WORD_INDEX_CACHE[layout] = (addr, out)
    return out


def image_words(layout: SmemLayout, image: np.ndarray):
    """(the image as words of the layout's width, each element's word index), or None (write_bits' way)."""
    index = word_index(layout)
    if index is None or image.size % (layout.bits // 8) or not image.flags.c_contiguous:
        return None
    return image.view(WORDS[layout.bits]), index


def write_bits(image: np.ndarray, bit_addr, values, bits: int, disjoint: bool = False) -> None:
    """Write `bits`-wide raw values at bit addresses of a uint8 image (in place), little-endian bytes; a
    sub-byte element only changes its own bits of the byte it shares. `disjoint`: no two elements share a bit
    (a distinct layout's), which lets sub-byte elements be merged by sums instead of one by one."""
    bit_addr = np.asarray(bit_addr, np.int64).ravel()
    flat = np.asarray(values, np.uint64).ravel()
    if bits % 8 == 0:
        base = bit_addr >> 3
        for i in range(bits // 8):  # little-endian bytes of each element
            image[base + i] = ((flat >> np.uint64(8 * i)) & np.uint64(0xFF)).astype(np.uint8)
        return
    byte, shift = bit_addr >> 3, (bit_addr & 7).astype(np.uint64)
    mask = ((np.uint64((1 << bits) - 1) << shift)).astype(np.uint8)
    vals = ((flat & np.uint64((1 << bits) - 1)) << shift).astype(np.uint8)
    if disjoint and byte.size:
        # the elements of a byte hold different bits, so per byte the sum of their masks (values) is their OR:
        # two bincounts (exact in float64, every sum < 256) instead of ufunc.at, which took ~0.2 ms a b1 tile
        lo = int(byte.min())
        slot = byte - lo
        span = int(slot.max()) + 1
        mask_of = np.bincount(slot, weights=mask, minlength=span).astype(np.uint8)
        vals_of = np.bincount(slot, weights=vals, minlength=span).astype(np.uint8)
        window = image[lo:lo + span]
        window[...] = (window & ~mask_of) | vals_of  # bytes no element touches: mask 0, value 0, unchanged
        return
    np.bitwise_and.at(image, byte, ~mask)
    np.bitwise_or.at(image, byte, vals)


def read_image(layout: SmemLayout, image: np.ndarray) -> np.ndarray:
    """The (rows, cols) raw bits the tensor core would read from `image` under `layout`."""
    bits = layout.bits
    addr = element_bit_addresses(layout)
    img = np.asarray(image, dtype=np.uint8)
    words = image_words(layout, img)
    if words is not None:
        view, index = words
        return view.take(index).astype(np.uint64)
    if bits % 8 == 0:
        out = np.zeros(addr.shape, dtype=np.uint64)
        base = addr >> 3
        for i in range(bits // 8):
            out |= img[base + i].astype(np.uint64) << np.uint64(8 * i)
        return out
    return (img[addr >> 3].astype(np.uint64) >> (addr & 7).astype(np.uint64)) & np.uint64((1 << bits) - 1)


# ----------------------------------------------------------------------------------------------------
# Minimal (packed) strides: what a production kernel with a dense tile would use.

def packed_strides(major: str, swizzle: str, dtype: str, rows: int, cols: int) -> tuple[int, int]:
    """(LBO, SBO) in bytes for a densely packed tile of rows x cols, following the spec's definitions."""
    bits = dtypes.get(dtype).bits
    T = 128 // bits
    W = SWIZZLE_ROW_BYTES[swizzle]
    if major == "K":
        if swizzle == "none":
            # core matrices (8 rows x 16 B) K-chunk after K-chunk, then the next 8 rows
            k_chunks = max(1, cols // T)
            return 128, 128 * k_chunks
        return 16, 8 * W  # LBO unused ("assumed 1"); SBO: 8 rows of one swizzle row each
    mn_chunks = max(1, rows // T)
    if swizzle == "none":
        # MN chunks (core matrices of 8 K-rows x 16 B) first, then the next 8 K-rows
        return 128 * mn_chunks, 128
    per_row = W // 16
    mn_atoms = max(1, -(-mn_chunks // per_row))
    atom = MN_KROWS_PER_ATOM.get(swizzle, 8) * W
    return atom, atom * mn_atoms


def describe_tile(layout: SmemLayout) -> str:
    return (f"{layout.major}-major {layout.swizzle} {layout.dtype} {layout.rows}x{layout.cols} "
            f"LBO={layout.lbo} SBO={layout.sbo} start={layout.start} base_offset={layout.base_offset}")
