"""The harness as a library: descriptors, canonical layouts, fragment and Tensor Memory maps, and the check of a
descriptor value against the layout its author intended.

The names in `__all__` are stable; their docstrings are the reference. Everything here is computed from the PTX
ISA's documented layouts (the models in harness/spec), on the CPU; nothing compiles or launches a kernel.

    >>> from harness import api
    >>> lay = api.canonical_layout("f16", "K", "128B", rows=64, cols=64)    # packed strides
    >>> v = api.encode_smem_descriptor(api.descriptor_for(lay, "sm_90a"))
    >>> api.check_descriptor(v, lay, "sm_90a")
    []
    >>> [f.message for f in api.check_descriptor(v ^ (0x20 << 32), lay, "sm_90a")][0][:25]
    'SBO is 1536, the layout n'

Errors: a value or layout that cannot be what is asked raises `DescriptorError` or `LayoutError` (both
ValueError) with one sentence naming the rule; a decoded value that breaks a rule is not an error: the rules it
breaks are returned (`Decoded.problems`), so a value taken from a kernel is explained rather than refused.

The command line's `desc`, `idesc`, `zmask` and `layout` are shells over these functions.
"""
from __future__ import annotations

from dataclasses import asdict as _asdict, dataclass, field as _field, replace

import numpy as np

from harness.enums import Arch, Major, Swizzle
from harness.families.tcgen05 import datapaths as _datapaths
from harness.spec import desc_tcgen05 as _tc, desc_wgmma as _wg, dtypes as _dtypes, fragments as _fragments
from harness.spec import idesc as _idesc, layouts as _layouts, zero_mask as _zmask
from harness.spec.descriptors import DescriptorError, as_u64 as _as_u64
from harness.spec.fragments import Fragment
from harness.spec.idesc import InstrDescriptor
from harness.spec.layouts import LayoutError, SmemLayout
from harness.spec.zero_mask import ZeroColumnMask

__all__ = [
    "Arch", "Swizzle", "Major", "DescriptorError", "LayoutError",
    "SmemDescriptor", "Decoded", "encode_smem_descriptor", "decode_smem_descriptor", "smem_descriptor_problems",
    "validate_smem_descriptor",
    "InstrDescriptor", "encode_instr_descriptor", "pack_instr_descriptor", "decode_instr_descriptor",
    "validate_instr_descriptor", "default_accumulator_dtype",
    "ZeroColumnMask", "encode_zero_column_mask", "decode_zero_column_mask", "zero_columns", "zero_mask_legal_n",
    "SmemLayout", "AddressMap", "canonical_layout", "address_map", "cute_notation",
    "Fragment", "wgmma_fragment", "TmemMap", "tmem_map",
    "Finding", "descriptor_for", "check_descriptor",
]


# ---------------------------------------------------------------------------------------------------- descriptors

@dataclass(frozen=True)
class SmemDescriptor:
    """A shared-memory matrix descriptor's fields, in bytes (the descriptor stores addresses >> 4).

    arch: sm_90a (wgmma, PTX ISA 9.7.15.5.1.2.2) or sm_100a / sm_103a (tcgen05, 9.7.16.4.1). lbo_mode 'absolute'
    (sm_103a, 128B swizzle only) makes `lbo` the byte address of the second chunk."""
    arch: str
    start: int
    lbo: int
    sbo: int
    swizzle: str = "none"
    base_offset: int = 0
    lbo_mode: str = "relative"

    def __post_init__(self):
        if self.arch not in Arch.values():
            raise DescriptorError(f"arch must be one of {', '.join(Arch.values())}, not {self.arch!r}")
        if self.arch == Arch.SM_90A and self.lbo_mode != "relative":
            raise DescriptorError("the absolute-address LBO mode is a tcgen05 (sm_103a) mode, not sm_90a")


