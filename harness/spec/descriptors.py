"""Matrix and instruction descriptors: encode, decode, validate.

- the sm_90 wgmma matrix descriptor (PTX ISA 9.7.15.5.1.2.2);
- the tcgen05 shared-memory descriptor (9.7.16.4.1), incl. the sm_103a absolute-address LBO mode;
- the tcgen05 instruction descriptor for every .kind (9.7.16.4.2, Tables 42-44);
- the tcgen05 zero-column mask descriptor (9.7.16.4.3) and the mask it generates.

Every encoder validates first and raises DescriptorError with one sentence naming the field; every decoder
returns the fields and the list of spec violations it sees (reserved bits set, invalid codes), so a value
pasted from a kernel can be explained rather than merely rejected.
"""
from __future__ import annotations

from dataclasses import asdict

from harness.spec.layouts import PATTERN_BYTES


class DescriptorError(ValueError):
    pass


START_FIELD = (1 << 14) - 1  # a shared-memory descriptor's start field (wgmma's and tcgen05's): bits 0-13, address >> 4


def matrix_descriptor_encode(x: int) -> int:
    """The spec's matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4."""
    return (x & 0x3FFFF) >> 4


def field(value: int, lo: int, width: int) -> int:
    return (value >> lo) & ((1 << width) - 1)


def check_addr(name: str, x: int, allow_wrap: bool = False) -> None:
    if not isinstance(x, int) or x < 0:
        raise DescriptorError(f"{name} = {x!r} must be a non-negative byte count")
    if x % 16:
        raise DescriptorError(f"{name} = {x} is not 16-byte aligned; the descriptor stores it >> 4")
    if x >= 1 << 18 and not allow_wrap:
        raise DescriptorError(f"{name} = {x} does not fit the 14-bit field (max {(1 << 18) - 16} bytes); "
                              "matrix-descriptor-encode would silently wrap it")


def expected_base_offset(pattern_start: int, swizzle: str) -> int:
    """The spec's base offset for a swizzle pattern starting at `pattern_start`."""
    if swizzle == "none" or pattern_start % PATTERN_BYTES[swizzle] == 0:
        return 0
    return (pattern_start >> 7) & 7



def as_u64(value) -> int:
    if isinstance(value, str):
        try:
            value = int(value, 0)
        except ValueError:
            raise DescriptorError(f"{value!r} is not an integer (write it as 0x... or decimal)") from None
    if not 0 <= value < 1 << 64:
        raise DescriptorError(f"{value:#x} does not fit 64 bits")
    return value



def as_dict(obj) -> dict:
    return asdict(obj)
