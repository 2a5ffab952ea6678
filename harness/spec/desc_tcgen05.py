"""The tcgen05 (sm_100a, sm_103a) shared-memory matrix descriptor: fields, encode, decode, the rules it must keep."""
from __future__ import annotations

from dataclasses import dataclass

from harness.spec.descriptors import DescriptorError, as_u64, check_addr, field, matrix_descriptor_encode


# ----------------------------------------------------------------------------------------------------
# tcgen05 shared-memory descriptor

TCGEN05_SWIZZLE_CODE = {"none": 0, "128B_base32b": 1, "128B": 2, "64B": 4, "32B": 6}
TCGEN05_SWIZZLE_NAME = {v: k for k, v in TCGEN05_SWIZZLE_CODE.items()}
TCGEN05_ARCHS = ("sm_100a", "sm_103a")
TCGEN05_VERSION = 0b001  # bits 46-48
TCGEN05_RESERVED_MASK = (0x3 << 14) | (0x3 << 30) | (0xFF << 53)


@dataclass(frozen=True)
class Tcgen05SmemDescriptor:
    start: int
    lbo: int  # relative offset, or (lbo_mode 'absolute') the byte address of the second chunk
    sbo: int
    swizzle: str = "none"
    base_offset: int = 0
    lbo_mode: str = "relative"  # or 'absolute' (sm_103a)


def validate_tcgen05_smem_desc(d: Tcgen05SmemDescriptor, arch: str = "sm_100a",
                               allow_wrap: bool = False) -> Tcgen05SmemDescriptor:
    if arch not in TCGEN05_ARCHS:
        raise DescriptorError(f"the tcgen05 descriptor is for {' or '.join(TCGEN05_ARCHS)}, not {arch}")
    if d.swizzle not in TCGEN05_SWIZZLE_CODE:
        raise DescriptorError(f"tcgen05 swizzle must be one of {', '.join(TCGEN05_SWIZZLE_CODE)}, not {d.swizzle!r}")
    check_addr("start address", d.start, allow_wrap)
    check_addr("LBO" if d.lbo_mode == "relative" else "LBO absolute address", d.lbo, allow_wrap)
    check_addr("SBO", d.sbo, allow_wrap)
    if not 0 <= d.base_offset <= 7:
        raise DescriptorError(f"base offset {d.base_offset} does not fit the 3-bit field (0..7)")
    if d.lbo_mode not in ("relative", "absolute"):
        raise DescriptorError(f"LBO mode must be relative or absolute, not {d.lbo_mode!r}")
    if d.lbo_mode == "absolute":
        if arch != "sm_103a":
            raise DescriptorError("the absolute-address LBO mode is supported on sm_103a only")
        if d.swizzle != "128B":
            raise DescriptorError("absolute-address LBO mode supports only 128B swizzle (16B atomicity)")
        if d.base_offset:
            raise DescriptorError("absolute-address LBO mode requires matrix base offset 0")
    return d


def encode_tcgen05_smem_desc(start: int, lbo: int, sbo: int, swizzle: str = "none", base_offset: int = 0,
                             lbo_mode: str = "relative", arch: str = "sm_100a", allow_wrap: bool = False) -> int:
    d = validate_tcgen05_smem_desc(Tcgen05SmemDescriptor(start, lbo, sbo, swizzle, base_offset, lbo_mode),
                                   arch, allow_wrap)
    return (matrix_descriptor_encode(d.start)
            | matrix_descriptor_encode(d.lbo) << 16
            | matrix_descriptor_encode(d.sbo) << 32
            | TCGEN05_VERSION << 46
            | d.base_offset << 49
            | (1 if d.lbo_mode == "absolute" else 0) << 52
            | TCGEN05_SWIZZLE_CODE[d.swizzle] << 61)


# A 32-bit (tf32) operand that is MN-major (its transpose bit set in the instruction descriptor) has one legal
# layout: PTX ISA 9.7.16.10.3 (tcgen05 shared-memory layouts): "Only 128B swizzling with 32B atomicity" is supported
# for MN-major tf32; CUTLASS agrees (cutlass/gemm/collective/builders/sm100_common.inl:92, sm100_smem_selector's
# static_assert "for mn-major tf32 operands, SW128_32B is the only available smem layout"), and so does DeepGEMM
# (it builds MN-major fp32 operands from SW128_32B atoms only). Every other swizzle leaves the result undefined.
MN_MAJOR_ONLY_SWIZZLE = {"tf32": "128B_base32b"}


def operand_swizzle_problem(kind: str, major: str, swizzle: str, operand: str = "") -> str | None:
    """The rule a (kind, major-ness, swizzle) combination of one operand breaks, or None."""
    need = MN_MAJOR_ONLY_SWIZZLE.get(kind)
    if major == "MN" and need is not None and swizzle != need:
        who = f"{operand} " if operand else ""
        return (f"an MN-major (transposed) .kind::{kind} operand {who}needs swizzle {need}, not {swizzle} (PTX ISA "
                f"9.7.16.10.3: only 128B swizzling with 32B atomicity; CUTLASS sm100_common.inl:92)")
    return None


def check_operand_swizzle(kind: str, major: str, swizzle: str, operand: str = "") -> None:
    why = operand_swizzle_problem(kind, major, swizzle, operand)
    if why:
        raise DescriptorError(why)


def decode_tcgen05_smem_desc(value, arch: str = "sm_100a") -> dict:
    value = as_u64(value)
    problems = []
    version = field(value, 46, 3)
    if version != TCGEN05_VERSION:
        problems.append(f"bits 46-48 are {version:#05b}; the spec fixes them to 0b001")
    if value & TCGEN05_RESERVED_MASK:
        problems.append(f"reserved/fixed-zero bits set: 0x{value & TCGEN05_RESERVED_MASK:016x}")
    code = field(value, 61, 3)
    swz = TCGEN05_SWIZZLE_NAME.get(code)
    if swz is None:
        problems.append(f"swizzle code {code} is invalid (3, 5 and 7 are reserved)")
        swz = f"invalid({code})"
    mode = "absolute" if field(value, 52, 1) else "relative"
    base = field(value, 49, 3)
    if mode == "absolute":
        if arch != "sm_103a":
            problems.append("absolute-address LBO mode (bit 52) is supported on sm_103a only")
        if swz != "128B":
            problems.append("absolute-address LBO mode supports only 128B swizzle")
        if base:
            problems.append("absolute-address LBO mode requires base offset 0")
    fields = {
        "start_address": field(value, 0, 14) << 4,
        ("leading_byte_address" if mode == "absolute" else "leading_byte_offset"): field(value, 16, 14) << 4,
        "stride_byte_offset": field(value, 32, 14) << 4,
        "version": version,
        "base_offset": base,
        "lbo_mode": mode,
        "swizzle": swz,
    }
    return {"arch": arch, "value": f"0x{value:016x}", "fields": fields, "problems": problems}
