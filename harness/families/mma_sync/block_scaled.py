"""sm_120a / sm_121a warp-level `mma.sync` of the `.kind::f8f6f4 / ::mxf8f6f4 / ::mxf4 / ::mxf4nvf4` qualifiers (PTX ISA
9.7.14.3 "Block Scaling for mma.sync", 9.7.14.5.14 mma, 9.7.14.6 mma.sp), dense and sparse, their 4/6/8-bit
containers and scale-factor registers, and the sub-byte ldmatrix `.m8n16 .b8x16.b4x16_p64 / .b6x16_p32` that feeds
them: as data, evaluated on numpy arrays. Their kernels (`kernel_sm120.py`) are compiled and SASS-checked, and
their cases' inputs, expected registers and readback written from these models (`reference_sm120.py`,
`readback_sm120.py`), but no sm_120 GPU exists to run them: nothing here has met the hardware.

The forms (`BlockScaledForm`). `kind` fixes the shape (dense / sparse): f8f6f4 and mxf8f6f4 m16n8k32 / m16n8k64, mxf4
and mxf4nvf4 m16n8k64 / m16n8k128; the sparse forms are `mma.sp::ordered_metadata` alone with sparsity selector 0
(ptxas 13.5 refuses `mma.sp` and any other selector: "Illegal modifier '.sp'", "expected to be 0"). Types, scale
types, `.scale_vec_size` and the selectors follow the ISA's Table 36 (valid .kind / .stype / .scale_vec_size) and
Table 37 (valid selector values); every other combination is refused in one sentence.

Containers. f8f6f4 / mxf8f6f4 take every type in an 8-bit container, four to a register, at the positions the 8-bit
forms' fragments use (`fragments._packed_a` with 8 bits): e4m3 / e5m2 fill it, e3m2 / e2m3 sit in bits 5-0, e2m1 in
bits 5-2 ("the central 4 bits", as CUTLASS's fp4_shift_A/B feed it: `0b0000ABCD --> 0b00ABCD00`). mxf4 / mxf4nvf4
take e2m1 packed, eight to a register (the 4-bit fragments).

Scale factors (ISA 9.7.14.3, Figures 43-45, Table 37). scale_A is M x SFA_N and scale_B SFB_M x N, SFA_N = SFB_M =
1, 2, 4 for .scale_vec::1X / 2X / 4X: chunk j of K (K / SFA_N elements, K the logical K of a sparse form) of row m of
A is multiplied by scale_A[m, j]. Each lane's `scale-a-data` / `scale-b-data` register holds up to four one-byte
factors; `{byte-id, thread-id}` pick who holds which:
  A: the thread pair `lane % 4 in {2 thread-id-a, 2 thread-id-a + 1}` of each quad g = lane // 4 holds rows g
     (lane % 2 == 0) and g + 8 (lane % 2 == 1) (Figure 43, which CUTLASS's SFALayout Stride<_8,_0,_1> and a public
     hardware probe read the same way);
  B: the thread `lane % 4 == thread-id-b` of quad g holds column g;
  bytes: 1X: byte byte-id alone (chunk 0); 2X: bytes byte-id, byte-id + 1 (byte-id 0 or 2) chunks 0, 1; 4X: bytes
     0-3, chunks 0-3.
Every other lane's register and byte is read by nobody (`ScaleMap.held`).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from harness.families.mma_sync import fragments as FR
from harness.families.mma_sync.forms import MmaForm, Shape, Sparsity

KINDS = ("f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4")
BLOCK_SCALED_KINDS = ("mxf8f6f4", "mxf4", "mxf4nvf4")
F8F6F4_TYPES = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
ELEMENT_BITS = {"e4m3": 8, "e5m2": 8, "e3m2": 6, "e2m3": 6, "e2m1": 4}
# bit position of an element's code inside its 8-bit container (f8f6f4 / mxf8f6f4)
CONTAINER_SHIFT = {"e4m3": 0, "e5m2": 0, "e3m2": 0, "e2m3": 0, "e2m1": 2}
SCALE_VECS = {"1X": 1, "2X": 2, "4X": 4}
# Table 36: kind -> the (.stype, .scale_vec_size) pairs it takes
SCALE_RULES = {"mxf8f6f4": (("ue8m0", "1X"),), "mxf4": (("ue8m0", "2X"),),
               "mxf4nvf4": (("ue8m0", "2X"), ("ue8m0", "4X"), ("ue4m3", "4X"))}
# legal by the ISA, yet not planned: NVRTC 13.0 (PTX ISA 9.0), a toolchain the harness supports and the H100 image
# ships, rejects .kind::mxf4nvf4 .scale_vec::4X with .ue8m0 ("Illegal modifier"); NVRTC 13.1 (PTX ISA 9.1) takes it.
# Planned, it would make the family's every sweep there a compile error (tests/test_mma_sync_sm120.py shows both)
NEWER_THAN_PTX_9_0 = (("mxf4nvf4", "ue8m0", "4X"),)
# Table 37: .scale_vec_size -> legal byte-id (A and B alike); thread-id-a is 0 or 1, thread-id-b 0-3 for every size
BYTE_IDS = {"1X": (0, 1, 2, 3), "2X": (0, 2), "4X": (0,)}
THREAD_IDS_A = (0, 1)
THREAD_IDS_B = (0, 1, 2, 3)
# the ISA's since-when of these forms (Target ISA notes of mma): sm_120a, PTX 8.7; sm_121a, PTX 8.8
ARCHS = ("sm_120a", "sm_121a")

SHAPES = {("f8f6f4", False): Shape.M16N8K32, ("mxf8f6f4", False): Shape.M16N8K32,
          ("mxf4", False): Shape.M16N8K64, ("mxf4nvf4", False): Shape.M16N8K64,
          ("f8f6f4", True): Shape.M16N8K64, ("mxf8f6f4", True): Shape.M16N8K64,
          ("mxf4", True): Shape.M16N8K128, ("mxf4nvf4", True): Shape.M16N8K128}


@dataclass(frozen=True)
class BlockScaledForm:
    """One mma.sync / mma.sp::ordered_metadata form of sm_120a with a `.kind` qualifier: every qualifier and every
    immediate (the four scale selectors; the sparsity selector is always 0)."""
    kind: str
    atype: str
    btype: str
    dtype: str = "f32"
    ctype: str = "f32"
    sparse: bool = False
    stype: str | None = None  # .ue8m0 / .ue4m3; None for f8f6f4
    scale_vec: str | None = None  # "1X" / "2X" / "4X"; None for f8f6f4
    byte_id_a: int = 0
    thread_id_a: int = 0
    byte_id_b: int = 0
    thread_id_b: int = 0

    def __post_init__(self):
        problem = _why_illegal(self)
        if problem:
            raise ValueError(f"{self.describe()}: {problem}")

    @property
    def block_scaled(self) -> bool:
        return self.kind in BLOCK_SCALED_KINDS

    @property
    def shape(self) -> Shape:
        return SHAPES[(self.kind, self.sparse)]

    @property
    def mnk(self) -> tuple[int, int, int]:
        return self.shape.mnk

    @property
    def container_bits(self) -> int:
        """Bits an A or B element takes in its register: 8 (f8f6f4 / mxf8f6f4 containers) or 4 (packed e2m1)."""
        return 8 if self.kind in ("f8f6f4", "mxf8f6f4") else 4

    @property
    def scale_count(self) -> int:
        """SFA_N = SFB_M: the scale factors of one row of A (one column of B)."""
        return SCALE_VECS[self.scale_vec] if self.block_scaled else 0

    @property
    def scale_vector_size(self) -> int:
        """Elements of K one scale factor covers (the logical K of a sparse form)."""
        return self.mnk[2] // self.scale_count

    @property
    def selectors(self) -> tuple[int, int, int, int]:
        return self.byte_id_a, self.thread_id_a, self.byte_id_b, self.thread_id_b

    def describe(self) -> str:
        sc = f" .{self.stype} .scale_vec::{self.scale_vec} sel {self.selectors}" if self.stype else ""
        return (f"mma{'.sp::ordered_metadata' if self.sparse else ''} kind::{self.kind} "
                f"{SHAPES.get((self.kind, self.sparse), '?')} {self.dtype}.{self.atype}.{self.btype}.{self.ctype}{sc}")

    def instruction(self) -> str:
        """The PTX opcode with its qualifiers, in the ISA's order (operands left to the kernel)."""
        head = "mma.sp::ordered_metadata.sync.aligned" if self.sparse else "mma.sync.aligned"
        scale = f".block_scale.scale_vec::{self.scale_vec}" if self.block_scaled else ""
        tail = f".{self.stype}" if self.block_scaled else ""
        return (f"{head}.{self.shape.value}.row.col.kind::{self.kind}{scale}"
                f".{self.dtype}.{self.atype}.{self.btype}.{self.ctype}{tail}")

    def scale_operands(self, sfa: str, sfb: str) -> str:
        """`scale-a-data, {byte-id-a, thread-id-a}, scale-b-data, {byte-id-b, thread-id-b}` with the given registers."""
        return f"{sfa}, {{{self.byte_id_a}, {self.thread_id_a}}}, {sfb}, {{{self.byte_id_b}, {self.thread_id_b}}}"


