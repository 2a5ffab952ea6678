"""Element types of the tensor-core operands and accumulators.

Each type knows its width, its PTX spelling and how to go between values and raw bits, so that every
later stage (smem images, register fragments, the reference) works on exact bit patterns.

Values are carried as float64 (floating types) or int64 (integer types); bits as uint64.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class ElementType:
    name: str
    ptx: str
    bits: int
    kind: str  # 'float', 'int', 'uint', 'bits'
    np_dtype: object = None  # numpy/ml_dtypes type whose low `bits` bits are the encoding
    # tf32: the tensor core reads a 32-bit container and ignores the low 13 mantissa bits.
    ignored_low_bits: int = 0

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def per_16_bytes(self) -> int:
        """T of the spec: elements per 128-bit chunk."""
        return 128 // self.bits

    def to_bits(self, values) -> np.ndarray:
        """Encode values (rounding to nearest where needed) to raw bits, as uint64."""
        v = np.asarray(values)
        if self.name == "f16x2":  # values[..., 0] is the low half
            h = TYPES["f16"].to_bits(v)
            return pack_f16x2(h[..., 0], h[..., 1])
        if self.name == "tf32":
            b = np.asarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
            return b & np.uint64(0xFFFFE000)
        if self.name == "b1":
            return (np.asarray(v, dtype=np.int64) & 1).astype(np.uint64)
        if self.kind in ("int", "uint"):
            lo, hi = self.int_range()
            iv = np.asarray(v, dtype=np.int64)
            if np.any(iv < lo) or np.any(iv > hi):
                raise ValueError(f"value out of range for {self.name}")
            return (iv & ((1 << self.bits) - 1)).astype(np.uint64)
        enc = np.asarray(v, dtype=np.float64).astype(self.np_dtype)
        raw = enc.view(UNSIGNED_OF_WIDTH[enc.dtype.itemsize])
        if self.bits == 8 * enc.dtype.itemsize:  # the container's every bit is the encoding's: nothing to mask
            return raw.astype(np.uint64)
        return raw.astype(np.uint64) & np.uint64((1 << self.bits) - 1)

    def encoded(self, values, native: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(to_bits(values), from_bits of those bits): the values rounded to this type, as bits and as the values
        the bits decode to. A float type whose encoding fills its numpy container rounds once and reads the
        rounded container both ways (the same bits and values: from_bits would view the same container); any
        other type encodes and decodes. `native`: such a type's bits in their container's unsigned width
        (uint8/16/32: the same numbers, an eighth to a half of the bytes), not uint64."""
        rounded = self.rounded_container(values)
        if rounded is None:
            bits = self.to_bits(values)
            return bits, self.from_bits(bits)
        raw = rounded.view(UNSIGNED_OF_WIDTH[rounded.dtype.itemsize])
        return (raw if native else raw.astype(np.uint64)), rounded.astype(np.float64)

    def container_bits(self, values) -> np.ndarray | None:
        """A full-container float type's (`full_container`) encoding of the values, in the container's own unsigned
        width: to_bits' numbers without the widening to uint64; None for any other type."""
        rounded = self.rounded_container(values)
        return None if rounded is None else rounded.view(UNSIGNED_OF_WIDTH[rounded.dtype.itemsize])

    def rounded_container(self, values) -> np.ndarray | None:
        """The values rounded into a full-container float type's numpy dtype (as to_bits rounds them); None for
        any other type."""
        container = self.full_container()
        return None if container is None else np.asarray(values, dtype=np.float64).astype(container)

    def full_container(self) -> np.dtype | None:
        """The numpy dtype of a float type whose encoding is every bit of it (f16, bf16, f32, e4m3, e5m2); None
        for any other (tf32 ignores low bits, f16x2 is a pair, fp6/fp4 sit in a wider byte, integers)."""
        if self.kind != "float" or self.np_dtype is None or self.name in ("tf32", "f16x2"):
            return None
        container = np.dtype(self.np_dtype)
        return container if self.bits == 8 * container.itemsize else None

    def from_bits(self, bits) -> np.ndarray:
        """Decode raw bits to values (float64 or int64) as the tensor core reads them."""
        b = np.asarray(bits, dtype=np.uint64) & np.uint64((1 << self.bits) - 1)
        if self.name == "f16x2":  # -> [..., 2], low half first
            f16 = TYPES["f16"]
            return np.stack([f16.from_bits(b & 0xFFFF), f16.from_bits(b >> np.uint64(16))], axis=-1)
        if self.name == "b1":
            return b.astype(np.int64)
        if self.kind == "uint":
            return b.astype(np.int64)
        if self.kind == "int":
            s = b.astype(np.int64)
            return np.where(s >= (1 << (self.bits - 1)), s - (1 << self.bits), s)
        if self.name == "tf32":
            b = b & np.uint64(~((1 << self.ignored_low_bits) - 1) & 0xFFFFFFFF)
            return b.astype(np.uint32).view(np.float32).astype(np.float64)
        itemsize = np.dtype(self.np_dtype).itemsize
        raw = b.astype(UNSIGNED_OF_WIDTH[itemsize])
        return raw.view(self.np_dtype).astype(np.float64)

    def int_range(self) -> tuple[int, int]:
        if self.kind == "int":
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        if self.kind in ("uint", "bits"):
            return 0, (1 << self.bits) - 1
        raise TypeError(f"{self.name} is not an integer type")

    def representable(self, values) -> np.ndarray:
        """True where a value survives encode/decode unchanged (so products stay exact)."""
        v = np.asarray(values, dtype=np.float64)
        if self.kind in ("int", "uint", "bits"):
            lo, hi = self.int_range()
            return (v == np.round(v)) & (v >= lo) & (v <= hi)
        return self.from_bits(self.to_bits(v)) == v