@dataclass(frozen=True)
class Decoded:
    """A decoded descriptor: its value as hex, its fields (addresses in bytes) and the rules it breaks (empty: it
    breaks none the spec states).

    refused: a rule refused the fields before a value was made (validate_smem_descriptor,
    validate_instr_descriptor); `fields` are then the fields as given, `problems` that rule, and `value` None, or
    for an instruction descriptor whose fields fit their bits, what they pack to without the rules."""
    value: str | None
    fields: dict = _field(hash=False)
    problems: tuple[str, ...] = ()
    refused: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems


def encode_smem_descriptor(d: SmemDescriptor) -> int:
    """The 64-bit value of `d`. Raises DescriptorError naming the rule a field breaks (unaligned or out-of-range
    address, base offset with no swizzle, a swizzle the arch lacks, ...). tcgen05 values carry the fixed version
    bits 46-48 = 0b001."""
    if d.arch == Arch.SM_90A:
        return _wg.encode_wgmma_desc(d.start, d.lbo, d.sbo, d.swizzle, d.base_offset)
    return _tc.encode_tcgen05_smem_desc(d.start, d.lbo, d.sbo, d.swizzle, d.base_offset, d.lbo_mode, d.arch)


def _check_operand(arch: str, kind: str | None, major: str | None) -> None:
    """Refuse an operand (tcgen05 .kind and major-ness) that no descriptor of `arch` can describe."""
    if kind is None:
        if major is not None:
            raise DescriptorError(f"major {major!r} says how the operand of an MMA's .kind is laid out; give the "
                                  "kind too")
        return
    if arch == Arch.SM_90A:
        raise DescriptorError(f".kind::{kind} is a tcgen05 .kind (sm_100a / sm_103a), not an sm_90a operand")
    if kind not in _idesc.KINDS:
        raise DescriptorError(f"unknown kind {kind!r}; one of {', '.join(_idesc.KINDS)}")
    if major is not None and major not in Major.values():
        raise DescriptorError(f"major must be K or MN, not {major!r}")


def decode_smem_descriptor(value, arch: str, kind: str | None = None, major: str | None = None) -> Decoded:
    """Fields of a 64-bit value (int or '0x...' text) and the rules it breaks (reserved bits set, version bits
    not 0b001 on tcgen05, reserved swizzle codes, base offset with no swizzle, the absolute-LBO mode's limits).
    Field names: start_address, leading_byte_offset (leading_byte_address in absolute mode), stride_byte_offset,
    base_offset, swizzle; tcgen05 adds version and lbo_mode.

    kind (tcgen05 only): the .kind of the MMA whose operand the value describes, `major` ('K', the default, or
    'MN': its transpose bit set) how that operand is laid out; the rules tying the swizzle to them are checked
    too (an MN-major tf32 operand takes 128B_base32b only). DescriptorError for a kind on sm_90a, or a major
    without a kind."""
    if arch not in Arch.values():
        raise DescriptorError(f"arch must be one of {', '.join(Arch.values())}, not {arch!r}")
    _check_operand(arch, kind, major)
    info = _wg.decode_wgmma_desc(value) if arch == Arch.SM_90A else _tc.decode_tcgen05_smem_desc(value, arch)
    problems = list(info["problems"])
    if kind is not None:
        why = _tc.operand_swizzle_problem(kind, major or Major.K, info["fields"]["swizzle"])
        if why:
            problems.append(why)
    return Decoded(info["value"], dict(info["fields"]), tuple(problems))


def validate_smem_descriptor(d: SmemDescriptor, kind: str | None = None, major: str | None = None) -> Decoded:
    """Encode `d` and decode the value: its fields and every rule it breaks (`kind` and `major` as in
    decode_smem_descriptor). Where encode_smem_descriptor raises for a field that breaks a rule, this returns
    the fields as given with that rule as the one problem (`refused`, value None). DescriptorError only for a
    kind or major that no descriptor of d.arch can describe."""
    _check_operand(d.arch, kind, major)
    try:
        value = encode_smem_descriptor(d)
    except DescriptorError as rule:
        fields = {"start_address": d.start, "leading_byte_offset": d.lbo, "stride_byte_offset": d.sbo,
                  "base_offset": d.base_offset, "swizzle": d.swizzle}
        if d.arch != Arch.SM_90A:
            fields["lbo_mode"] = d.lbo_mode
        return Decoded(None, fields, (str(rule),), refused=True)
    return decode_smem_descriptor(value, d.arch, kind, major)