def _why_illegal(f: BlockScaledForm) -> str | None:
    if f.kind not in KINDS:
        return f"kind {f.kind!r} is not one of {', '.join(KINDS)}"
    types = F8F6F4_TYPES if f.kind in ("f8f6f4", "mxf8f6f4") else ("e2m1",)
    if f.atype not in types or f.btype not in types:
        return f"kind::{f.kind} takes A and B of {', '.join(types)}, not {f.atype}.{f.btype}"
    accs = (("f32", "f32"), ("f16", "f16")) if f.kind == "f8f6f4" else (("f32", "f32"),)
    if (f.dtype, f.ctype) not in accs:
        return (f"kind::{f.kind} accumulates as D/C {', '.join(d + '/' + c for d, c in accs)}, "
                f"not {f.dtype}/{f.ctype}")
    if not isinstance(f.sparse, bool):
        return "sparse is True or False"
    if not f.block_scaled:
        if f.stype is not None or f.scale_vec is not None or any(f.selectors):
            return "kind::f8f6f4 is not block-scaled: it takes no scale type, scale_vec or scale selector"
        return None
    if (f.stype, f.scale_vec) not in SCALE_RULES[f.kind]:
        takes = ", ".join(f".{s} .scale_vec::{v}" for s, v in SCALE_RULES[f.kind])
        return f"kind::{f.kind} takes {takes}, not .{f.stype} .scale_vec::{f.scale_vec}"
    for name, value, legal in (("byte-id-a", f.byte_id_a, BYTE_IDS[f.scale_vec]),
                               ("thread-id-a", f.thread_id_a, THREAD_IDS_A),
                               ("byte-id-b", f.byte_id_b, BYTE_IDS[f.scale_vec]),
                               ("thread-id-b", f.thread_id_b, THREAD_IDS_B)):
        if value not in legal:
            return (f"{name} of .scale_vec::{f.scale_vec} is one of {', '.join(map(str, legal))}, not {value}"
                    " (ISA Table 37)")
    return None


