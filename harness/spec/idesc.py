"""The tcgen05 instruction descriptor: kinds, type codes, legal shapes (PTX ISA and CUTLASS agree unless said),
encode, decode, and the rules a value must keep."""
from __future__ import annotations

from dataclasses import dataclass

from harness.spec.desc_tcgen05 import TCGEN05_ARCHS
from harness.spec.descriptors import DescriptorError, field


# ----------------------------------------------------------------------------------------------------
# tcgen05 instruction descriptor

KINDS = ("tf32", "f16", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4")
F8F6F4_CODES = {"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}
ATYPE_CODES = {
    "tf32": {"tf32": 2},
    "f16": {"f16": 0, "bf16": 1},
    "f8f6f4": F8F6F4_CODES,
    "i8": {"u8": 0, "s8": 1},
    "mxf8f6f4": F8F6F4_CODES,
    "mxf4": {"e2m1": 1},
    "mxf4nvf4": {"e2m1": 1},
}
DTYPE_CODES = {
    "tf32": {"f32": 1},
    "f16": {"f16": 0, "f32": 1},
    "f8f6f4": {"f16": 0, "f32": 1},
    "i8": {"s32": 2},
    "mxf8f6f4": {"f32": None},
    "mxf4": {"f32": None},
    "mxf4nvf4": {"f32": None},
}
SCALE_TYPE_CODES = {"mxf8f6f4": {"ue8m0": 1}, "mxf4": {"ue8m0": 1}, "mxf4nvf4": {"ue8m0": 1, "ue4m3": 0}}
KIND_K = {"tf32": 8, "f16": 16, "f8f6f4": 32, "i8": 32, "mxf8f6f4": 32, "mxf4": 64, "mxf4nvf4": 64}
BLOCK_SCALED = ("mxf8f6f4", "mxf4", "mxf4nvf4")


# .kind::i8 with one CTA: N = 8, 16, 24, 32, then steps of 16 (PTX ISA Table "Various combinations of .kind and
# shapes"; CUTLASS's SM100_MMA_S8_SS refuses N = 24, see tests/test_tcgen05_vs_cutlass.py).
I8_N_CG1 = [8, 16, 24, 32] + list(range(48, 257, 16))


# Kinds whose legal N depends on B's major-ness (legal_shapes' transpose_b), and the tcgen05 archs each kind runs on
# where that is not both (kind::i8 is sm_100a / sm_101a, not sm_103a).
MN_MAJOR_B_RULE_KINDS = ("f8f6f4", "i8")
KIND_ARCHS = {"i8": ("sm_100a",)}
SUBBYTE_TYPES = ("e2m3", "e3m2", "e2m1")  # 6- and 4-bit element types


def mma_k(kind: str, sparse: bool = False) -> int:
    """K of one MMA: sparse tcgen05.mma.sp doubles it (PTX ISA Table "Various combinations of .kind and shapes":
    tf32 16, f16 32, f8f6f4 / mxf8f6f4 / i8 64, mxf4 / mxf4nvf4 128); A then holds K/2 elements per row."""
    return KIND_K[kind] * (2 if sparse else 1)


def legal_shapes(kind: str, cta_group: int = 1, ws: bool = False, transpose_b: bool = False,
                 k96: bool = False, sparse: bool = False) -> dict[int, list[int]]:
    """{M: [N, ...]} for tcgen05.mma of `kind` (PTX ISA 9.7.16.2.1, Table 39, read with CUTLASS's SM100
    UMMA atoms where the table leaves a choice open).

    transpose_b: B is MN-major (8-bit B, the table's "steps of 8 OR steps of 16", which CUTLASS ties to B's
    major-ness): .kind::f8f6f4 then needs N in steps of 16 with one CTA (mma_traits_sm100.hpp:2642) and steps of 32
    with a pair (mma_traits_sm100.hpp:3060); .kind::i8 with one CTA loses N = 24 (the ISA's odd step; CUTLASS's
    SM100_MMA_S8_SS, mma_sm100_umma.hpp:716, takes N = 8 or N % 16 whatever B's major-ness). k96: the K = 96 shape of
    .kind::mxf4 / mxf4nvf4 (sm_103a), N in steps of 16. sparse (tcgen05.mma.sp): the same M and N as dense except
    .ws (N = 64 or 128, no 256) and the block-scaled kinds with a CTA pair (M = 256 only); K doubles (mma_k).
    """
    if sparse and k96:
        raise DescriptorError("K = 96 is a dense shape")
    shapes = _dense_shapes(kind, cta_group, ws, transpose_b, k96)
    if sparse and ws:
        return {m: [n for n in ns if n != 256] for m, ns in shapes.items()}
    if sparse and kind in BLOCK_SCALED and cta_group == 2:
        return {m: ns for m, ns in shapes.items() if m == 256}
    return shapes


def _dense_shapes(kind: str, cta_group: int, ws: bool, transpose_b: bool, k96: bool) -> dict[int, list[int]]:
    if kind not in KINDS:
        raise DescriptorError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    if cta_group not in (1, 2):
        raise DescriptorError(f"cta_group must be 1 or 2, not {cta_group}")
    if kind in BLOCK_SCALED:
        if ws:
            raise DescriptorError(f".ws is not valid with .kind::{kind}")
        # the M field is M >> 7: block-scaled kinds are M = 128 with one CTA; a CTA pair takes M = 256 and, for the
        # 4-bit kinds, M = 128 too (the table and CUTLASS's SM100_MMA_MXF4_2x1SM_SS agree; for mxf8f6f4 the table
        # lists M = 128 but CUTLASS's SM100_MMA_MXF8F6F4_2x1SM_SS refuses it: not modelled as legal)
        if k96:
            return {128: list(range(16, 257, 16))} if cta_group == 1 else {m: list(range(16, 257, 16))
                                                                            for m in (128, 256)}
        if cta_group == 1:
            return {128: list(range(8, 257, 8))}
        ms = (256,) if kind == "mxf8f6f4" else (128, 256)
        return {m: list(range(16, 257, 16)) for m in ms}
    if ws:
        if cta_group != 1:
            raise DescriptorError(".ws is valid with .cta_group::1 only")
        return {m: [64, 128, 256] for m in (32, 64, 128)}
    if cta_group == 1:
        if kind == "i8":
            ns = [n for n in I8_N_CG1 if not (transpose_b and n == 24)]
        elif kind == "f8f6f4" and transpose_b:
            ns = list(range(16, 257, 16))
        else:
            ns = list(range(8, 257, 8))
        return {m: list(ns) for m in (64, 128)}
    step = 32 if kind == "i8" or (kind == "f8f6f4" and transpose_b) else 16
    return {m: list(range(step, 257, step)) for m in (128, 256)}


# Scale-vector sizes (PTX ISA 9.7.16.10.7.1, "Valid combinations of scale_vectorsize with types and MMA-Kind") and
# the scale-factor data ids each allows (9.7.16.10.7.2: 1X selects a byte, 2X a byte pair at 0 or 2, 4X the word).
SCALE_VECS = {("mxf8f6f4", "ue8m0"): ("1X",), ("mxf4", "ue8m0"): ("2X",),
              ("mxf4nvf4", "ue8m0"): ("2X", "4X"), ("mxf4nvf4", "ue4m3"): ("4X",)}
SF_IDS = {"1X": (0, 1, 2, 3), "2X": (0, 2), "4X": (0,)}


def default_scale_vec(kind: str, scale_type: str) -> str:
    return "4X" if scale_type == "ue4m3" else {"mxf8f6f4": "1X"}.get(kind, "2X")


@dataclass(frozen=True)
class InstrDescriptor:
    kind: str
    atype: str
    btype: str
    dtype: str
    m: int
    n: int
    transpose_a: bool = False
    transpose_b: bool = False
    negate_a: bool = False
    negate_b: bool = False
    sparse: bool = False
    sparsity_selector: int = 0
    saturate: bool = False
    max_shift: int = 0  # .ws B-reuse shift code 0..3
    # block-scaled kinds
    scale_type: str = "ue8m0"
    a_sf_id: int = 0
    b_sf_id: int = 0
    k96: bool = False
    cta_group: int = 1
    ws: bool = False
    scale_vec: str = ""  # block-scaled kinds: "1X", "2X" or "4X" ("" = the kind's default, default_scale_vec)


def validate_idesc(d: InstrDescriptor, arch: str | None = None) -> InstrDescriptor:
    """Refuse, naming the rule, any descriptor the PTX ISA (read with CUTLASS where it is silent) forbids.
    `arch` (sm_100a / sm_103a), when given, adds the per-arch rules (K = 96 is sm_103a only)."""
    k = d.kind
    if k not in KINDS:
        raise DescriptorError(f"unknown kind {k!r}; one of {', '.join(KINDS)}")
    if arch is not None and arch not in TCGEN05_ARCHS:
        raise DescriptorError(f"tcgen05 is for {' or '.join(TCGEN05_ARCHS)}, not {arch}")
    codes = ATYPE_CODES[k]
    for role, t in (("atype", d.atype), ("btype", d.btype)):
        if t not in codes:
            raise DescriptorError(f".kind::{k} takes {role} in {{{', '.join(codes)}}}, not {t!r}")
    if d.dtype not in DTYPE_CODES[k]:
        raise DescriptorError(f".kind::{k} accumulates into {{{', '.join(DTYPE_CODES[k])}}}, not {d.dtype!r}")
    if k == "f16" and d.atype != d.btype:
        raise DescriptorError(".kind::f16 needs A and B of the same type")
    if k == "f16" and d.dtype == "f16" and d.atype != "f16":
        raise DescriptorError(".kind::f16 with an f16 accumulator needs f16 inputs (bf16 accumulates to f32)")
    if d.k96:
        if k not in ("mxf4", "mxf4nvf4"):
            raise DescriptorError("the K = 96 bit is for .kind::mxf4 / mxf4nvf4")
        if d.sparse:
            raise DescriptorError("K = 96 is a dense shape")
        if d.transpose_a or d.transpose_b:
            raise DescriptorError("K = 96 needs K-major A and B (its operands use the sm_103a absolute-address LBO "
                                  "mode, which supports K-major only: transpose bits 15, 16 must be 0)")
        if arch is not None and arch != "sm_103a":
            raise DescriptorError(f"K = 96 (.kind::{k}) is an sm_103a shape, not {arch}")
    if arch is not None and arch not in KIND_ARCHS.get(k, TCGEN05_ARCHS):
        raise DescriptorError(f".kind::{k} is not supported on {arch} (only {', '.join(KIND_ARCHS[k])}: NVRTC 13 "
                              f"'.kind::{k} not supported on .target {arch}'; CUTLASS cute/arch/config.hpp enables "
                              "CUTE_ARCH_TCGEN05_S8_MMA_ENABLED for sm_100a / sm_101a / sm_110 only)")
    shapes = legal_shapes(k, d.cta_group, d.ws, transpose_b=d.transpose_b and k in MN_MAJOR_B_RULE_KINDS,
                          k96=d.k96, sparse=d.sparse)
    what = (f".kind::{k} cta_group::{d.cta_group}{' .ws' if d.ws else ''}{' K = 96' if d.k96 else ''}"
            f"{' sparse' if d.sparse else ''}")
    if d.m not in shapes:
        raise DescriptorError(f"M = {d.m} is not legal for {what}; legal M: {sorted(shapes)}")
    if d.n not in shapes[d.m]:
        ns = shapes[d.m]
        steps = {b - a for a, b in zip(ns, ns[1:])}
        legal = f"{ns[0]}..{ns[-1]} step {steps.pop()}" if len(ns) > 3 and len(steps) == 1 else f"{ns}"
        why = " (B is MN-major)" if k in MN_MAJOR_B_RULE_KINDS and d.transpose_b else ""
        raise DescriptorError(f"N = {d.n} is not legal for {what} M = {d.m}{why}; legal N: {legal}")
    if d.saturate and k != "i8":
        raise DescriptorError("saturate (bit 3) is for .kind::i8 only")
    if k == "i8" and (d.negate_a or d.negate_b):
        raise DescriptorError(".kind::i8 cannot negate A or B")
    if k in ("mxf4", "mxf4nvf4") and (d.transpose_a or d.transpose_b):
        raise DescriptorError(f".kind::{k} supports K-major A and B only (no transpose)")
    for role, t, tr in (("A", d.atype, d.transpose_a), ("B", d.btype, d.transpose_b)):
        # CUTLASS's instruction descriptor (cute/arch/mma_sm100_desc.hpp:427-428, a_major_ / b_major_): "Major value
        # of 1 is only valid for E4M3, E5M2, INT8 (signed and unsigned), F16, BF16 and TF32 source formats"
        if tr and t in SUBBYTE_TYPES:
            raise DescriptorError(f"{role} of type {t} cannot be MN-major (transpose {role} set): a transpose is only "
                                  "valid for e4m3, e5m2, s8/u8, f16, bf16 and tf32 (CUTLASS mma_sm100_desc.hpp:427)")
    if not 0 <= d.sparsity_selector <= 3:
        raise DescriptorError("sparsity selector is 2 bits (0..3)")
    if d.sparsity_selector and (not d.sparse or k in BLOCK_SCALED):
        raise DescriptorError("the sparsity selector is used only with sparsity on the non-block-scaled kinds")
    if d.sparsity_selector and k in ("i8", "f8f6f4"):
        raise DescriptorError(f"the sparsity selector must be 0 for .kind::{k} (PTX ISA 9.7.16.10.8.4.5-6)")
    if not 0 <= d.max_shift <= 3:
        raise DescriptorError("max shift is a 2-bit code (0..3)")
    if d.max_shift and not d.ws:
        raise DescriptorError("max shift (bits 30-31) applies to .ws only")
    if k in BLOCK_SCALED:
        if d.scale_type not in SCALE_TYPE_CODES[k]:
            raise DescriptorError(f".kind::{k} scale type must be one of {', '.join(SCALE_TYPE_CODES[k])}")
        vec = d.scale_vec or default_scale_vec(k, d.scale_type)
        if vec not in SCALE_VECS[(k, d.scale_type)]:
            raise DescriptorError(f".kind::{k} with {d.scale_type} scales takes scale_vec "
                                  f"{' or '.join(SCALE_VECS[(k, d.scale_type)])}, not {vec!r}")
        # K = 96 (block32 = "3X", block16 = "6X"): the ISA's figures give 4 byte offsets for block32; the ids of
        # block16 with K = 96 are not stated in the text we have (see the report), so both keep the 2-bit range
        allowed = (0, 1, 2, 3) if d.k96 else SF_IDS[vec]
        for name in ("a_sf_id", "b_sf_id"):
            if getattr(d, name) not in allowed:
                raise DescriptorError(f"{name} for .kind::{k} with scale_vec::{vec}"
                                      f"{' K = 96' if d.k96 else ''} must be one of {allowed}")
    elif d.a_sf_id or d.b_sf_id:
        raise DescriptorError("scale-factor data IDs belong to the block-scaled kinds")
    elif d.scale_vec:
        raise DescriptorError("the scale-vector size belongs to the block-scaled kinds")
    return d


def pack_idesc(d: InstrDescriptor) -> int:
    """The 32-bit value of the fields as they are, without the legality rules (codes and field widths only)."""
    k = d.kind
    try:
        a, b = ATYPE_CODES[k][d.atype], ATYPE_CODES[k][d.btype]
        scale = SCALE_TYPE_CODES[k][d.scale_type] if k in BLOCK_SCALED else 0
        dcode = 0 if k in BLOCK_SCALED else DTYPE_CODES[k][d.dtype]
    except KeyError as e:
        raise DescriptorError(f"{e.args[0]!r} has no code in .kind::{k}'s instruction descriptor") from None
    for name, width in (("m", 9), ("n", 9), ("sparsity_selector", 2), ("max_shift", 2), ("a_sf_id", 2),
                        ("b_sf_id", 2)):
        if not 0 <= getattr(d, name) < 1 << width:
            raise DescriptorError(f"{name} = {getattr(d, name)} does not fit its field")
    v = int(d.sparse) << 2 | a << 7 | b << 10 | int(d.negate_a) << 13 | int(d.negate_b) << 14
    v |= int(d.transpose_a) << 15 | int(d.transpose_b) << 16 | ((d.n >> 3) & 0x3F) << 17
    if k in BLOCK_SCALED:
        v |= d.b_sf_id << 4 | scale << 23 | ((d.m >> 7) & 3) << 27 | d.a_sf_id << 29
        v |= int(d.k96) << 31
    else:
        v |= d.sparsity_selector | int(d.saturate) << 3 | dcode << 4
        v |= ((d.m >> 4) & 0x1F) << 24 | d.max_shift << 30
    return v


def encode_idesc(d: InstrDescriptor, arch: str | None = None) -> int:
    return pack_idesc(validate_idesc(d, arch))


def decode_idesc(value, kind: str, cta_group: int | None = None, ws: bool | None = None,
                 arch: str | None = None, scale_vec: str = "") -> dict:
    """Fields of a 32-bit value and the rules it breaks; cta_group / ws / arch / scale_vec are not in the value:
    give them when known, otherwise the plainest reading is assumed (.ws for M = 32, a CTA pair for M = 256)."""
    if kind not in KINDS:
        raise DescriptorError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    if isinstance(value, str):
        value = int(value, 0)
    if not 0 <= value < 1 << 32:
        raise DescriptorError(f"{value:#x} does not fit the 32-bit instruction descriptor")
    problems = []
    inv_a = {c: t for t, c in ATYPE_CODES[kind].items()}

    def name(code, role):
        if code in inv_a:
            return inv_a[code]
        problems.append(f"{role} code {code} is not defined for .kind::{kind}")
        return f"invalid({code})"

    f = {"kind": kind, "sparse": bool(field(value, 2, 1)),
         "negate_a": bool(field(value, 13, 1)), "negate_b": bool(field(value, 14, 1)),
         "transpose_a": bool(field(value, 15, 1)), "transpose_b": bool(field(value, 16, 1)),
         "n": field(value, 17, 6) << 3}
    if kind in BLOCK_SCALED:
        f["atype"] = name(field(value, 7, 3), "atype")
        f["btype"] = name(field(value, 10, 2 if kind != "mxf8f6f4" else 3), "btype")
        f["dtype"] = "f32"
        inv_s = {c: t for t, c in SCALE_TYPE_CODES[kind].items()}
        f["scale_type"] = inv_s.get(field(value, 23, 1), f"invalid({field(value, 23, 1)})")
        f["b_sf_id"], f["a_sf_id"] = field(value, 4, 2), field(value, 29, 2)
        f["m"] = field(value, 27, 2) << 7
        f["k96"] = bool(field(value, 31, 1)) if kind != "mxf8f6f4" else False
        reserved = (0x3 | 1 << 3 | 1 << 6 | 0x7 << 24) | (1 << 31 if kind == "mxf8f6f4" else 1 << 12)
    else:
        f["sparsity_selector"] = field(value, 0, 2)
        f["saturate"] = bool(field(value, 3, 1))
        inv_d = {c: t for t, c in DTYPE_CODES[kind].items()}
        dcode = field(value, 4, 2)
        f["dtype"] = inv_d.get(dcode, f"invalid({dcode})")
        if dcode not in inv_d:
            problems.append(f"dtype code {dcode} is not defined for .kind::{kind}")
        f["atype"] = name(field(value, 7, 3), "atype")
        f["btype"] = name(field(value, 10, 3), "btype")
        f["m"] = field(value, 24, 5) << 4
        f["max_shift"] = field(value, 30, 2)
        reserved = 1 << 6 | 1 << 23 | 1 << 29
    if value & reserved:
        problems.append(f"reserved bits set: 0x{value & reserved:08x}")
    if not problems:
        try:  # report shape/type combinations the spec forbids (assume the plainest cta_group/ws)
            w = (kind not in BLOCK_SCALED and f["m"] == 32) if ws is None else ws
            cg = (2 if f["m"] == 256 else 1) if cta_group is None else cta_group
            validate_idesc(InstrDescriptor(**{k: v for k, v in f.items() if k in InstrDescriptor.__annotations__},
                                           cta_group=cg, ws=w, scale_vec=scale_vec), arch)
        except DescriptorError as e:
            problems.append(str(e))
    else:  # a bad type code hides nothing else: M and N are checked all the same
        cg = 2 if f["m"] == 256 else 1
        shapes = legal_shapes(kind, cg, kind not in BLOCK_SCALED and f["m"] == 32)
        if f["m"] not in shapes:
            problems.append(f"M = {f['m']} is not legal for .kind::{kind}; legal M: {sorted(shapes)}")
        elif f["n"] not in shapes[f["m"]]:
            problems.append(f"N = {f['n']} is not legal for .kind::{kind} M = {f['m']}")
    return {"kind": kind, "value": f"0x{value:08x}", "fields": f, "problems": problems}


def check_absolute_lbo_with_idesc(smem_desc: int, idesc: "InstrDescriptor") -> None:
    """The absolute-address LBO mode's second restriction spans two descriptors: K-major only."""
    if (smem_desc >> 52) & 1 and (idesc.transpose_a or idesc.transpose_b):
        raise DescriptorError("absolute-address LBO mode supports K-major operands only: the instruction "
                              "descriptor's transpose bits (15, 16) must be 0")