def smem_descriptor_problems(value, arch: str) -> tuple[str, ...]:
    """The rules a 64-bit descriptor value breaks (empty when it breaks none)."""
    return decode_smem_descriptor(value, arch).problems


def encode_instr_descriptor(d: InstrDescriptor, arch: str | None = None) -> int:
    """The 32-bit tcgen05 instruction descriptor (PTX ISA 9.7.16.4.2). Raises DescriptorError naming the rule
    (a type the kind lacks, an illegal M or N, a bit for another kind, ...); `arch` adds the per-arch rules."""
    return _idesc.encode_idesc(d, arch)


def pack_instr_descriptor(d: InstrDescriptor) -> int:
    """The 32-bit value of the fields as they are, without the legality rules (type codes and field widths only):
    what a kernel that ignores the rules would issue. DescriptorError for a type the kind has no code for or a field
    that does not fit."""
    return _idesc.pack_idesc(d)


def decode_instr_descriptor(value, kind: str, cta_group: int | None = None, ws: bool | None = None,
                            arch: str | None = None, scale_vec: str = "", swizzle_a: str | None = None,
                            swizzle_b: str | None = None) -> Decoded:
    """Fields of a 32-bit instruction descriptor of .kind::`kind` and the rules it breaks. The CTA group, .ws and
    the arch are not in the value: give them when known (otherwise a CTA pair is assumed for M = 256, .ws for
    M = 32).

    swizzle_a, swizzle_b: the swizzle of A's and B's shared-memory descriptors, which live outside this value;
    given, the rules tying them to its transpose bits are checked too (an MN-major tf32 operand: 128B_base32b
    only)."""
    for sw in (swizzle_a, swizzle_b):
        if sw is not None and sw not in Swizzle.values():
            raise DescriptorError(f"unknown swizzle {sw!r}; one of {', '.join(Swizzle.values())}")
    info = _idesc.decode_idesc(value, kind, cta_group, ws, arch, scale_vec)
    fields, problems = dict(info["fields"]), list(info["problems"])
    for op, sw in (("A", swizzle_a), ("B", swizzle_b)):
        if sw is not None:
            major = Major.MN if fields.get(f"transpose_{op.lower()}") else Major.K
            why = _tc.operand_swizzle_problem(kind, major, sw, op)
            if why:
                problems.append(why)
    return Decoded(info["value"], fields, tuple(problems))


def validate_instr_descriptor(d: InstrDescriptor, arch: str | None = None, swizzle_a: str | None = None,
                              swizzle_b: str | None = None) -> Decoded:
    """Encode `d` and decode the value with d's CTA group, .ws and scale vector: its fields and every rule it
    breaks (`arch`, `swizzle_a`, `swizzle_b` as in encode_instr_descriptor and decode_instr_descriptor). Where
    encode_instr_descriptor raises for a field that breaks a rule, this returns the fields as given with that rule
    as the one problem (`refused`), the value being what a kernel that ignores the rules would issue
    (pack_instr_descriptor), or None where the fields do not pack. DescriptorError only for an unknown kind or
    arch."""
    if d.kind not in _idesc.KINDS:
        raise DescriptorError(f"unknown kind {d.kind!r}; one of {', '.join(_idesc.KINDS)}")
    if arch is not None and arch not in _tc.TCGEN05_ARCHS:
        raise DescriptorError(f"tcgen05 is for {' or '.join(_tc.TCGEN05_ARCHS)}, not {arch}")
    try:
        value = encode_instr_descriptor(d, arch)
    except DescriptorError as rule:
        try:
            raw = f"0x{pack_instr_descriptor(d):08x}"
        except DescriptorError:
            raw = None
        return Decoded(raw, _asdict(d), (str(rule),), refused=True)
    return decode_instr_descriptor(value, d.kind, d.cta_group, d.ws, arch, d.scale_vec, swizzle_a, swizzle_b)


