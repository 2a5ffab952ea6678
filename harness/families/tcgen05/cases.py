"""tcgen05 cases and their reference, from the spec: shared-memory images, Tensor Memory images, expected D.

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
  * 128B swizzle with 32-byte atomicity: CUTLASS's atom is 4 K-rows of 128 bytes; the cases choose strides that
    read the same under that and under harness/spec/layouts.py's 8-row reading (see base32b_strides).
What neither source settles is named per case by unsettled_reason() and carried in its record.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from harness.spec import descriptors as D, dtypes, layouts
from harness.spec.layouts import SmemLayout
from harness.families.tcgen05.forms import Form, all_forms

POISON = 0x7FFF7FFF
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


def shapes(form: Form) -> list[tuple[int, int]]:
    legal = D.legal_shapes(form.kind, form.cta_group, form.ws)
    out = []
    for m, ns in sorted(legal.items()):
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
    zero_mask: D.ZeroColumnMask | None = None
    major_a: str = "K"
    major_b: str = "K"
    # 'cutlass_base32b': B (MN-major 128B_base32b) tiled as CUTLASS's Layout_MN_SW128_32B_Atom (4 K-rows per atom,
    # LBO = 512 between MN atoms, SBO = 512 * atoms between K-row groups), which harness/spec/layouts.py cannot express
    b_atoms: str = "layouts"

    @property
    def k(self) -> int:
        return D.KIND_K[self.form.kind]

    @property
    def id(self) -> str:
        f = self.form
        parts = [f"m{self.m}n{self.n}k{self.k}", f"{f.kind}.{self.dtype}.{self.atype}.{self.btype}",
                 f"cg{f.cta_group}" + (".ws" if f.ws else ""), f.a_src,
                 f"A:{self.major_a}/{self.swizzle_a}" if f.a_src == "SS" else "A:tmem",
                 f"B:{self.major_b}/{self.swizzle_b}"]
        if self.scale_d:
            parts.append("accum")
        if self.zero_mask is not None:
            parts.append(f"zmask{D.encode_zero_column_mask(self.zero_mask):x}")
        if self.b_atoms != "layouts":
            parts.append(f"B:{self.b_atoms}")
        return "-".join(parts)

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())

    def idesc(self) -> D.InstrDescriptor:
        scale = "ue4m3" if self.form.kind == "mxf4nvf4" else "ue8m0"
        return D.InstrDescriptor(self.form.kind, self.atype, self.btype, self.dtype, self.m, self.n,
                                 transpose_a=self.major_a == "MN", transpose_b=self.major_b == "MN",
                                 cta_group=self.form.cta_group, ws=self.form.ws, scale_type=scale)


def cases_for_form(form: Form) -> list[TcCase]:
    out = []
    swz = [s for s in ("none", "32B", "64B", "128B")]
    i = 0
    for m, n in shapes(form):
        for a, b, acc in type_combos(form.kind):
            sa, sb = swz[i % 4], swz[(i * 3 + 1) % 4]
            zm = None
            if form.ws and i % 2:
                zm = D.ZeroColumnMask((1, 0, 2, 0), (1, 1, 0, 0), True, 1, 1, 0)
            out.append(TcCase(form, m, n, a, b, acc, sa, sb, i % 2, zm))
            i += 1
    if form.kind in MN_MAJOR_KINDS and not form.ws:
        # MN-major operands (the transpose bits), every swizzle, 128B_base32b where the type allows it
        m, n = shapes(form)[-1]
        a, b, acc = type_combos(form.kind)[0]
        mn_swz = ("none", "32B", "64B", "128B") + (("128B_base32b",) if form.kind == "tf32" else ())
        for j, sw in enumerate(mn_swz):
            ma = "MN" if form.a_src == "SS" and j % 2 == 0 else "K"
            out.append(TcCase(form, m, n, a, b, acc, sw if ma == "MN" else "128B", sw, j % 2, None, ma, "MN"))
        if form.kind == "tf32":  # one case that tells the two readings of 128B_base32b apart (see unsettled_reason)
            out.append(TcCase(form, m, n, a, b, acc, "128B", "128B_base32b", 0, None, "K", "MN", "cutlass_base32b"))
    return out


# Kinds whose instruction descriptor may transpose A and B (MN-major operands); the 32-byte-atom 128B swizzle
# (CUTLASS's SW128_32B) is an MN-major tf32 layout.
MN_MAJOR_KINDS = ("tf32", "f16")


def all_cases(arch: str = "sm_100a") -> list[tuple[Form, list[TcCase]]]:
    return [(f, cases_for_form(f)) for f in forms_for(arch)]


def forms_for(arch: str) -> list[Form]:
    # NVRTC 13: "Feature '.kind::i8' not supported on .target 'sm_103a'" (tests/test_tcgen05.py keeps it so)
    return [f for f in all_forms() if not (arch == "sm_103a" and f.kind == "i8")]


# ---------------------------------------------------------------------------------------------------- data paths

def d_position(m: int, n: int, cta_group: int, ws: bool, dtype: str):
    """(cta, lane, column, half) arrays [m, n] of D[row, col] in Tensor Memory; half is the 16-bit half of
    the 32-bit cell that holds the value (always the low one: an f16 accumulator still takes a whole column)."""
    r = np.arange(m)[:, None] + 0 * np.arange(n)[None, :]
    c = np.arange(n)[None, :] + 0 * r
    cta = np.zeros_like(r)
    if cta_group == 2 and m == 256:  # A: 128 rows per CTA
        cta, lane, col = r // 128, r % 128, c
    elif cta_group == 2:  # B: 64 rows per CTA, column halves folded onto lanes 64..127
        cta, lane, col = r // 64, r % 64 + 64 * (c // (n // 2)), c % (n // 2)
    elif ws and m == 64:  # E
        lane, col = r + 64 * (c // (n // 2)), c % (n // 2)
    elif ws and m == 32:  # G
        lane, col = r + 32 * (c // (n // 4)), c % (n // 4)
    elif m == 64:  # F: 16 rows in each warp's lane quarter
        lane, col = 32 * (r // 16) + r % 16, c
    else:  # D: identity
        lane, col = r, c
    return cta, lane, col, np.zeros_like(col)


def a_lane(m: int, row):
    """TMEM lane of row `row` of an A operand in Tensor Memory (the rows follow D's data path)."""
    row = np.asarray(row)
    return 32 * (row // 16) + row % 16 if m == 64 else row


# ---------------------------------------------------------------------------------------------------- scale factors

SF_ROWS_PER_COPY = 128  # one tcgen05.cp 32x128b.warpx4 moves 32 smem rows of 16 bytes = 128 rows' factors


def sf_smem_offset(mn, block):
    """Byte offset in the scale-factor tile of the factor of row (A) / column (B) `mn`, K block `block` (0..3):
    CUTLASS's Sm1xxBlockScaledBasicChunk::SfKMajorAtom ((32,4),(SFVec,4)):((16,4),(0,1)), 512 bytes per 128 rows."""
    mn, block = np.asarray(mn), np.asarray(block)
    return 512 * (mn // 128) + 16 * (mn % 32) + 4 * ((mn // 32) % 4) + block


def sf_tmem_position(mn, block, mode: str = "4x1", mn_extent: int = 128):
    """(lanes [..., replicas], column, byte) in Tensor Memory of the factor of row/column `mn`, block `block`
    (relative to the scale-factor address, scale-factor id 0). '4x1' (every cta_group::1 MMA, M=256 pairs, and
    A of every pair): lane mn%32 of each 32-lane quarter, column mn//32, byte = block. '2x2' (B of an M=128 pair,
    CUTLASS's ScaleFactorDuplicated2by2, mn_extent = N rounded up to 128): the first half of N on lane quarters
    0,1, the second on 2,3."""
    mn, block = np.asarray(mn), np.asarray(block)
    if mode == "4x1":
        lanes = (mn % 32)[..., None] + 32 * np.arange(4)
        return lanes, mn // 32, block
    half, j = mn // (mn_extent // 2), mn % (mn_extent // 2)
    lanes = (j % 32 + 64 * half)[..., None] + 32 * np.arange(2)
    return lanes, j // 32, block


def scale_codes_to_values(kind: str, codes) -> np.ndarray:
    """Scale-factor codes -> scale values: ue8m0 is 2^(code-127) with 0xFF NaN (OCP MX; ml_dtypes'
    float8_e8m0fnu), ue4m3 is e4m3 with the sign bit clear (mxf4nvf4)."""
    codes = np.asarray(codes, np.uint64)
    if kind == "mxf4nvf4":
        if np.any(codes & 0x80):
            raise ValueError("ue4m3 scale factors have no sign bit")
        return dtypes.get("ue4m3").from_bits(codes)
    return dtypes.get("ue8m0").from_bits(codes)


# ---------------------------------------------------------------------------------------------------- sub-byte operands

def subbyte_bit_addresses(lay: SmemLayout, bits: int) -> np.ndarray:
    """Bit address of each element of an f8f6f4 4/6-bit operand laid out in 8-bit slots (`lay`, dtype u8): the 16
    elements whose slots share a 16-byte chunk are packed from the chunk's start, `bits` apart, little-endian (the
    ISA's b4x16_p64 / b6x16_p32 shapes: 16 x 4 bits + 64 padding, 16 x 6 bits + 32 padding)."""
    byte = layouts.smem_address(lay)
    return (byte & ~15) * 8 + (byte & 15) * bits


def write_bits_anywhere(image: np.ndarray, bit_addr, values, bits: int) -> None:
    """OR `bits`-wide values into a uint8 image at bit addresses that may straddle bytes (6-bit elements do)."""
    bit_addr = np.asarray(bit_addr, np.int64).ravel()
    v = np.asarray(values, np.uint64).ravel()
    for b in range(bits):
        pos = bit_addr + b
        one = ((v >> np.uint64(b)) & np.uint64(1)).astype(np.uint8)
        np.bitwise_or.at(image, pos >> 3, (one << (pos & 7)).astype(np.uint8))


def read_bits_anywhere(image: np.ndarray, bit_addr, bits: int) -> np.ndarray:
    bit_addr = np.asarray(bit_addr, np.int64)
    out = np.zeros(bit_addr.shape, np.uint64)
    for b in range(bits):
        pos = bit_addr + b
        out |= ((image[pos >> 3] >> (pos & 7)) & 1).astype(np.uint64) << np.uint64(b)
    return out


def _write_operand(form: Form, t: str, lay: SmemLayout, bits_: np.ndarray, img: np.ndarray) -> None:
    width = dtypes.get(t).bits
    if lay.dtype == "u8" and width < 8:
        layouts.check_distinct(lay)
        write_bits_anywhere(img, subbyte_bit_addresses(lay, width), bits_, width)
    else:
        layouts.write_image(lay, bits_, img)


# ---------------------------------------------------------------------------------------------------- unsettled

def unsettled_reason(c: TcCase) -> str | None:
    """Why a case's expected result rests on a reading neither NVIDIA's code nor the PTX ISA text decides (None
    when both fix every layout it uses). A Blackwell run of the case settles it; its record carries the reason."""
    f = c.form
    if c.b_atoms == "cutlass_base32b":
        return ("128B_base32b with CUTLASS's strides: CUTLASS's atom is 4 K-rows of 128 bytes and SBO steps over "
                "4 K-rows (Layout_MN_SW128_32B_Atom, make_umma_desc<Major::MN>); the ISA's canonical-layout table "
                "has no 128B_base32b row and defines SBO of swizzled MN-major layouts 'from the first 8 columns to "
                "the next 8 columns' (harness/spec/layouts.py's reading). Modelled: CUTLASS's")
    if f.a_src == "TS" and f.kind == "f8f6f4" and dtypes.get(c.atype).bits < 8:
        return ("A in Tensor Memory, 4/6-bit type: the ISA says one element per 8-bit container (4 per 32-bit "
                "word) but shows where in the byte only in Figures 199-201 (no text); CUTLASS's tmem_frg would "
                "pack 4/6-bit A densely. Modelled: value in the low bits of its byte")
    if f.block_scaled and f.cta_group == 2:
        return ("tcgen05.cp.cta_group::2 of the scale factors: the ISA says the data 'is copied into the Tensor "
                "Memory of both the current and the peer CTAs' but not whose shared memory each CTA's copy reads; "
                "CUTLASS loads each CTA's own A-row factors and all of B's into each CTA's shared memory and has "
                "the leader issue one cta_group::2 copy, which implies each CTA's own. Modelled: each CTA's own")
    return None


def d_columns(c: TcCase) -> int:
    _, _, col, _ = d_position(c.m, c.n, c.form.cta_group, c.form.ws, c.dtype)
    return int(col.max()) + 1


# ---------------------------------------------------------------------------------------------------- reference

@dataclass
class TcPrepared:
    case: TcCase
    images: list[np.ndarray]  # per CTA, uint8
    params: list[dict]  # per CTA
    tmem_in: np.ndarray  # [ctas, 128, read_cols] uint32 (C, A-in-TMEM)
    expected: np.ndarray  # [m, n] exact
    read_cols: int
    operands: dict | None = None  # 'a', 'b' (values [m, k], [n, k]), 'sfa', 'sfb' (scale codes [m|n, blocks])


def _draw(rng, t: str, shape):
    return rng.choice(EXACT[t], size=shape)


def _bits(t: str, v):
    return dtypes.get(t).to_bits(v)


def _acc_bits(dtype: str, v):
    if dtype == "s32":
        return (np.asarray(v, np.int64) & 0xFFFFFFFF).astype(np.uint64)
    return dtypes.get(dtype).to_bits(v)


def base32b_strides(dtype: str, rows: int, cols: int) -> tuple[int, int]:
    """(LBO, SBO) for an MN-major 128B_base32b tile that reads the same under both readings of the descriptor:
    CUTLASS's (Layout_MN_SW128_32B_Atom: 4 K-rows of 128 bytes per atom, SBO steps over 4 K-rows, LBO over
    128-byte MN atoms) and harness/spec/layouts.py's (8 K-rows per atom, SBO steps over 8). With at most 8 K-rows
    (tf32: K=8 per MMA) and SBO = 4 rows * 128 bytes, K-row r of MN atom i lands at i*LBO + 128*r in both."""
    if cols > 8:
        raise layouts.LayoutError("base32b_strides: more than 8 K-rows would read differently under the two readings")
    return 1024, 512  # one 1024-byte block (8 K-rows) per 128-byte MN atom; SBO = 4 K-rows


def base32b_cutlass_bytes(mn, k, lbo: int, sbo: int, start: int = 0, elem_bytes: int = 4):
    """Byte address of element (mn, k) of an MN-major SWIZZLE_128B_BASE32B tile as CUTLASS reads the descriptor
    (make_umma_desc<Major::MN>, Layout_MN_SW128_32B_Atom): 16-byte chunks ((8,n),(4,k)) : ((1,LBO),(8,SBO)), i.e.
    8 chunks of MN per 128-byte row, 4 K-rows per atom, LBO between MN atoms, SBO between groups of 4 K-rows;
    then Swizzle<2,5,2> on the byte address (32-byte units XORed by address bits 7-8). `start` 512-aligned."""
    per = 16 // elem_bytes
    mn, k = np.asarray(mn), np.asarray(k)
    chunk, elem = mn // per, mn % per
    byte = start + (chunk % 8) * 16 + (chunk // 8) * lbo + (k % 4) * 128 + (k // 4) * sbo
    return (byte ^ (((byte >> 7) & 3) << 5)) + elem * elem_bytes


def _operand_layout(form, t, rows, k, major, swizzle, start) -> SmemLayout:
    st = storage_dtype(form, t)
    if swizzle == "128B_base32b":
        lbo, sbo = base32b_strides(st, rows, k)
    else:
        lbo, sbo = layouts.packed_strides(major, swizzle, st, rows, k)
    lay = SmemLayout(major, swizzle, st, rows, k, lbo, sbo, start)
    layouts.validate(lay)
    return lay


def _desc(lay: SmemLayout, arch: str) -> int:
    return D.encode_tcgen05_smem_desc(lay.start, lay.lbo, lay.sbo, lay.swizzle, 0, "relative", arch)


def prepare(c: TcCase, arch: str = "sm_100a") -> TcPrepared:
    f, cg = c.form, c.form.cta_group
    rng = np.random.default_rng(c.seed)
    M, N, K = c.m, c.n, c.k
    a = _draw(rng, c.atype, (M, K))
    b = _draw(rng, c.btype, (N, K))
    cm = rng.integers(-8, 9, size=(M, N)).astype(np.float64)
    b_eff = b.copy()
    if c.zero_mask is not None:
        zero = np.array(D.zero_column_mask_bits(c.zero_mask, M, N), bool)
        b_eff[zero, :] = 0
    sfa = sfb = None
    if f.block_scaled:
        if N > SF_ROWS_PER_COPY or M // cg > SF_ROWS_PER_COPY:
            raise ValueError(f"{c.id}: the kernel copies one 128-row block of scale factors per operand")
        if cg == 2 and M == 128:
            raise ValueError(f"{c.id}: B's factors of an M=128 pair take CUTLASS's 2x2 layout (sf_tmem_position "
                             "'2x2'), which one 32x128b.warpx4 copy cannot produce; not modelled in prepare")
        blocks = {"mxf8f6f4": 1, "mxf4": 2, "mxf4nvf4": 4}[f.kind]
        sfa = rng.integers(126, 129, size=(M, blocks))  # ue8m0 exponents: scales 0.5, 1, 2
        sfb = rng.integers(126, 129, size=(N, blocks))
        if f.kind == "mxf4nvf4":  # ue4m3 codes of 0.5, 1, 2
            sfa = rng.choice([0x30, 0x38, 0x40], size=(M, blocks))
            sfb = rng.choice([0x30, 0x38, 0x40], size=(N, blocks))
        bk = K // blocks
        a_s = a * np.repeat(scale_codes_to_values(f.kind, sfa), bk, axis=1)
        b_s = b_eff * np.repeat(scale_codes_to_values(f.kind, sfb), bk, axis=1)
        prod = a_s @ b_s.T
    else:
        prod = a @ b_eff.T
    expected = prod + (cm if c.scale_d else 0)
    if c.dtype != "s32":
        t = dtypes.get(c.dtype)
        assert np.array_equal(t.from_bits(t.to_bits(expected)), expected), f"{c.id}: reference is not exact"

    # TMEM columns: D, then A (TS), then the two scale-factor groups (4 columns each)
    dcols = d_columns(c)
    col = -(-dcols // 8) * 8
    a_col = a_cols = 0
    if f.a_src == "TS":
        abits = dtypes.get(storage_dtype(f, c.atype)).bits
        a_col, a_cols = col, -(-(K * abits // 32) // 8) * 8
        col += a_cols
    sf_a = sf_b = 0
    if f.block_scaled:
        sf_a, sf_b = col, col + 8
        col += 16
    read_cols = max(8, col)
    alloc = max(32, 1 << (read_cols - 1).bit_length())
    ctas = cg
    tmem_in = np.zeros((ctas, 128, read_cols), np.uint32)
    cta, lane, dcol, half = d_position(M, N, cg, f.ws, c.dtype)
    if c.scale_d:
        bits = _acc_bits(c.dtype, cm)
        if c.dtype == "f16":
            np.bitwise_or.at(tmem_in, (cta, lane, dcol), (bits << (16 * half).astype(np.uint64)).astype(np.uint32))
        else:
            tmem_in[cta, lane, dcol] = bits.astype(np.uint32)

    images, params = [], []
    rows_a, cols_b = M // cg, N // cg
    for r in range(ctas):
        a_part, b_part = a[r * rows_a:(r + 1) * rows_a], b[r * cols_b:(r + 1) * cols_b]
        a_lay = _operand_layout(f, c.atype, rows_a, K, c.major_a, c.swizzle_a, 0)
        b_start = -(-layouts.footprint(a_lay)[1] // 1024) * 1024
        b_lay = _operand_layout(f, c.btype, cols_b, K, c.major_b, c.swizzle_b, b_start)
        end = layouts.footprint(b_lay)[1]
        if c.b_atoms == "cutlass_base32b":
            b_lbo, b_sbo = 512, 512 * -(-cols_b // 32)
            mn_, k_ = np.meshgrid(np.arange(cols_b), np.arange(K), indexing="ij")
            b_bytes = base32b_cutlass_bytes(mn_, k_, b_lbo, b_sbo, b_start)
            end = int(b_bytes.max()) + 4
        sf_start = -(-end // 1024) * 1024
        size = sf_start + (2 * 1024 if f.block_scaled else 0)  # A's factors, then B's, 512 bytes per 128 rows
        img = np.zeros(-(-size // 16) * 16, np.uint8)
        if f.a_src == "SS":
            _write_operand(f, c.atype, a_lay, _bits(c.atype, a_part), img)
        else:  # A in TMEM: row -> lane (this CTA's rows), K packed along 32-bit columns
            _write_tmem_rows(tmem_in[r], a_col, _bits(c.atype, a_part), dtypes.get(storage_dtype(f, c.atype)).bits,
                             a_lane(M, np.arange(rows_a)))
        if c.b_atoms == "cutlass_base32b":
            layouts.write_bits(img, b_bytes * 8, _bits(c.btype, b_part), 32)
            desc_b = D.encode_tcgen05_smem_desc(b_start, b_lbo, b_sbo, "128B_base32b", 0, "relative", arch)
        else:
            _write_operand(f, c.btype, b_lay, _bits(c.btype, b_part), img)
            desc_b = _desc(b_lay, arch)
        p = {"desc_a": _desc(a_lay, arch) if f.a_src == "SS" else 0, "desc_b": desc_b,
             "idesc": D.encode_idesc(c.idesc()), "alloc_cols": alloc, "read_cols": read_cols,
             "enable_input_d": c.scale_d, "a_tmem_col": a_col, "a_tmem_cols": a_cols,
             "zero_mask": D.encode_zero_column_mask(c.zero_mask) if c.zero_mask else 0,
             "sf_col_a": sf_a, "sf_col_b": sf_b, "sf_desc_a": 0, "sf_desc_b": 0}
        if f.block_scaled:
            # CUTLASS's scale-factor atom (sf_smem_offset): 32 rows of 16 bytes per 128 rows/columns, which
            # tcgen05.cp 32x128b.warpx4 puts in every lane quarter (sf_tmem_position). Each CTA holds its own A
            # rows' factors and the factors of all N columns of B (CUTLASS's TiledMMA_SF: a 1-CTA MMA over N).
            for which, sf, start in (("a", sfa[r * rows_a:(r + 1) * rows_a], sf_start),
                                     ("b", sfb, sf_start + 1024)):
                mn, blk = np.meshgrid(np.arange(sf.shape[0]), np.arange(sf.shape[1]), indexing="ij")
                img[start + sf_smem_offset(mn, blk)] = sf.astype(np.uint8)
                # K-major, no swizzle: 8-row core matrices of 16-byte rows, 128 bytes apart (SBO)
                p[f"sf_desc_{which}"] = D.encode_tcgen05_smem_desc(start, 16, 128, "none", 0, "relative", arch)
        images.append(img)
        params.append(p)
    return TcPrepared(c, images, params, tmem_in, expected, read_cols, {"a": a, "b": b, "sfa": sfa, "sfb": sfb})


def _write_tmem_rows(tm: np.ndarray, col0: int, bits: np.ndarray, width: int, lanes) -> None:
    per = 32 // width
    for j in range(bits.shape[1]):
        tm[lanes, col0 + j // per] |= (bits[:, j].astype(np.uint64) << np.uint64((j % per) * width)).astype(np.uint32)


# ---------------------------------------------------------------------------------------------------- diff

def decode(c: TcCase, tmem_out: np.ndarray) -> np.ndarray:
    """Raw TMEM cells [ctas, 128, read_cols] -> D values [m, n] through the data-path model."""
    cta, lane, col, half = d_position(c.m, c.n, c.form.cta_group, c.form.ws, c.dtype)
    cells = np.asarray(tmem_out, np.uint64)[cta, lane, col]
    if c.dtype == "f16":
        return dtypes.get("f16").from_bits((cells >> (16 * half).astype(np.uint64)) & np.uint64(0xFFFF))
    if c.dtype == "s32":
        s = cells.astype(np.int64)
        return np.where(s >= 1 << 31, s - (1 << 32), s)
    return dtypes.get("f32").from_bits(cells)


def diff(prep: TcPrepared, tmem_out: np.ndarray, status) -> dict:
    c = prep.case
    rec = {"id": c.id, "kernel": c.form.name, "family": "tcgen05"}
    why = unsettled_reason(c)
    if why:
        rec["unsettled"] = why
    if int(np.max(status)):
        return {**rec, "status": "timeout", "error": "the MMA's mbarrier never completed within the spin limit"}
    got = decode(c, tmem_out)
    bad = ~(got == prep.expected)
    n = int(bad.sum())
    rec.update({"status": "pass" if n == 0 else "fail", "mismatches": n})
    if n:
        cta, lane, col, _ = d_position(c.m, c.n, c.form.cta_group, c.form.ws, c.dtype)
        rows, cols = np.nonzero(bad)
        rec["first_mismatches"] = [{"row": int(r), "col": int(k), "cta": int(cta[r, k]), "lane": int(lane[r, k]),
                                    "tmem_column": int(col[r, k]), "expected": float(prep.expected[r, k]),
                                    "got": float(got[r, k])} for r, k in list(zip(rows, cols))[:8]]
    return rec
