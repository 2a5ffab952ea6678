"""tcgen05 cases: which shapes, types, layouts and forms are swept, and which rest on an unsettled reading.

The data layouts they use live in datapaths.py; the reference in reference.py; the read-back in readback.py.

Every data layout here is diffed against NVIDIA's own code on the CPU: CUTLASS's C++ CuTe layouts evaluated on the
host (tests/oracles/cutlass_tcgen05_layouts.cpp, tests/test_tcgen05_layouts_vs_cutlass.py) and the CuTe DSL
(tests/test_cute_oracle.py). What they fix:
  * D in Tensor Memory (tmem_frg / tmem_frg_ws): layout D (M=128, identity), F (M=64: 16 rows in each warp's
    32-lane quarter), A (M=256 pair: 128 rows per CTA), B (M=128 pair: 64 rows per CTA, column halves folded onto
    lanes 64..127), E (.ws M=64: column halves folded onto lanes 64..127), G (.ws M=32: column quarters folded
    onto the four lane quarters); an f16 accumulator takes a whole 32-bit column per element (low half);
  * A in Tensor Memory: rows on D's lanes, K packed along 32-bit columns (byte k%4 of column k//4 for 8-bit A);
  * block-scale factors (tmem_sf_frg, ScaleFactorDuplicated4by1): the factor of row mn, block b sits in lane
    mn%32 of every 32-lane quarter, column mn//32, byte b (the scale-factor id selects the byte, 0 here); it gets
    there from CUTLASS's scale-factor smem atom (row mn at byte 16*(mn%32) + 4*(mn//32 % 4) + b, 512 bytes per
    128 rows) by tcgen05.cp 32x128b.warpx4 (PTX ISA 9.7.16.10.7: "Scale factors for A and B matrices need to be
    duplicated to all 32 lane partitions of tensor memory"); under cta_group::2 every CTA holds the factors of
    its own A rows and of all N columns of B;
  * kind::f8f6f4 / mxf8f6f4 4- and 6-bit elements in shared memory: 16 elements of a 16-byte chunk packed
    contiguously from its start, the rest padding (PTX ISA 9.7.16.10.4.4 "contiguously packed along with
    padding"; CUTLASS's *_unpacksmem_t types load through TMA's 16U4_ALIGN16B / 16U6_ALIGN16B into uint8_t smem);
    mxf4 kinds pack two e2m1 per byte, no padding, lower element in the low nibble;
  * 128B swizzle with 32-byte atomicity: CUTLASS's atom is 4 K-rows of 128 bytes, as harness/spec/layouts.py reads
    it; one case per form (b_atoms 'cutlass_base32b') uses CUTLASS's packed strides, where an 8-row reading would
    differ, the others strides both readings share (base32b_strides).
What neither source settles is named per case by unsettled_reason() and carried in its record.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from harness.families.tcgen05.forms import Form, all_forms, k96_forms, variant_forms
from harness.spec import desc_tcgen05, dtypes, idesc, zero_mask

EXACT = {  # small exactly representable values of every operand type
    "tf32": np.arange(-8, 9.0), "f16": np.arange(-4, 5.0), "bf16": np.arange(-4, 5.0),
    "e4m3": np.array([0, 0.5, -0.5, 1, -1, 1.5, -1.5, 2, -2, 3, -3]),
    "e5m2": np.array([0, 0.5, -0.5, 1, -1, 1.5, -1.5, 2, -2, 3, -3]),
    "e2m3": np.array([0, 0.5, -0.5, 1, -1, 1.5, -1.5, 2, -2, 3, -3]),
    "e3m2": np.array([0, 0.5, -0.5, 1, -1, 1.5, -1.5, 2, -2, 3, -3]),
    "e2m1": np.array([0, 0.5, -0.5, 1, -1, 1.5, -1.5, 2, -2, 3, -3]),
    "s8": np.arange(-8, 9.0), "u8": np.arange(0, 17.0),
}
F8F6F4 = ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1")


def type_combos(kind: str) -> list[tuple[str, str, str]]:
    """(atype, btype, accumulator) pairings swept for a kind."""
    if kind == "tf32":
        return [("tf32", "tf32", "f32")]
    if kind == "f16":
        return [("f16", "f16", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32")]
    if kind == "f8f6f4":
        return [(a, b, "f32") for a in F8F6F4 for b in F8F6F4] + [("e4m3", "e4m3", "f16")]
    if kind == "i8":
        return [(a, b, "s32") for a in ("s8", "u8") for b in ("s8", "u8")]
    if kind == "mxf8f6f4":
        return [("e4m3", "e4m3", "f32"), ("e5m2", "e2m1", "f32"), ("e2m3", "e3m2", "f32")]
    return [("e2m1", "e2m1", "f32")]


def storage_dtype(form: Form, t: str) -> str:
    """The layout's element width: f8f6f4 sub-byte types take an 8-bit slot of the canonical layout (16 per
    16-byte chunk; within the chunk they are packed, see subbyte_bit_addresses); the mxf4 kinds pack e2m1 pairs."""
    if dtypes.get(t).bits < 8 and form.kind not in ("mxf4", "mxf4nvf4"):
        return "u8"
    return t


def type_combos_sparse(kind: str) -> list[tuple[str, str, str]]:
    """Sparse forms sweep fewer f8f6f4 pairings (the packing of each type is the dense cases' business)."""
    if kind == "f8f6f4":
        return [("e4m3", "e4m3", "f32"), ("e5m2", "e4m3", "f32"), ("e2m3", "e3m2", "f32"), ("e2m1", "e2m1", "f32"),
                ("e4m3", "e4m3", "f16")]
    return type_combos(kind)


def sparse_swept(form: Form) -> bool:
    """Sparse forms with cases: every kind, one CTA (SS, TS) or a pair. Not swept, said so in the README: .ws.sp
    (CUTLASS has no .ws sparse atom and the ISA shows the .ws metadata layouts in figures only). A block-scaled .sp
    MMA takes as many factors a row as the dense one, each over K / blocks of the logical (uncompressed) K (Table 54:
    mxf8f6f4's scale_A M x 1 'for all supported values of K'; CUTLASS's SM100_MMA_MXF4NVF4_SS_SPARSE issues .block16
    for VS = 32 and .kind::mxf4 .block32 for VS = 64, mma_sm100_umma.hpp:1429-1480)."""
    return form.sparse and not form.ws


def shapes(form: Form) -> list[tuple[int, int]]:
    legal = idesc.legal_shapes(form.kind, form.cta_group, form.ws, k96=bool(form.k96_block), sparse=form.sparse)
    if form.sparse:  # the metadata layout is known for 128 rows per CTA (CUTLASS's tmem_e_frg; the ISA: figures)
        legal = {m: ns for m, ns in legal.items() if m == 128 * form.cta_group}
    out = []
    for m, ns in sorted(legal.items()):
        if form.block_scaled and form.cta_group == 2 and m == 128:
            # legal (ISA; CUTLASS for mxf4/mxf4nvf4), but B's factors then take CUTLASS's 2x2 duplication
            # (ScaleFactorDuplicated2by2), which the kernel's one 32x128b.warpx4 copy cannot produce: not swept
            continue
        pick = [ns[0], ns[len(ns) // 2], ns[-1]] if not form.block_scaled else [n for n in (32, 128) if n in ns]
        out += [(m, n) for n in dict.fromkeys(pick)]
    return out


@dataclass(frozen=True)
class TcCase:
    form: Form
    m: int
    n: int
    atype: str
    btype: str
    dtype: str
    swizzle_a: str
    swizzle_b: str
    scale_d: int = 0
    zero_mask: zero_mask.ZeroColumnMask | None = None
    major_a: str = "K"
    major_b: str = "K"
    # 'cutlass_base32b': B (MN-major 128B_base32b) with CUTLASS's packed strides (LBO = 512 between MN atoms, SBO =
    # 512 * atoms between groups of 4 K-rows), where a 4-row and an 8-row reading of the atom differ; the other
    # 128B_base32b cases use strides both readings share (datapaths.base32b_strides)
    b_atoms: str = "layouts"
    control: str = ""  # a negative control (CONTROLS): '<name>' or '<name>@A' / '<name>@B' for a descriptor's operand
    sp_selector: int = 0  # .sp of tf32 / f16: the idesc's sparsity selector (the metadata sits that many columns on)

    def __post_init__(self):
        for op, major, sw in (("A", self.major_a, self.swizzle_a), ("B", self.major_b, self.swizzle_b)):
            if op == "B" or self.form.a_src == "SS":
                desc_tcgen05.check_operand_swizzle(self.form.kind, major, sw, op)
        if self.sp_selector and not (self.form.sparse and self.form.kind in ("tf32", "f16")):
            raise ValueError("a sparsity selector other than 0 is for the sparse tf32 / f16 forms")
        if self.form.variant == "ashift" and self.m not in (128, 256):
            raise ValueError(f".ashift with M = {self.m}: PTX ISA 9.7.16.10.9.1 'Qualifier .ashift is only allowed "
                             "with M = 128 or M = 256'")

    @property
    def k(self) -> int:
        return 96 if self.form.k96_block else idesc.mma_k(self.form.kind, self.form.sparse)

    @cached_property  # asked for every case in the plan, the engine and every record: worked out once
    def id(self) -> str:
        f = self.form
        parts = [f"m{self.m}n{self.n}k{self.k}", f"{f.kind}.{self.dtype}.{self.atype}.{self.btype}",
                 f"cg{f.cta_group}" + (".ws" if f.ws else "") + (".sp" if f.sparse else ""), f.a_src,
                 f"A:{self.major_a}/{self.swizzle_a}" if f.a_src == "SS" else "A:tmem",
                 f"B:{self.major_b}/{self.swizzle_b}"]
        if self.scale_d:
            parts.append("accum")
        if self.zero_mask is not None:
            parts.append(f"zmask{zero_mask.encode_zero_column_mask(self.zero_mask):x}")
        if f.k96_block:  # the .blockN of a K = 96 form (kind::mxf4nvf4 has two)
            parts.append(f"block{f.k96_block}")
        if self.b_atoms != "layouts":
            parts.append(f"B:{self.b_atoms}")
        if self.sp_selector:
            parts.append(f"sel{self.sp_selector}")
        if f.variant:
            parts.append(f"q:{f.variant}")
        if self.control:
            parts.append(f"neg:{self.control}")
        return "-".join(parts)

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())

    def idesc(self) -> idesc.InstrDescriptor:
        return idesc.InstrDescriptor(self.form.kind, self.atype, self.btype, self.dtype, self.m, self.n,
                                 transpose_a=self.major_a == "MN", transpose_b=self.major_b == "MN",
                                 cta_group=self.form.cta_group, ws=self.form.ws, scale_type=self.form.scale_type,
                                 sparse=self.form.sparse, sparsity_selector=self.sp_selector,
                                 k96=bool(self.form.k96_block))


def cases_for_form(form: Form) -> list[TcCase]:
    if form.sparse:
        return sparse_cases(form)
    if form.tmem_check:  # its one observation, alone in its launch
        return bug_controls(form)
    if form.variant:
        return variant_cases(form)
    if form.k96_block:
        return k96_cases(form)
    out = []
    swz = [s for s in ("none", "32B", "64B", "128B")]
    i = 0
    for m, n in shapes(form):
        for a, b, acc in type_combos(form.kind):
            sa, sb = swz[i % 4], swz[(i * 3 + 1) % 4]
            zm = None
            if form.ws and i % 2:
                zm = zero_mask.ZeroColumnMask((1, 0, 2, 0), (1, 1, 0, 0), True, 1, 1, 0)
            out.append(TcCase(form, m, n, a, b, acc, sa, sb, i % 2, zm))
            i += 1
    out += negative_controls(form) + bug_controls(form)
    if form.kind in MN_MAJOR_KINDS and not form.ws:
        # MN-major operands (the transpose bits): f16 with every swizzle; tf32 with 128B_base32b only, the one layout
        # the ISA allows an MN-major tf32 operand (desc_tcgen05.MN_MAJOR_ONLY_SWIZZLE: PTX ISA 9.7.16.10.3, CUTLASS
        # sm100_common.inl:92); the other swizzles' results are undefined, so they are not swept
        m, n = shapes(form)[-1]
        a, b, acc = type_combos(form.kind)[0]
        if form.kind == "tf32":
            pairs = ([("MN", "128B_base32b")] if form.a_src == "SS" else []) + [("K", "128B")]
            for j, (ma, sa) in enumerate(pairs):
                out.append(TcCase(form, m, n, a, b, acc, sa, "128B_base32b", j % 2, None, ma, "MN"))
            # B tiled as CUTLASS tiles it (LBO 512 between MN atoms, SBO over 4 K-rows), not the strides above
            out.append(TcCase(form, m, n, a, b, acc, "128B", "128B_base32b", 0, None, "K", "MN", "cutlass_base32b"))
        else:
            for j, sw in enumerate(("none", "32B", "64B", "128B")):
                ma = "MN" if form.a_src == "SS" and j % 2 == 0 else "K"
                out.append(TcCase(form, m, n, a, b, acc, sw if ma == "MN" else "128B", sw, j % 2, None, ma, "MN"))
    return out


def sparse_cases(form: Form) -> list[TcCase]:
    """tcgen05.mma.sp: every shape x type pairing as the dense forms (K-major A, compressed to K/2 in shared or
    Tensor Memory; the metadata drawn per case), MN-major B, and for tf32 / f16 one case with sparsity selector 1."""
    if not sparse_swept(form):
        return []
    out, i = [], 0
    swz = ("none", "32B", "64B", "128B")
    swz_b = ("none", "64B", "128B")  # B's K is 64 bytes: a K-major 32B atom (one 32-byte row) cannot hold it
    for m, n in shapes(form):
        for a, b, acc in type_combos_sparse(form.kind):
            out.append(TcCase(form, m, n, a, b, acc, swz[i % 4], swz_b[(i * 2 + 1) % 3], i % 2))
            i += 1
    m, n = shapes(form)[-1]
    a, b, acc = type_combos_sparse(form.kind)[0]
    if form.kind == "f16":  # tf32's MN-major B (128B_base32b) over K = 16 rows reads differently under CUTLASS's
        # 4-row atom and the ISA's 8-row reading (base32b_strides): left to the dense cutlass_base32b case
        out += [TcCase(form, m, n, a, b, acc, "128B", sw, j % 2, None, "K", "MN")
                for j, sw in enumerate(("none", "64B", "128B"))]
    if form.kind in ("tf32", "f16") and form.a_src == "SS" and form.cta_group == 1:
        out.append(TcCase(form, m, n, a, b, acc, "128B", "128B", 0, sp_selector=1))
    return out


# Negative controls: a descriptor deliberately disagrees with what was written. The reference predicts the misread
# (reference.py): smem-descriptor controls read the image through the wrong layout; wrong-m / wrong-n write the
# product of the smaller shape through its own data path and read it back through the case's; version-cleared
# is undefined by the ISA and likely ignored by the hardware: an observation (OBSERVATIONS), not a control.
CONTROLS = {
    "wrong-swizzle": "the smem descriptor names another swizzle mode than the image was written with",
    "swapped-lbo-sbo": "the smem descriptor's LBO and SBO swapped",
    "start+16": "the smem descriptor starts 16 bytes after the operand",
    "version-cleared": "the smem descriptor's fixed version field (bits 46-48, must be 1) cleared (an observation)",
    "wrong-m": "the instruction descriptor says M/2",
    "wrong-n": "the instruction descriptor says N/2",
}
SMEM_CONTROLS = ("wrong-swizzle", "swapped-lbo-sbo", "start+16", "version-cleared")

# Controls modelled on public bugs (each record carries `models_bug`). Their encodings are ones the ISA forbids, so
# the ISA predicts no result ('undefined'): caught is a fault, a hang (the kernel's bounded wait: status timeout), or
# any D other than the product of the operands written; a pass is never read as the hardware honouring them.
BUG_CONTROLS = {
    "n-above-256": "the instruction descriptor's N field written unmasked for N = 512: (512 >> 3) << 17 leaves N = 0 "
                   "and sets reserved bit 23",
    "m64-collision": "a block-scaled instruction descriptor with M = 64 packed as M >> 4 at bit 24 (the dense kinds' "
                     "field): M (bits 27-28) reads 0 and reserved bit 26 is set",
    "tmem-beyond-alloc": "D needs 256 Tensor Memory columns, 128 are allocated: the MMA writes, and the read-back "
                         "reads, columns beyond the allocation",
}
MODELS_BUG = {
    "version-cleared": "triton-lang/triton#8032: Triton's tcgen05 (MMAv5) shared-memory descriptors left the fixed "
                       "version bit 46 clear (the field is 0b001, so clearing bits 46-48 is exactly that)",
    "n-above-256": "triton-lang/triton#8910: Triton's MMAv5 lowering issued tcgen05.mma with N > 256, an illegal "
                   "instruction at run time",
    "m64-collision": "NVIDIA/TensorRT-LLM#19183 (review): umma_m = 64 packed as m_dim = M >> 4 at bit 24 sets bit 26, "
                     "which collides with another field (their SFA-layout bit; reserved in the ISA's Tables 43/44)",
    "tmem-beyond-alloc": "a Tensor Memory column beyond the allocation (issue 16; PTX ISA 9.7.16.7: tcgen05 accesses "
                         "must stay within the columns tcgen05.alloc returned)",
}
# Probes of encodings the ISA leaves undefined that no outcome could show wrong: they cannot fail as predicted, so
# they are observations (Status.OBSERVED), recorded with what the device did and never counted as a pass or a fail.
OBSERVATIONS = {
    "version-cleared": "the hardware likely ignores the version field: triton-lang/triton#8032's kernels ran with "
                       "bit 46 clear until the bug was found, so the intended product is no evidence of a harness "
                       "that cannot fail",
    "tmem-beyond-alloc": "NVIDIA documents no runtime check of a Tensor Memory access beyond the allocation but "
                         "ptxas's -g-tmem-access-check, and without it the access may land in another CTA's columns: "
                         "made only in a form compiled with that check (where the toolchain has it) whose CTA has its "
                         "SM to itself",
}
CONTROL_PREDICTION = {name: "observation" if name in OBSERVATIONS else "undefined"
                      for name in ("version-cleared", *BUG_CONTROLS)}  # the rest: 'exact'


def bug_controls(form: Form) -> list[TcCase]:
    """The public-bug controls other than version-cleared (planned with the smem-descriptor controls): N > 256 on
    the one-CTA f16 SS form, the M = 64 collision on the one-CTA mxf4nvf4 form (NVFP4, the bug's kernel), and the
    column beyond the allocation (an observation) alone in the TMEM-checked f16 form."""
    if form.tmem_check:
        return [TcCase(form, 128, 256, "f16", "f16", "f32", "128B", "128B", control="tmem-beyond-alloc")]
    if form.sparse or form.ws or form.cta_group != 1 or form.a_src != "SS":
        return []
    if form.kind == "f16":
        return [TcCase(form, 128, 256, "f16", "f16", "f32", "128B", "128B", control="n-above-256")]
    if form.kind == "mxf4nvf4":
        return [TcCase(form, 128, 128, "e2m1", "e2m1", "f32", "128B", "128B", control="m64-collision")]
    return []


def negative_controls(form: Form) -> list[TcCase]:
    """For the 16- and 32-bit kinds of one CTA: each control on B (and on A when A is in shared memory), on a
    K-major 128B-swizzled case of the largest M and an N the halved N is legal for."""
    if form.kind not in ("f16", "tf32") or form.cta_group != 1:
        return []
    legal = idesc.legal_shapes(form.kind, form.cta_group, form.ws)
    m = max(legal)
    n = next(n for n in (64, 128, 256) if n in legal[m] and n // 2 in legal[m]) if form.ws else 64
    a, b, acc = type_combos(form.kind)[0]
    out = []
    for name in CONTROLS:
        targets = ("B", "A") if name in SMEM_CONTROLS and form.a_src == "SS" else ("B",)
        for t in targets if name in SMEM_CONTROLS else ("",):
            if name == "wrong-m" and m // 2 not in legal:
                continue
            out.append(TcCase(form, m, n, a, b, acc, "128B", "128B", control=f"{name}@{t}" if t else name))
    return out


# Kinds whose instruction descriptor may transpose A and B (MN-major operands); the 32-byte-atom 128B swizzle
# (CUTLASS's SW128_32B) is an MN-major tf32 layout.
MN_MAJOR_KINDS = ("tf32", "f16")


def all_cases(arch: str = "sm_100a") -> list[tuple[Form, list[TcCase]]]:
    return [(f, cases_for_form(f)) for f in forms_for(arch)]


def forms_for(arch: str) -> list[Form]:
    # NVRTC 13: "Feature '.kind::i8' not supported on .target 'sm_103a'" (tests/test_tcgen05.py keeps it so); K = 96
    # is sm_103a's alone (PTX ISA 9.7.16.2.1.1; idesc.validate_idesc refuses it for sm_100a, as CUTLASS's
    # cute/arch/config.hpp defines CUTE_ARCH_TCGEN05_MXF4NVF4_MMA_ULTRA_ENABLED for SM103 only)
    return ([f for f in all_forms() if not (arch == "sm_103a" and f.kind == "i8")] + [Form("f16", tmem_check=True)]
            + variant_forms() + (k96_forms() if arch == "sm_103a" else []))


def k96_cases(form: Form) -> list[TcCase]:
    """sm_103a's K = 96 forms: the block-scaled shapes (shapes(): M = 128 with one CTA, 256 with a pair; N = 32 and
    128) of e2m1 A and B, one case accumulating, K-major (Table 49: kind::mxf4 / mxf4nvf4 never transpose; CUTLASS's
    SM103 MMA_Traits static_assert it), 48 bytes of K a row from the start of a swizzle row, in relative-offset mode,
    so in a layout that holds them (none, 64B, 128B; a 32B swizzle row holds 32 bytes and layouts.py refuses it)."""
    swz = ("none", "64B", "128B")
    return [TcCase(form, m, n, "e2m1", "e2m1", "f32", swz[i % 3], swz[(i + 1) % 3], i % 2)
            for i, (m, n) in enumerate(shapes(form))]


# qualifier forms compiled and SASS-checked without cases: none (.ashift and tcgen05.shift have models since issue 54:
# the rows the ISA leaves undefined are not checked, reference.prepare)
VARIANT_OPEN: dict[str, str] = {}


def variant_cases(form: Form) -> list[TcCase]:
    """A qualifier form's cases: one that accumulates and one that does not, at the largest and smallest legal shape
    of the kind's first type pairing (reference.py models each qualifier); .ashift at M = 128 only (PTX ISA
    9.7.16.10.9.1: M = 128 or 256) with N a multiple of 16 (CUTLASS's TS rule, so that no other reading is mixed in);
    tcgen05.shift with N > 8 at both M (its 8 columns of 32 bytes then end inside D)."""
    if form.variant in VARIANT_OPEN:
        return []
    a, b, acc = type_combos(form.kind)[0]
    sh = shapes(form)
    if form.variant == "ashift":
        sh = [(128, 16), (128, 256)]
    elif form.variant == "shift_down":
        sh = [(64, 16), (128, 256)]
    return [TcCase(form, m, n, a, b, acc, "128B", "64B", scale_d) for scale_d, (m, n) in ((1, sh[-1]), (0, sh[0]))]


# ---------------------------------------------------------------------------------------------------- unsettled

def unsettled_reason(c: TcCase) -> str | None:
    """Why a case's expected result rests on a reading neither NVIDIA's code nor the PTX ISA text decides (None
    when both fix every layout it uses). A Blackwell run of the case settles it; its record carries the reason."""
    f = c.form
    if f.variant in ("sid", "dol_sid"):
        return ("scale-input-d: modelled as the ISA's operand description, D = A*B + D * 2^-scale-input-d "
                "(kind::f16 / tf32, immediate 0..15); CUTLASS passes the immediate through "
                "(SM100_MMA_F16BF16_SS_SCALED, mma_sm100_umma.hpp:214-249) with no host model of its arithmetic")
    if f.variant in ("ca_fill_lastuse", "ca_fill_use_lastuse") and f.a_src == "SS":
        return ("collector::a::use / lastuse naming A's descriptor 16 bytes on: modelled as A from the collector "
                "(D = A*B per MMA); but PTX ISA 9.7.16.10 says reuse 'is opportunistic in that the TensorCore may "
                "reload a matrix even when it has permission to reuse that matrix', and a reload reads the "
                "descriptor's (A 16 bytes on). The TS sequences name the same A, which either way gives the model's D")
    if f.variant == "dol":
        return ("disable-output-lane: one bit a Tensor Memory lane, a masked lane's D untouched; the bit order (bit "
                "l % 32 of word l / 32, a pair's CTA c in words 4c..4c+3) is the model's reading: the ISA names "
                "the mask per lane, CUTLASS only ever passes zeros")
    if c.sp_selector:
        return ("sparsity selector 1: the ISA says the selector 'selects the sub-columns' of the metadata and shows "
                "which only in figures 263 / 265; CUTLASS passes the metadata column's low bit as the selector and "
                "clears it from the address (mma_traits_sm100.hpp:1585-1588). Modelled: CUTLASS's (metadata one "
                "column after the 4-aligned address the instruction takes)")
    if f.sparse and f.a_src == "TS":
        return ("sparse A in Tensor Memory: the ISA allows [a-tmem] with .sp but shows no layout of the compressed A; "
                "CUTLASS has no sparse TS atom. Modelled: the K/2 stored elements of a row where dense A's K would "
                "sit (rows on D's lanes, packed along 32-bit columns)")
    if f.a_src == "TS" and c.m == 128 and c.n % 16:
        return ("A in Tensor Memory with M = 128 and N not a multiple of 16: the ISA's shape table has no rule of its "
                "own for A in Tensor Memory (N steps of 8 are legal), CUTLASS's TS atoms static_assert N % 16 == 0 "
                "(mma_sm100_umma.hpp). Modelled: the ISA's")
    if f.kind == "i8" and f.cta_group == 1 and c.n == 24:
        return ("kind::i8 N = 24: the ISA lists N = 8, 16, 24, 32, then steps of 16; CUTLASS's S8 atom requires "
                "N == 8 or N % 16 == 0. Modelled: the ISA's")
    if f.block_scaled and f.cta_group == 2:
        return ("tcgen05.cp.cta_group::2 of the scale factors: the ISA says the data 'is copied into the Tensor "
                "Memory of both the current and the peer CTAs' but not whose shared memory each CTA's copy reads; "
                "CUTLASS loads each CTA's own A-row factors and all of B's into each CTA's shared memory and has "
                "the leader issue one cta_group::2 copy, which implies each CTA's own. Modelled: each CTA's own")
    return None