def default_accumulator_dtype(kind: str) -> str:
    """The accumulator type of a .kind's MMA where none is named: f32 where the kind has it, else its own (s32
    for i8)."""
    if kind not in _idesc.KINDS:
        raise DescriptorError(f"unknown kind {kind!r}; one of {', '.join(_idesc.KINDS)}")
    codes = _idesc.DTYPE_CODES[kind]
    return "f32" if "f32" in codes else next(iter(codes))


def encode_zero_column_mask(z: ZeroColumnMask) -> int:
    """The 64-bit .ws zero-column mask descriptor (PTX ISA 9.7.16.4.3); DescriptorError names a field that does
    not fit."""
    return _zmask.encode_zero_column_mask(z)


def decode_zero_column_mask(value) -> ZeroColumnMask:
    """The fields of a 64-bit zero-column mask descriptor."""
    return _zmask.decode_zero_column_mask(_as_u64(value))


def zero_columns(z: ZeroColumnMask, m: int, n: int) -> list[int]:
    """The columns of B that read as zero under mask `z` for an M x N MMA (M = 32, 64 or 128)."""
    return [j for j, bit in enumerate(_zmask.zero_column_mask_bits(z, m, n)) if bit]


def zero_mask_legal_n(m: int) -> list[int]:
    """Every N some tcgen05.mma of M rows takes (any kind, CTA group, .ws) that the zero-column mask's sub-masks
    split evenly: the N a mask for M = 32, 64 or 128 can cover."""
    if m not in _zmask.ZERO_MASK_SUBMASKS:
        raise DescriptorError(f"M = {m}: the zero-column mask is defined for M = 128, 64, 32")
    ns: set[int] = set()
    for kind in _idesc.KINDS:
        for cg in (1, 2):
            for ws in (False, True):
                try:
                    ns.update(_idesc.legal_shapes(kind, cg, ws).get(m, []))
                except DescriptorError:  # a combination the kind does not have (.ws with a CTA pair, ...)
                    pass
    return sorted(n for n in ns if n % _zmask.ZERO_MASK_SUBMASKS[m] == 0)


# ---------------------------------------------------------------------------------------------------- layouts

@dataclass(frozen=True)
class AddressMap:
    """Where every element of a tile lives: `address[mn, k]` is the shared-memory byte address the tensor core
    reads element (mn, k) from (the first byte of a sub-byte element's byte; `bit` its bit there), after the
    swizzle. `cute` is the same map in CuTe notation (element units, the swizzle on byte addresses, as the PTX ISA
    writes it), or '' for a tile that notation cannot write as a product (cute_notation says which)."""
    layout: SmemLayout
    address: np.ndarray = _field(hash=False, compare=False)
    bit: np.ndarray = _field(hash=False, compare=False)
    cute: str = ""

    @property
    def chunk(self) -> np.ndarray:
        """The 16-byte chunk (address >> 4) of every element."""
        return self.address >> 4

    @property
    def footprint(self) -> tuple[int, int]:
        """[lo, hi) of the 16-byte chunks the tile touches."""
        return int(self.address.min()) & ~15, (int(self.address.max()) | 15) + 1


