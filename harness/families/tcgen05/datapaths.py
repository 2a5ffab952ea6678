"""Where tcgen05 data sits: D, A and the block-scale factors in Tensor Memory, scale factors and sub-byte operands
in shared memory, the 128B_base32b strides. Each function is diffed against CUTLASS's C++ CuTe layouts
(tests/test_tcgen05_layouts_vs_cutlass.py); cases.py's docstring lists what NVIDIA's code fixes."""
from __future__ import annotations

import numpy as np

from harness.spec import dtypes, layouts
from harness.spec.layouts import SmemLayout

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


def decode_d(c, tmem_out: np.ndarray) -> np.ndarray:
    """Raw TMEM cells [ctas, 128, read_cols] -> D values [m, n] of case `c` (a cases.TcCase) through the data-path
    model (d_position)."""
    cta, lane, col, half = d_position(c.m, c.n, c.form.cta_group, c.form.ws, c.dtype)
    cells = np.asarray(tmem_out, np.uint64)[cta, lane, col]
    if c.dtype == "s32":
        s = cells.astype(np.int64)
        return np.where(s >= 1 << 31, s - (1 << 32), s)
    with np.errstate(invalid="ignore"):  # the Tensor Memory poison (a NaN) of a D cell the MMA did not write
        if c.dtype == "f16":
            return dtypes.get("f16").from_bits((cells >> (16 * half).astype(np.uint64)) & np.uint64(0xFFFF))
        return dtypes.get("f32").from_bits(cells)


# tcgen05.shift (PTX ISA 9.7.16.9.3): 'the shifting of 32-byte elements downwards across all the rows, except the last,
# by one row' of the matrix at taddr, whose lane 'must be aligned to 32'; its shape is .31x256b (9.7.16.2.3): 31 rows of
# 256 bits. So lanes l0+1 .. l0+31 of the 8 columns at taddr take what lanes l0 .. l0+30 held, and what lane l0 then
# holds is not stated. It runs after an MMA the same thread issued before it (9.7.16.6: 'tcgen05.mma.cta_group::N ->
# tcgen05.shift.cta_group::N' is a pipelined pair).
SHIFT_LANES, SHIFT_COLUMNS = 32, 8


def shifted_down(m: int, n: int, cta_group: int, ws: bool, dtype: str, lane0: int = 0, col0: int = 0):
    """(source [m, n]: the flat index of the D element whose value a tcgen05.shift.down at (lane0, col0) leaves in each
    element, its own index where the shift does not reach; undefined [m, n]: the elements on lane lane0 it reaches,
    which the ISA leaves undefined). A shifted cell that held no element of D is refused (no case needs it)."""
    cta, lane, col, _ = d_position(m, n, cta_group, ws, dtype)
    at = {cell: i for i, cell in enumerate(zip(cta.ravel().tolist(), lane.ravel().tolist(), col.ravel().tolist()))}
    inside = (lane >= lane0) & (lane < lane0 + SHIFT_LANES) & (col >= col0) & (col < col0 + SHIFT_COLUMNS)
    undefined = inside & (lane == lane0)
    source = np.arange(m * n).reshape(m, n)
    for i in np.flatnonzero(inside & ~undefined):
        above = (int(cta.flat[i]), int(lane.flat[i]) - 1, int(col.flat[i]))
        if above not in at:
            raise ValueError(f"the shift moves Tensor Memory cell {above}, which holds no element of D, into D")
        source.flat[i] = at[above]
    return source, undefined