_T = [
    ElementType("f16", ".f16", 16, "float", np.float16),
    ElementType("bf16", ".bf16", 16, "float", getattr(ml_dtypes, "bfloat16", None)),
    ElementType("tf32", ".tf32", 32, "float", np.float32, ignored_low_bits=13),
    ElementType("e4m3", ".e4m3", 8, "float", getattr(ml_dtypes, "float8_e4m3fn", None)),
    ElementType("e5m2", ".e5m2", 8, "float", getattr(ml_dtypes, "float8_e5m2", None)),
    ElementType("e2m3", ".e2m3", 6, "float", getattr(ml_dtypes, "float6_e2m3fn", None)),
    ElementType("e3m2", ".e3m2", 6, "float", getattr(ml_dtypes, "float6_e3m2fn", None)),
    ElementType("e2m1", ".e2m1", 4, "float", getattr(ml_dtypes, "float4_e2m1fn", None)),
    ElementType("s8", ".s8", 8, "int"),
    ElementType("u8", ".u8", 8, "uint"),
    ElementType("b1", ".b1", 1, "bits"),
    ElementType("f32", ".f32", 32, "float", np.float32),
    ElementType("s32", ".s32", 32, "int"),
    # f16x2: an f16 accumulator register pair; width is the register's.
    ElementType("f16x2", ".f16x2", 32, "float", np.float16),
    # Block-scaling scale factors (tcgen05 .kind::mx*).
    ElementType("ue8m0", ".ue8m0", 8, "float", getattr(ml_dtypes, "float8_e8m0fnu", None)),
    ElementType("ue4m3", ".ue4m3", 8, "float", getattr(ml_dtypes, "float8_e4m3fn", None)),
]

TYPES: dict[str, ElementType] = {t.name: t for t in _T}
UNSIGNED_OF_WIDTH = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}  # bytes -> the unsigned dtype


def get(name: str | ElementType) -> ElementType:
    if isinstance(name, ElementType):
        return name
    try:
        return TYPES[name]
    except KeyError:
        raise ValueError(f"unknown element type {name!r}; known: {', '.join(TYPES)}") from None


def pack_f16x2(lo_bits, hi_bits) -> np.ndarray:
    """Two f16 bit patterns into one 32-bit register value, lower-numbered element in the low half."""
    return (np.asarray(lo_bits, np.uint64) & 0xFFFF) | ((np.asarray(hi_bits, np.uint64) & 0xFFFF) << 16)


def exact_integer_matmul(a, b_nk) -> np.ndarray:
    """a @ b_nk.T of integer-valued arrays, exactly, as int64. Through float64 BLAS where every partial sum is an
    integer below 2**53 (then any summation order is exact; numpy's int64 matmul has no BLAS and was a fifth of
    the host's time preparing integer cases), else in int64."""
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b_nk, dtype=np.float64)
    bound = float(np.abs(a64).max(initial=0)) * float(np.abs(b64).max(initial=0)) * a64.shape[-1]
    if bound < 2.0 ** 53:
        return (a64 @ b64.T).astype(np.int64)
    return np.asarray(a, dtype=np.int64) @ np.asarray(b_nk, dtype=np.int64).T