def canonical_layout(dtype: str, major: str, swizzle: str, rows: int, cols: int, lbo: int | None = None,
                     sbo: int | None = None, start: int = 0, base_offset: int = 0) -> SmemLayout:
    """The canonical layout of a rows (MN) x cols (K) tile of `dtype`, `major`-major, with `swizzle`
    (PTX ISA 9.7.15.5.1.2 / 9.7.16.3). LBO and SBO default to a densely packed tile. Raises LayoutError for a
    tile the descriptor cannot express (one larger than the 256 KiB its address fields reach included), or
    strides that make two elements overlap."""
    if (lbo is None) != (sbo is None):
        raise LayoutError("give both lbo and sbo, or neither (packed strides)")
    if major not in Major.values():
        raise LayoutError(f"major must be K or MN, not {major!r}")
    if swizzle not in _layouts.SWIZZLE_BMS:
        raise LayoutError(f"unknown swizzle {swizzle!r}; one of {', '.join(_layouts.SWIZZLE_BMS)}")
    try:
        bits = _dtypes.get(dtype).bits
    except ValueError as e:  # the known types' names with it
        raise LayoutError(str(e)) from None
    if lbo is None:
        lbo, sbo = _layouts.packed_strides(major, swizzle, dtype, rows, cols)
    lay = _layouts.validate(SmemLayout(major, swizzle, dtype, rows, cols, lbo, sbo, start, base_offset))
    # before the overlap check, whose work grows with the addresses' span
    if rows * cols * bits > 8 * _layouts.SMEM_BYTES:
        raise LayoutError(f"a {rows}x{cols} {dtype} tile is larger than shared memory (256 KiB)")
    _layouts.check_distinct(lay)
    return lay


def address_map(layout: SmemLayout) -> AddressMap:
    """The address of every element of `layout` (see AddressMap), in the PTX ISA's model. Every canonical layout
    has one; `cute` is '' where CuTe notation cannot write the tile as a product (see cute_notation)."""
    bits = _layouts.element_bit_addresses(_layouts.validate(layout))
    try:
        cute = cute_notation(layout)
    except LayoutError:  # the layout is valid (above): only its shape is no product
        cute = ""
    return AddressMap(layout, bits >> 3, bits & 7, cute)


def _elements(nbytes: int, bits: int) -> int:
    return nbytes * 8 // bits


def cute_notation(layout: SmemLayout) -> str:
    """The layout as the PTX ISA writes it: 'Swizzle<B,M,S> o shape:stride', shape and stride in elements
    (mode 0 = MN, mode 1 = K), the swizzle acting on the byte address. Evaluate it with
    harness.spec.cute_layout.parse. Raises LayoutError for an MN-major swizzled tile whose MN extent is not a
    whole number of swizzle rows beyond the first (CuTe's shape would not be a product)."""
    L = _layouts.validate(layout)
    T, bits = L.T, L.bits
    b, m, s = _layouts.SWIZZLE_BMS[L.swizzle]
    sbo, lbo, W = _elements(L.sbo, bits), _elements(L.lbo, bits), _elements(L.row_bytes, bits)
    if L.major == "K":
        shape = f"((8,{L.rows // 8}),({T},{L.cols // T}))"
        stride = f"(({T},{sbo}),(1,{lbo}))" if L.swizzle == "none" else f"(({W},{sbo}),(1,{T}))"
    else:
        # K-rows of one swizzle atom, which SBO steps over: 4 for 128B_base32b, else 8 (layouts.MN_KROWS_PER_ATOM)
        krows = _layouts.MN_KROWS_PER_ATOM.get(L.swizzle, 8)
        chunks, kgroups = L.rows // T, L.cols // krows
        if L.swizzle == "none":
            shape, stride = f"(({T},{chunks}),(8,{kgroups}))", f"((1,{sbo}),({T},{lbo}))"
        else:
            per_row = L.row_bytes // 16
            if chunks <= per_row:
                shape, stride = f"(({T},{chunks}),({krows},{kgroups}))", f"((1,{T}),({W},{sbo}))"
            elif chunks % per_row:
                raise LayoutError(f"MN-major {L.swizzle}: {L.rows} rows are {chunks} chunks, not a whole number of "
                                  f"{per_row}-chunk swizzle rows")
            else:
                shape = f"(({T},{per_row},{chunks // per_row}),({krows},{kgroups}))"
                stride = f"((1,{T},{lbo}),({W},{sbo}))"
    return f"Swizzle<{b},{m},{s}> o {shape}:{stride}"


