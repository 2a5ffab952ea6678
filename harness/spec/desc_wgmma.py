"""The wgmma (sm_90a) shared-memory matrix descriptor: fields, encode, decode, the rules it must keep."""
from __future__ import annotations

from dataclasses import dataclass

from harness.spec.descriptors import DescriptorError, as_u64, check_addr, field, matrix_descriptor_encode


# ----------------------------------------------------------------------------------------------------
# sm_90 wgmma matrix descriptor

WGMMA_SWIZZLE_CODE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
WGMMA_SWIZZLE_NAME = {v: k for k, v in WGMMA_SWIZZLE_CODE.items()}
# Bits the sm_90 descriptor does not define (14-15, 30-31, 46-48, 52-61).
WGMMA_RESERVED_MASK = (0x3 << 14) | (0x3 << 30) | (0x7 << 46) | (0x3FF << 52)


@dataclass(frozen=True)
class WgmmaDescriptor:
    start: int  # bytes
    lbo: int  # bytes
    sbo: int  # bytes
    swizzle: str = "none"
    base_offset: int = 0


def validate_wgmma_desc(d: WgmmaDescriptor, allow_wrap: bool = False) -> WgmmaDescriptor:
    if d.swizzle not in WGMMA_SWIZZLE_CODE:
        raise DescriptorError(f"wgmma swizzle must be one of {', '.join(WGMMA_SWIZZLE_CODE)}, not {d.swizzle!r}")
    check_addr("start address", d.start, allow_wrap)
    check_addr("LBO", d.lbo, allow_wrap)
    check_addr("SBO", d.sbo, allow_wrap)
    if not 0 <= d.base_offset <= 7:
        raise DescriptorError(f"base offset {d.base_offset} does not fit the 3-bit field (0..7)")
    if d.swizzle == "none" and d.base_offset:
        raise DescriptorError("the matrix base offset is valid for every swizzle mode except no-swizzle")
    return d


def encode_wgmma_desc(start: int, lbo: int, sbo: int, swizzle: str = "none", base_offset: int = 0,
                      allow_wrap: bool = False) -> int:
    d = validate_wgmma_desc(WgmmaDescriptor(start, lbo, sbo, swizzle, base_offset), allow_wrap)
    return (matrix_descriptor_encode(d.start)
            | matrix_descriptor_encode(d.lbo) << 16
            | matrix_descriptor_encode(d.sbo) << 32
            | d.base_offset << 49
            | WGMMA_SWIZZLE_CODE[d.swizzle] << 62)


def decode_wgmma_desc(value: int) -> dict:
    value = as_u64(value)
    problems = []
    if value & WGMMA_RESERVED_MASK:
        problems.append(f"reserved bits set: 0x{value & WGMMA_RESERVED_MASK:016x}")
    swz = WGMMA_SWIZZLE_NAME[field(value, 62, 2)]
    base = field(value, 49, 3)
    if swz == "none" and base:
        problems.append("base offset is set but the swizzle mode is none (the spec says it is not valid there)")
    fields = {
        "start_address": field(value, 0, 14) << 4,
        "leading_byte_offset": field(value, 16, 14) << 4,
        "stride_byte_offset": field(value, 32, 14) << 4,
        "base_offset": base,
        "swizzle": swz,
    }
    return {"arch": "sm_90a", "value": f"0x{value:016x}", "fields": fields,
            "encoded": {"start_address": field(value, 0, 14), "leading_byte_offset": field(value, 16, 14),
                        "stride_byte_offset": field(value, 32, 14)},
            "problems": problems}