# ------------------------------------------------------------------------------------------------ every form

@lru_cache(maxsize=None)
def all_forms(selectors: bool = False) -> tuple[BlockScaledForm, ...]:
    """Every legal form with selectors 0 (`selectors`: and with every legal selector combination, 3,400 more), in a
    fixed order: kind, dense before sparse, A type, B type, D/C, scale type and size."""
    out = []
    for kind in KINDS:
        types = F8F6F4_TYPES if kind in ("f8f6f4", "mxf8f6f4") else ("e2m1",)
        accs = (("f32", "f32"), ("f16", "f16")) if kind == "f8f6f4" else (("f32", "f32"),)
        scales = SCALE_RULES.get(kind, ((None, None),))
        scales = tuple(x for x in scales if (kind, *x) not in NEWER_THAN_PTX_9_0)
        for sparse, a, b, (d, c), (st, sv) in itertools.product((False, True), types, types, accs, scales):
            if not selectors or st is None:
                out.append(BlockScaledForm(kind, a, b, d, c, sparse, st, sv))
                continue
            for sel in itertools.product(BYTE_IDS[sv], THREAD_IDS_A, BYTE_IDS[sv], THREAD_IDS_B):
                out.append(BlockScaledForm(kind, a, b, d, c, sparse, st, sv, *sel))
    return tuple(out)


# ------------------------------------------------------------------------------------------------ fragments