# ---------------------------------------------------------------------------------------------------- fragments

def wgmma_fragment(operand: str, dtype: str, n: int | None = None) -> Fragment:
    """The register fragment of a wgmma operand over one warpgroup (PTX ISA 9.7.15.5.1.1): operand 'D' (the
    accumulator of m64nNk*, dtype f32 / s32 / f16, `n` required) or 'A' (A from registers, dtype the A type).
    Fragment.row / .col / .reg / .shift are arrays [thread, element]."""
    if operand == "D":
        if n is None:
            raise ValueError("the D fragment needs n")
        return _fragments.wgmma_d_fragment(n, dtype)
    if operand == "A":
        return _fragments.wgmma_a_fragment(dtype)
    raise ValueError(f"operand must be 'A' or 'D', not {operand!r}")


@dataclass(frozen=True)
class TmemMap:
    """Where tcgen05.mma's accumulator D[row, col] lives in Tensor Memory: arrays [m, n] of the CTA (of a pair),
    the lane and the 32-bit column (PTX ISA 9.7.16.8, data paths D/E/F/G and the CTA pair's)."""
    m: int
    n: int
    cta_group: int
    ws: bool
    cta: np.ndarray = _field(hash=False, compare=False)
    lane: np.ndarray = _field(hash=False, compare=False)
    column: np.ndarray = _field(hash=False, compare=False)


def tmem_map(m: int, n: int, cta_group: int = 1, ws: bool = False, kind: str = "f16", dtype: str = "f32") -> TmemMap:
    """The Tensor Memory map of an M x N accumulator; the shape is checked against .kind::`kind`'s legal shapes
    first (DescriptorError otherwise)."""
    shapes = _idesc.legal_shapes(kind, cta_group, ws)
    if m not in shapes or n not in shapes[m]:
        raise DescriptorError(f"M = {m}, N = {n} is not a tcgen05.mma shape of .kind::{kind} "
                              f"cta_group::{cta_group}{' .ws' if ws else ''}")
    cta, lane, col, _half = _datapaths.d_position(m, n, cta_group, ws, dtype)
    return TmemMap(m, n, cta_group, ws, cta, lane, col)


# ---------------------------------------------------------------------------------------------------- the check

@dataclass(frozen=True)
class Finding:
    """One field of a descriptor value that disagrees with the intended layout: the field, the value found, the
    value the layout needs, and one sentence saying what the tensor core would read instead."""
    field: str
    got: object
    want: object
    message: str


def descriptor_for(layout: SmemLayout, arch: str, lbo_mode: str = "relative") -> SmemDescriptor:
    """The descriptor that makes the tensor core read `layout` (its start, LBO, SBO, swizzle, base offset)."""
    _layouts.validate(layout)
    return SmemDescriptor(arch, layout.start, layout.lbo, layout.sbo, layout.swizzle, layout.base_offset, lbo_mode)


# the decoded fields' names, with the layout attribute and the name a finding uses
_FIELDS = (("start_address", "start", "start address"), ("leading_byte_offset", "lbo", "LBO"),
           ("stride_byte_offset", "sbo", "SBO"), ("swizzle", "swizzle", "swizzle"),
           ("base_offset", "base_offset", "base offset"))


def _lbo_used(layout: SmemLayout) -> bool:
    """K-major swizzled layouts do not use LBO (the spec: 'assumed 1'); every other layout does."""
    return not (layout.major == "K" and layout.swizzle != "none")