def a_lane(m: int, row):
    """TMEM lane of row `row` of an A operand in Tensor Memory (the rows follow D's data path)."""
    row = np.asarray(row)
    return 32 * (row // 16) + row % 16 if m == 64 else row


# Where a 4/6-bit A element of kind::f8f6f4 sits in its 8-bit Tensor Memory container (A from Tensor Memory holds one
# element per byte, four per 32-bit column). e2m1: bits 5-2, "the central 4 bits of the 8-bit container" (PTX ISA,
# tcgen05.mma / mma kind::f8f6f4 operand text), as CUTLASS feeds its f8f6f4 MMAs (cute/atom/mma_traits_sm120.hpp:
# 212-226, fp4_shift_A: "MMA F8F6F4 expects the four-bit data to be in the middle of the eight-bit container ...
# 0b0000ABCD --> 0b00ABCD00"; tests/oracles/cutlass_fp4_shift.cpp runs it) and a public GB300 tcgen05.cp probe found.
# e2m3 / e3m2: bits 5-0 ("Same transformation is NOT needed for FP6 and FP8", the same CUTLASS comment).
CONTAINER_SHIFT = {"e2m1": 2}


def tmem_a_container(atype: str, bits):
    """A's raw `bits` (one element each) as the 8-bit Tensor Memory containers the MMA reads."""
    return np.asarray(bits, np.uint64) << np.uint64(CONTAINER_SHIFT.get(atype, 0))


# ---------------------------------------------------------------------------------------------------- sparse metadata

# tcgen05.mma.sp (PTX ISA 9.7.16.10.8): every chunk of A's row (2 elements for tf32 1:2, 4 for the 2:4 kinds, 8 for
# mxf4's pairwise 4:8) has one 4-bit metadata nibble, two 2-bit indices idx0 | idx1 << 2 of the non-zero units (16-bit
# halves for tf32, elements, element pairs for mxf4) in the chunk; A's compressed row holds the units in that order.
SPARSE_CHUNK = {"tf32": 2, "f16": 4, "f8f6f4": 4, "i8": 4, "mxf8f6f4": 4, "mxf4": 8, "mxf4nvf4": 8}
SPARSE_UNITS = {"tf32": 2, "f16": 1, "f8f6f4": 1, "i8": 1, "mxf8f6f4": 1, "mxf4": 2, "mxf4nvf4": 2}  # elements/unit
# the nibbles whose two indices differ and ascend (the ISA's meaningful values but 0b0110, which descends)
SPARSE_NIBBLES = (0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b1110)
TF32_NIBBLES = (0b0100, 0b1110)  # tf32: the element in the first or the second 16-bit-half pair


def meta_chunks(kind: str, k: int) -> int:
    return k // SPARSE_CHUNK[kind]


def meta_position(kind: str, rows: int = 128):
    """(lane, column, bit) arrays [rows, chunks] of the metadata nibble of row r, chunk c of one MMA (relative to
    the metadata address, selector 0), for the 128 rows a CTA holds (M = 128, each CTA of an M = 256 pair, .ws
    M = 128): CUTLASS's tmem_e_frg (mma_traits_sm100.hpp:593-668). The 32-bit-per-row kinds (tf32, f16: 8 chunks)
    fill one column: rows r and r + 8 share a lane's word (low and high 16 bits), chunks 4-7 sit 8 lanes below
    chunks 0-3; the 64-bit-per-row kinds (8-bit, 4-bit: 16 chunks) put row r on lane r, chunks 0-7 in the first
    column, 8-15 in the next."""
    if rows != 128:
        raise ValueError("the metadata layout is known (CUTLASS's tmem_e_frg) for 128 rows per CTA only")
    from harness.spec.idesc import mma_k
    r = np.arange(rows)[:, None]
    c = np.arange(meta_chunks(kind, mma_k(kind, True)))[None, :]
    if kind in ("tf32", "f16"):
        lane = r % 8 + 8 * (c // 4) + 16 * (r // 16)
        return lane, 0 * lane, 4 * (c % 4) + 16 * ((r // 8) % 2) + 0 * c
    lane = r + 0 * c
    return lane, c // 8 + 0 * r, 4 * (c % 8) + 0 * r


def meta_columns(kind: str) -> int:
    """32-bit TMEM columns one MMA's metadata takes."""
    return 1 if kind in ("tf32", "f16") else 2


def decompress(kind: str, compressed: np.ndarray, nibbles: np.ndarray) -> np.ndarray:
    """A [rows, K] from its compressed rows [rows, K/2] and their nibbles [rows, chunks]: unit i of a chunk's
    compressed half goes to unit idx_i of the chunk, every other unit is zero. tf32 (1:2): the element goes to
    position 0 (nibble 0b0100: halves 0, 1) or 1 (0b1110: halves 2, 3)."""
    rows, half = compressed.shape
    chunks = nibbles.shape[1]
    out = np.zeros((rows, 2 * half), dtype=compressed.dtype)
    rr, cc = np.meshgrid(np.arange(rows), np.arange(chunks), indexing="ij")
    if kind == "tf32":
        if not np.all(np.isin(nibbles, TF32_NIBBLES)):
            raise ValueError("tf32 metadata nibbles are 0b0100 or 0b1110")
        out.reshape(rows, chunks, 2)[rr, cc, (nibbles == 0b1110).astype(int)] = compressed.reshape(rows, chunks)
        return out
    u = SPARSE_UNITS[kind]
    full = out.reshape(rows, chunks, 4, u)
    cu = compressed.reshape(rows, chunks, 2, u)
    for i in range(2):
        full[rr, cc, (nibbles >> (2 * i)) & 3] = cu[:, :, i]
    return out


# ---------------------------------------------------------------------------------------------------- scale factors

SF_ROWS_PER_COPY = 128  # one tcgen05.cp 32x128b.warpx4 moves 32 smem rows of 16 bytes = 128 rows' factors
SF_TILE_BYTES = 1024  # shared memory each CTA keeps per operand for its factors (A's tile, then B's)
SF_BLOCKS = {"mxf8f6f4": 1, "mxf4": 2, "mxf4nvf4": 4}  # K blocks (scale factors per row) of one MMA: scale_vec 1X/2X/4X
SF_ONE = {"ue8m0": 127, "ue4m3": 0x38}  # the code of the scale factor 1.0
# CUTLASS's scale-factor atom (Sm1xxBlockScaledBasicChunk::SfKMajorAtom): 128 rows x 4 K blocks, 512 bytes, tiled
# along K first (Sm1xxBlockScaledConfig::tile_atom_to_shape_SFA's Step<_2,_1,_3>), then along M / N
SF_ATOM_BYTES, SF_PER_ATOM = 512, 4


def sf_blocks(form) -> int:
    """Scale factors per row of one MMA of a block-scaled form: the kind's scale_vec (SF_BLOCKS), or at sm_103a's
    K = 96 (form.k96_block) 96 / block: 6 for .block16, 3 for .block32 (PTX ISA Table 54)."""
    if getattr(form, "k96_block", 0):
        return 96 // form.k96_block
    return SF_BLOCKS[form.kind]


def sf_smem_offset(mn, block, k_atoms: int = 1):
    """Byte offset in the scale-factor tile of the factor of row (A) / column (B) `mn`, K block `block`:
    CUTLASS's Sm1xxBlockScaledBasicChunk::SfKMajorAtom ((32,4),(SFVec,4)):((16,4),(0,1)), 512 bytes per 128 rows and
    4 blocks, the atoms tiled along K first (`k_atoms` of them span the K of a tile), then along MN."""
    mn, block = np.asarray(mn), np.asarray(block)
    return (SF_ATOM_BYTES * (block // SF_PER_ATOM + k_atoms * (mn // 128)) + 16 * (mn % 32) + 4 * ((mn // 32) % 4)
            + block % SF_PER_ATOM)


def sf_tmem_position(mn, block, mode: str = "4x1", mn_extent: int = 128):
    """(lanes [..., replicas], column, byte) in Tensor Memory of the factor of row/column `mn`, block `block`
    (relative to the scale-factor address, scale-factor id 0). '4x1' (every cta_group::1 MMA, M=256 pairs, and
    A of every pair): lane mn%32 of each 32-lane quarter, column mn//32, byte = block % 4, and every further 4 blocks
    4 columns on (CUTLASS's tmem_sf_frg tiled along K, mma_traits_sm100.hpp:815-873, as its SM103 mainloop walks it
    one factor at a time for K = 96: sm103_blockscaled_mma_warpspecialized.hpp MmaIterShapeSFA; checked by
    tests/test_tcgen05_layouts_vs_cutlass.py). '2x2' (B of an M=128 pair, CUTLASS's ScaleFactorDuplicated2by2,
    mn_extent = N rounded up to 128): the first half of N on lane quarters 0,1, the second on 2,3 (blocks 0-3 only)."""
    mn, block = np.asarray(mn), np.asarray(block)
    if mode == "4x1":
        lanes = (mn % 32)[..., None] + 32 * np.arange(4)
        return lanes, mn // 32 + SF_PER_ATOM * (block // SF_PER_ATOM), block % SF_PER_ATOM
    if np.any(block >= SF_PER_ATOM):
        raise ValueError("the 2x2 scale-factor layout is modelled for 4 blocks of a row")
    half, j = mn // (mn_extent // 2), mn % (mn_extent // 2)
    lanes = (j % 32 + 64 * half)[..., None] + 32 * np.arange(2)
    return lanes, j // 32, block


def scale_codes_to_values(scale: str, codes) -> np.ndarray:
    """Scale-factor codes -> scale values: ue8m0 is 2^(code-127) with 0xFF NaN (OCP MX; ml_dtypes'
    float8_e8m0fnu), ue4m3 is e4m3 with the sign bit clear. `scale`: the scale type, or a kind for its usual one
    (ue4m3 for mxf4nvf4, whose K = 96 .block32 form takes ue8m0: forms.Form.scale_type)."""
    codes = np.asarray(codes, np.uint64)
    if scale in ("mxf4nvf4", "ue4m3"):
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


# ---------------------------------------------------------------------------------------------------- 128B_base32b

def base32b_strides(dtype: str, rows: int, cols: int) -> tuple[int, int]:
    """(LBO, SBO) for an MN-major 128B_base32b tile that reads the same under CUTLASS's reading of the descriptor
    (Layout_MN_SW128_32B_Atom: 4 K-rows of 128 bytes per atom, SBO steps over 4 K-rows, LBO over 128-byte MN atoms;
    harness/spec/layouts.py's too) and an 8-row one (SBO over 8 K-rows, as for the 16-byte-atomicity swizzles; the
    simulated device's, tests/simulated/smem.py). With at most 8 K-rows (tf32: K=8 per MMA) and SBO = 4 rows * 128
    bytes, K-row r of MN atom i lands at i*LBO + 128*r in both; the 'cutlass_base32b' cases tell them apart."""
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
