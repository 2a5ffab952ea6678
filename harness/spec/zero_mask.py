"""The .ws zero-column mask descriptor of tcgen05.mma: fields, encode, decode, the columns it zeroes."""
from __future__ import annotations

from dataclasses import dataclass

from harness.spec.descriptors import DescriptorError, as_u64, field


# ----------------------------------------------------------------------------------------------------
# tcgen05 zero-column mask descriptor

@dataclass(frozen=True)
class ZeroColumnMask:
    start_count: tuple = (0, 0, 0, 0)  # sc0..sc3
    first_span: tuple = (0, 0, 0, 0)  # fs0..fs3
    non_zero_mask: bool = True
    skip_span: int = 0  # field value (the span length minus one)
    use_span: int = 0
    column_shift: int = 0


def encode_zero_column_mask(z: ZeroColumnMask) -> int:
    if len(z.start_count) != 4 or len(z.first_span) != 4:
        raise DescriptorError("start counts and first spans come four each (sc0..sc3, fs0..fs3)")
    for i, sc in enumerate(z.start_count):
        if not 0 <= sc <= 255:
            raise DescriptorError(f"start count sc{i} = {sc} does not fit 8 bits")
    for i, fs in enumerate(z.first_span):
        if fs not in (0, 1):
            raise DescriptorError(f"first span fs{i} must be 0 or 1")
    for name in ("skip_span", "use_span"):
        if not 0 <= getattr(z, name) <= 255:
            raise DescriptorError(f"{name} does not fit 8 bits")
    if not 0 <= z.column_shift <= 32:
        raise DescriptorError("column shift is at most 32 (16 for M = 32)")
    v = 0
    for i in range(4):
        v |= z.start_count[i] << (8 * i) | z.first_span[i] << (32 + i)
    return v | int(z.non_zero_mask) << 39 | z.skip_span << 40 | z.use_span << 48 | z.column_shift << 56


def decode_zero_column_mask(value) -> ZeroColumnMask:
    value = as_u64(value)
    return ZeroColumnMask(tuple(field(value, 8 * i, 8) for i in range(4)),
                          tuple(field(value, 32 + i, 1) for i in range(4)),
                          bool(field(value, 39, 1)), field(value, 40, 8), field(value, 48, 8),
                          field(value, 56, 6))


ZERO_MASK_SUBMASKS = {128: 1, 64: 2, 32: 4}


def zero_column_mask_bits(z: ZeroColumnMask, m: int, n: int) -> list[int]:
    """The N-bit mask (bit j = 1: column j of B reads as zero), as a list of 0/1 from column 0.

    Model (from the spec's four worked examples): sub-mask i covers N/parts columns; its bit sequence
    alternates runs that start with value fs_i; a run of 1s is skip_span + 1 long, a run of 0s is
    use_span + 1 long; the first sc_i bits of the sequence are skipped. (The field table's descriptions
    name the spans the other way round; the examples and the field names agree with this model; see
    tests/test_zero_column_mask.py.)
    """
    if m not in ZERO_MASK_SUBMASKS:
        raise DescriptorError(f"M = {m}: the zero-column mask is defined for M = 128, 64, 32")
    if not z.non_zero_mask:
        return [0] * n
    parts = ZERO_MASK_SUBMASKS[m]
    if n % parts:
        raise DescriptorError(f"N = {n} does not split into {parts} sub-masks")
    ones, zeros = z.skip_span + 1, z.use_span + 1
    bits = []
    for i in range(parts):
        fs, sc = z.first_span[i], z.start_count[i]
        period = [fs] * (ones if fs else zeros) + [1 - fs] * (zeros if fs else ones)
        bits += [period[(sc + j) % len(period)] for j in range(n // parts)]
    max_shift = 16 if m == 32 else 32
    if z.column_shift > max_shift:
        raise DescriptorError(f"column shift {z.column_shift} exceeds the maximum {max_shift} for M = {m}")
    return bits