def _ranges(values) -> str:
    vals = sorted({int(v) for v in values})
    out, lo = [], None
    for i, v in enumerate(vals):
        lo = v if lo is None else lo
        if i + 1 == len(vals) or vals[i + 1] != v + 1:
            out.append(f"{lo}" if lo == v else f"{lo}-{v}")
            lo = None
    return ",".join(out)


def _read_addresses(L: SmemLayout) -> np.ndarray:
    """The byte address of every element as the tensor core computes it from the descriptor's fields, without
    the canonical-layout rules (layouts.validate): a descriptor with a narrower swizzle than its tile, say, still
    reads somewhere, and that is what a finding must name."""
    byte = L.start + _layouts.canonical_bit_offsets(L, checked=False) // 8
    return np.asarray(_layouts.swizzle_address(byte, L.swizzle, L.base_offset))


def _misread(intended: SmemLayout, read: SmemLayout) -> str:
    """What the tensor core reads under `read` instead of `intended`: the rows (MN) and columns (K) of the
    elements whose address moves, and the bytes they would be read from."""
    want = _layouts.smem_address(intended)
    got = _read_addresses(read)
    moved = want != got
    if not moved.any():
        return "every element of this tile would still be read from where the layout puts it"
    rows, cols = np.nonzero(moved)
    last = max(1, intended.bits // 8) - 1  # an element's last byte
    lo, hi = int(got[moved].min()), int(got[moved].max()) + last
    wlo, whi = int(want[moved].min()), int(want[moved].max()) + last
    where = (f"rows {_ranges(rows)}" if len(set(cols.tolist())) == intended.cols
             else f"rows {_ranges(rows)}, columns {_ranges(cols)}")
    return (f"{where} ({int(moved.sum())} of {moved.size} elements) would be read from bytes {lo}-{hi} "
            f"instead of {wlo}-{whi}")


def check_descriptor(value, intended: SmemLayout, arch: str) -> list[Finding]:
    """Diff a descriptor value (from a kernel) against the layout its author intended.

    Returns one Finding per disagreeing field (start address, LBO where the layout uses it, SBO, swizzle, base
    offset) with what the tensor core would read instead, computed by reading the tile with only that field
    taken from the value; and one per rule the value breaks on its own (reserved bits, tcgen05's version bits
    46-48, an invalid swizzle code), field 'rule'; a value in sm_103a's absolute-address LBO mode gets a finding
    'LBO mode' saying its LBO was not checked. An empty list: the value reads the tile as intended.
    Raises LayoutError if `intended` itself is not a canonical layout."""
    lay = _layouts.validate(intended)
    dec = decode_smem_descriptor(value, arch)
    findings = [Finding("rule", dec.value, None, f"the value breaks a rule: {p}") for p in dec.problems]
    want = {"start_address": lay.start & 0x3FFF0, "leading_byte_offset": lay.lbo, "stride_byte_offset": lay.sbo,
            "swizzle": lay.swizzle, "base_offset": lay.base_offset}
    if dec.fields.get("lbo_mode") == "absolute":  # sm_103a: LBO is then an address, which the layout model lacks
        findings.append(Finding("LBO mode", "absolute", "relative",
                                "the value uses the absolute-address LBO mode (bit 52, sm_103a); check_descriptor "
                                "models relative LBOs only, so its LBO field was not checked"))
    for key, attr, name in _FIELDS:
        if key == "leading_byte_offset" and not _lbo_used(lay):
            continue
        got = dec.fields.get(key)
        if got is None or got == want[key]:
            continue
        if key == "swizzle" and got not in _layouts.SWIZZLE_BMS:
            findings.append(Finding(name, got, want[key], f"{name} is {got}, the layout needs {want[key]}"))
            continue
        read = replace(lay, **{attr: got})
        if key == "swizzle" and got == "none":
            read = replace(read, base_offset=0)
        findings.append(Finding(name, got, want[key], f"{name} is {got}, the layout needs {want[key]}: "
                                                      f"{_misread(lay, read)}"))
    return findings