def a_map(form: BlockScaledForm) -> FR.FragmentMap:
    """A's register map in its containers; for a sparse form, over the compressed M x K/2 storage."""
    m, _, k = form.mnk
    return FR._packed_a(m, k // 2 if form.sparse else k, form.container_bits)


def b_map(form: BlockScaledForm) -> FR.FragmentMap:
    _, n, k = form.mnk
    return FR._packed_b(k, n, form.container_bits)


def acc_map(form: BlockScaledForm) -> FR.FragmentMap:
    """C's map, D's too (they are of one type in every form here)."""
    m, n, _ = form.mnk
    return FR._acc(m, n, 32 if form.dtype == "f32" else 16)


def metadata_form(form: BlockScaledForm) -> MmaForm:
    """The sm_80 mma.sp form whose metadata layout this sparse form shares: the layout depends only on the shape,
    the element width (8-bit containers: 2:4 chunks of 4 elements; packed e2m1: pairwise 4:8 chunks, as s4/u4) and
    the selector (ISA 9.7.14.6.1), so `fragments.metadata_map` of that form is this one's."""
    if not form.sparse:
        raise ValueError(f"{form.describe()} is dense: it has no metadata")
    if form.container_bits == 8:
        return MmaForm(Shape.M16N8K64, "f32", "e4m3", "e4m3", "f32", Sparsity.SP_ORDERED, selector=0)
    return MmaForm(Shape.M16N8K128, "s32", "u4", "u4", "s32", Sparsity.SP_ORDERED, selector=0)


def encode_containers(form: BlockScaledForm, operand: str, codes) -> np.ndarray:
    """Element codes (the type's bits, low-aligned) -> the bits each takes in its register slot: shifted into the
    middle of its 8-bit container for e2m1 of f8f6f4 / mxf8f6f4, as they are otherwise."""
    t = form.atype if operand == "A" else form.btype
    c = np.asarray(codes, np.uint32)
    if np.any(c >> ELEMENT_BITS[t]):
        raise ValueError(f"a {t} code has {ELEMENT_BITS[t]} bits")
    return c << CONTAINER_SHIFT[t] if form.container_bits == 8 else c


def decode_containers(form: BlockScaledForm, operand: str, slots) -> np.ndarray:
    """The inverse of `encode_containers`: the element codes of register slots (bits outside the element ignored,
    as the MMA ignores them)."""
    t = form.atype if operand == "A" else form.btype
    s = np.asarray(slots, np.uint32)
    shift = CONTAINER_SHIFT[t] if form.container_bits == 8 else 0
    return (s >> shift) & ((1 << ELEMENT_BITS[t]) - 1)


def pack_registers(frag: FR.FragmentMap, matrix_slots) -> np.ndarray:
    """uint32 [32, registers]: each lane's registers holding `matrix_slots` [rows, cols] (container bits) where the
    fragment map puts them."""
    row, col, _ = frag.table
    vals = np.asarray(matrix_slots, np.uint64)[row, col]
    reg, sub = frag.register_of(np.arange(frag.values))
    out = np.zeros((FR.WARP, frag.registers), np.uint64)
    for v in range(frag.values):
        out[:, reg[v]] |= vals[:, v] << np.uint64(sub[v] * frag.bits)
    return out.astype(np.uint32)


def unpack_registers(frag: FR.FragmentMap, regs) -> np.ndarray:
    """The inverse of `pack_registers`: the [rows, cols] matrix of container slots."""
    row, col, _ = frag.table
    r = np.asarray(regs, np.uint64)
    reg, sub = frag.register_of(np.arange(frag.values))
    out = np.zeros((frag.rows, frag.cols), np.uint64)
    mask = np.uint64((1 << frag.bits) - 1)
    for v in range(frag.values):
        out[row[:, v], col[:, v]] = (r[:, reg[v]] >> np.uint64(sub[v] * frag.bits)) & mask
    return out.astype(np.uint32)


# ------------------------------------------------------------------------------------------------ scale factors

@dataclass(frozen=True)
class ScaleMap:
    """Byte `b` of lane `l`'s scale register: held[l, b] says whether the MMA reads it, index[l, b] which row of A
    (column of B) and chunk[l, b] which chunk of K it scales (both -1 where not held)."""
    operand: str
    index: np.ndarray
    chunk: np.ndarray
    held: np.ndarray


def scale_map(form: BlockScaledForm, operand: str) -> ScaleMap:
    if not form.block_scaled:
        raise ValueError(f"{form.describe()} is not block-scaled: it has no scale factors")
    if operand not in ("A", "B"):
        raise ValueError(f"a scale operand is 'A' or 'B', not {operand!r}")
    lane = np.arange(FR.WARP)[:, None]
    byte = np.arange(4)[None, :]
    g, t = lane // 4, lane % 4
    byte_id = form.byte_id_a if operand == "A" else form.byte_id_b
    chunk = byte - byte_id
    in_bytes = (chunk >= 0) & (chunk < form.scale_count)
    if operand == "A":
        lane_ok = t // 2 == form.thread_id_a
        index = g + 8 * (t % 2)
    else:
        lane_ok = t == form.thread_id_b
        index = g + 0 * t
    held = lane_ok & in_bytes
    shape = (FR.WARP, 4)
    return ScaleMap(operand, np.broadcast_to(np.where(held, index, -1), shape).copy(),
                    np.broadcast_to(np.where(held, chunk, -1), shape).copy(), np.broadcast_to(held, shape).copy())


def scale_holder(form: BlockScaledForm, operand: str, index: int, chunk: int) -> tuple[int, int]:
    """(lane, byte) holding the scale factor of row `index` of A (column of B), chunk `chunk`: solved from
    `scale_map`; ValueError unless exactly one byte of the warp holds it."""
    sm = scale_map(form, operand)
    lanes, bytes_ = np.nonzero(sm.held & (sm.index == index) & (sm.chunk == chunk))
    if lanes.size != 1:
        raise ValueError(f"scale factor {operand}[{index}, {chunk}] is held by {lanes.size} bytes, not one")
    return int(lanes[0]), int(bytes_[0])


def encode_scales(form: BlockScaledForm, operand: str, factors) -> np.ndarray:
    """Each lane's scale register (uint32 [32]) from the factors' codes [rows of A or columns of B, scale_count];
    bytes nobody reads hold `0`."""
    sm = scale_map(form, operand)
    f = np.asarray(factors, np.uint32)
    vals = np.where(sm.held, f[np.maximum(sm.index, 0), np.maximum(sm.chunk, 0)], 0).astype(np.uint32)
    return (vals << (8 * np.arange(4, dtype=np.uint32))[None, :]).sum(axis=1, dtype=np.uint64).astype(np.uint32)


def decode_scales(form: BlockScaledForm, operand: str, regs) -> np.ndarray:
    """The factors [rows / columns, scale_count] the held bytes of the registers give (inverse of `encode_scales`)."""
    sm = scale_map(form, operand)
    m, n, _ = form.mnk
    out = np.zeros((m if operand == "A" else n, form.scale_count), np.uint32)
    r = np.asarray(regs, np.uint32)
    lanes, bytes_ = np.nonzero(sm.held)
    out[sm.index[lanes, bytes_], sm.chunk[lanes, bytes_]] = (r[lanes] >> (8 * bytes_).astype(np.uint32)) & 0xFF
    return out


# ------------------------------------------------------------------------------------------------ reference

def decode_values(type_name: str, codes) -> np.ndarray:
    """float64 values of element or scale codes (ue4m3: e4m3's bits, sign 0; ue8m0: 2^(code - 127))."""
    from harness.spec import dtypes
    return np.asarray(dtypes.get(type_name).from_bits(np.asarray(codes)), np.float64)


def reference_d(form: BlockScaledForm, a_codes, b_codes, c, sfa_codes=None, sfb_codes=None) -> np.ndarray:
    """D = (A * scale_A) (B * scale_B) + C in float64 from the logical matrices' codes: A [M, K] (a sparse form's
    logical A, zeros where the metadata drops), B [K, N], C [M, N] values, scale codes [M, SFA_N] / [SFB_M... as
    [N, SFB_M]]. Exact for the values the cases draw (reference_sm120.check_exact); never compared with a
    GPU: no sm_120 GPU has run these forms."""
    m, n, k = form.mnk
    a = decode_values(form.atype, a_codes)
    b = decode_values(form.btype, b_codes)
    if a.shape != (m, k) or b.shape != (k, n):
        raise ValueError(f"A is {m} x {k} and B {k} x {n} for {form.describe()}")
    if form.block_scaled:
        vs = form.scale_vector_size
        chunk = np.arange(k) // vs
        a = a * decode_values(form.stype, sfa_codes)[:, chunk]
        b = b * decode_values(form.stype, sfb_codes)[:, chunk].T
    return a @ b + np.asarray(c, np.float64)


# ------------------------------------------------------------------------------------------------ sub-byte ldmatrix

@dataclass(frozen=True)
class SubByteLoad:
    """`ldmatrix.sync.aligned.m8n16.x{num}.shared.b8x16.{src}`: `num` 8 x 16 matrices of 4-bit (`b4x16_p64`) or
    6-bit (`b6x16_p32`) elements, each row 16 bytes of shared memory (the 16 elements packed from bit 0, then 64 /
    32 bits of padding: ISA 5.5.1.1.1), whose address lane 8j + i supplies for row i of matrix j; each element lands
    in its own byte, low bits, high bits 0 (CUTLASS's fp4_shift_A comment: "ld.matrix b4x16_p64 places FP4 data at
    the first four bits in each eight-bit container"). Register j of lane l: row l // 4 of matrix j, elements
    4 (l % 4) .. 4 (l % 4) + 3 in bytes 0-3 (the .m8n8 .b16 pattern on 16 one-byte containers a row). No `.trans`
    (ptxas: "Modifier .trans not allowed for shape '.m8n16'")."""
    num: int
    src: str = "b4x16_p64"

    def __post_init__(self):
        if self.num not in (1, 2, 4):
            raise ValueError(f".x{self.num} is not an ldmatrix count: .x1, .x2 or .x4")
        if self.src not in ("b4x16_p64", "b6x16_p32"):
            raise ValueError(f"the sub-byte source format is b4x16_p64 or b6x16_p32, not {self.src!r}")

    @property
    def bits(self) -> int:
        return 4 if self.src == "b4x16_p64" else 6

    def instruction(self) -> str:
        return f"ldmatrix.sync.aligned.m8n16.x{self.num}.shared.b8x16.{self.src}"

    @cached_property
    def elements(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(matrix, row, element) of byte b of register r of lane l: arrays [32, num, 4]."""
        lane = np.arange(FR.WARP)[:, None, None]
        reg = np.arange(self.num)[None, :, None]
        byte = np.arange(4)[None, None, :]
        shape = (FR.WARP, self.num, 4)
        return tuple(np.broadcast_to(x, shape).copy() for x in (reg + 0 * lane, lane // 4 + 0 * byte,
                                                               4 * (lane % 4) + byte + 0 * reg))

    def pack_row(self, codes) -> np.ndarray:
        """16 element codes -> the 16 bytes of one shared-memory row (packed from bit 0, padding 0)."""
        c = np.asarray(codes, np.int64)
        if c.shape != (16,) or np.any(c >> self.bits) or np.any(c < 0):
            raise ValueError(f"a row is 16 codes of {self.bits} bits")
        bits = (c[:, None] >> np.arange(self.bits)[None, :]) & 1  # [element, bit], element i at bits b*i ..
        row_bits = np.zeros(128, np.int64)
        row_bits[:16 * self.bits] = bits.ravel()
        return (row_bits.reshape(16, 8) << np.arange(8)[None, :]).sum(axis=1).astype(np.uint8)

    def load(self, addresses, image) -> np.ndarray:
        """What the instruction leaves in the registers (uint32 [32, num]) given each lane's row address and a
        shared-memory image (uint8)."""
        matrix, row, element = self.elements
        img = np.asarray(image, np.uint8)
        base = np.asarray(addresses, np.int64)[8 * matrix + row]
        bit = self.bits * element
        lo = img[base + bit // 8].astype(np.uint32) | (img[base + bit // 8 + 1].astype(np.uint32) << 8)
        code = (lo >> (bit % 8).astype(np.uint32)) & ((1 << self.bits) - 1)
        return (code << (8 * np.arange(4, dtype=np.uint32))).sum(axis=-1, dtype=np.uint64).astype(np.uint32)


SUB_BYTE_LOADS = tuple(SubByteLoad(n, s) for s in ("b4x16_p64", "b6x16_p32") for n in (1, 2, 4))
