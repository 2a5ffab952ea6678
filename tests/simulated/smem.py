"""Shared memory as the simulated tensor core reads it: descriptor fields -> the bit address of every operand
element, written from the PTX ISA text (9.7.15.5.1.2 canonical layouts, 9.7.15.5.1.2.2 / 9.7.16.4.1
descriptors), independently of harness/spec/layouts.py (the model under test).

Canonical layouts (CuTe notation, strides in elements, T = 128 / element bits elements per 16-byte chunk,
W = swizzle row bytes / 16):
    K-major,  none      ((8,m),(T,2k)) : ((1T,SBO),(1,LBO))
    K-major,  swizzled  ((8,m),(T,2k)) : ((WT,SBO),(1,T))        LBO unused
    MN-major, none      ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))
    MN-major, swizzled  ((T,W,m),(8,k)) : ((1,T,LBO),(WT,SBO))
The swizzle is CuTe's Swizzle<B,M,S> on the absolute shared-memory byte address (32B <1,4,3>, 64B <2,4,3>,
128B <3,4,3>; tcgen05's 128B_base32b is CUTLASS's Layout_MN_SW128_32B atom, Swizzle<2,5,2> on bytes). The
matrix base offset is, per the ISA, (pattern start >> 7) & 7 for a pattern that does not start on its
boundary, i.e. the row phase the pattern starts at: the simulator subtracts it from the phase bits.
The shared-memory window of the simulated CTA starts at shared address 0.
"""
from __future__ import annotations

import numpy as np

WINDOW_BYTES = 1 << 18  # what the 14-bit start field (<< 4) can reach

# swizzle name -> (B, M, S, row bytes)
SWIZZLE = {"none": (0, 4, 3, 16), "32B": (1, 4, 3, 32), "64B": (2, 4, 3, 64), "128B": (3, 4, 3, 128),
           "128B_base32b": (2, 5, 2, 128)}
WGMMA_SWIZZLE = {0: "none", 1: "128B", 2: "64B", 3: "32B"}  # bits 62-63 of the sm_90 descriptor
TCGEN05_SWIZZLE = {0: "none", 1: "128B_base32b", 2: "128B", 4: "64B", 6: "32B"}  # bits 61-63


class NotSimulated(RuntimeError):
    """A launch the simulator has no independent source for; the message says what and why."""


def field(value: int, lo: int, width: int) -> int:
    return (int(value) >> lo) & ((1 << width) - 1)


def decode_wgmma(desc: int) -> dict:
    return {"start": field(desc, 0, 14) << 4, "lbo": field(desc, 16, 14) << 4, "sbo": field(desc, 32, 14) << 4,
            "base_offset": field(desc, 49, 3), "swizzle": WGMMA_SWIZZLE[field(desc, 62, 2)]}


def decode_tcgen05(desc: int) -> dict:
    version = field(desc, 46, 3)
    if version != 1:
        raise NotSimulated(f"tcgen05 smem descriptor {desc:#018x}: version bits 46-48 are {version:#05b}, not 0b001")
    code = field(desc, 61, 3)
    if code not in TCGEN05_SWIZZLE:
        raise NotSimulated(f"tcgen05 smem descriptor {desc:#018x}: swizzle code {code} is reserved")
    if field(desc, 52, 1):
        raise NotSimulated("the sm_103a absolute-address LBO mode is not simulated")
    return {"start": field(desc, 0, 14) << 4, "lbo": field(desc, 16, 14) << 4, "sbo": field(desc, 32, 14) << 4,
            "base_offset": field(desc, 49, 3), "swizzle": TCGEN05_SWIZZLE[code]}


def swizzle(addr: np.ndarray, name: str, base_offset: int) -> np.ndarray:
    b, m, s, _ = SWIZZLE[name]
    if b == 0:
        return addr
    phase = ((addr >> (m + s)) - base_offset) & ((1 << b) - 1)
    return addr ^ (phase << m)


def bit_addresses(d: dict, major: str, bits: int, rows: int, cols: int) -> np.ndarray:
    """[rows (M or N), cols (K)] absolute bit address of each element of the operand the descriptor `d`
    describes; `major` is 'K' or 'MN' (from the instruction's transpose immediate / bit)."""
    T = 128 // bits
    W = SWIZZLE[d["swizzle"]][3] // 16
    i = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(cols, dtype=np.int64)[None, :]
    if major == "K":
        chunk, e = k // T, k % T
        if d["swizzle"] == "none":
            byte = (i % 8) * 16 + (i // 8) * d["sbo"] + chunk * d["lbo"]
        else:
            if cols > W * T:
                raise NotSimulated("K spans more than one swizzle row of a K-major operand")
            byte = (i % 8) * (16 * W) + (i // 8) * d["sbo"] + chunk * 16
    else:
        e, i1, i2 = i % T, (i // T) % W, i // (T * W)
        if d["swizzle"] == "none":
            byte = (i // T) * d["sbo"] + (k % 8) * 16 + (k // 8) * d["lbo"]
        else:
            byte = i1 * 16 + i2 * d["lbo"] + (k % 8) * (16 * W) + (k // 8) * d["sbo"]
    within = e * bits  # bit offset inside the 16-byte chunk
    byte = d["start"] + byte + within // 8
    return (swizzle(byte, d["swizzle"], d["base_offset"]) << 3) | (within % 8)


def window(image: np.ndarray) -> np.ndarray:
    w = np.zeros(WINDOW_BYTES + 16, np.uint8)
    w[:image.size] = image
    return w


def read_bits(win: np.ndarray, bit_addr: np.ndarray, bits: int) -> np.ndarray:
    """Element bits (uint64) at bit addresses, little-endian within a multi-byte element."""
    byte = (bit_addr >> 3) % WINDOW_BYTES
    if bits < 8:
        return ((win[byte] >> (bit_addr & 7).astype(np.uint8)) & ((1 << bits) - 1)).astype(np.uint64)
    out = np.zeros(byte.shape, np.uint64)
    for j in range(bits // 8):
        out |= win[byte + j].astype(np.uint64) << np.uint64(8 * j)
    return out
