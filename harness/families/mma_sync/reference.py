"""Inputs and the numpy reference of an mma_sync case, from the models alone.

`prepare(case)` draws the case's matrices (deterministically from its id), packs A, B and C into each lane's
registers with the fragment model, writes the ldmatrix tiles into a shared-memory image and solves each lane's row
address with the ldmatrix model, encodes the sparse metadata, and computes the registers the kernel must write
back: D, and A and B as loaded. A negative control's expected registers are the model's prediction of its misread
(the registers ldmatrix loads from the wrong addresses or without .trans, simulated on the image; D from what the
wrong selector's lanes' metadata says), and its intended ones what the right setup gives.

Every input is exact: small integers for f16, bf16, tf32, f64 (every product and partial sum is an integer the
accumulator holds), the exact pools of wgmma's reference for e4m3 / e5m2, any value of s8/u8/s4/u4/b1 (integer
arithmetic is exact by nature; a 'sat' case pushes C to the s32 limits, with every product of a row of one sign, so
that the sum overflows the same way whatever order the hardware adds in: .satfinite clamps, the others wrap).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.families.mma_sync import forms, fragments, store
from harness.families.mma_sync.cases import LD_PATH, Case, Load, block_bytes, form_maps, path_of, store_bytes
from harness.families.mma_sync.ldmatrix import (ROW_SWIZZLES, MatrixMoveForm, SmemTile, Swizzle, lane_addresses,
                                                ldmatrix, stmatrix)
from harness.families.wgmma.reference import EXACT_POOL
from harness.spec import dtypes

POISON = 0x7FFF7FFF  # NaN as f32 and as both f16 halves; no exact result of a case
REGION = 1024  # A's tile at 0 of the window, B's at the next multiple of this after it (a 128B swizzle's pattern)
ROW0 = 3  # the operand block starts 3 storage rows into its tile: the swizzle sees rows off its pattern's start
SMALL_INTS = {"f16": 4, "bf16": 4, "tf32": 8, "f64": 8}  # |value| bounds that keep every product and sum exact
INT_RANGE = {"s8": (-128, 127), "u8": (0, 255), "s4": (-8, 7), "u4": (0, 15), "b1": (0, 1)}
ST_BYTES = 2560  # the largest stmatrix tile: 3 + 16 + 1 rows of 128 bytes; st_out is this many bytes a case
ST_ARGS = 36  # st_in per case: 32 lanes' row addresses, the store (1 + index in store.STORE_MOVES; 0: none), the
#               tile's offset in the window, its bytes, 0


# ------------------------------------------------------------------------------------------------ element types

def to_bits(t: str, values) -> np.ndarray:
    """Raw bits (uint64) of values of element type t (the types dtypes lacks, s4/u4/f64, here)."""
    v = np.asarray(values)
    if t in INT_RANGE:
        bits = forms.BITS[t]
        return (np.asarray(v, np.int64) & ((1 << bits) - 1)).astype(np.uint64)
    if t == "f64":
        return np.asarray(v, np.float64).view(np.uint64).copy()
    return dtypes.get(t).to_bits(v)


def from_bits(t: str, bits) -> np.ndarray:
    b = np.asarray(bits, np.uint64)
    if t in INT_RANGE:
        n = forms.BITS[t]
        u = (b & np.uint64((1 << n) - 1)).astype(np.int64)
        return np.where(u >= (1 << (n - 1)), u - (1 << n), u) if t[0] == "s" else u
    if t == "f64":
        return b.view(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return dtypes.get(t).from_bits(b)


def draw(rng, t: str, shape) -> np.ndarray:
    """Exact values of type t (float64 or int64)."""
    if t in INT_RANGE:
        lo, hi = INT_RANGE[t]
        return rng.integers(lo, hi + 1, size=shape).astype(np.int64)
    if t in SMALL_INTS:
        b = SMALL_INTS[t]
        return rng.integers(-b, b + 1, size=shape).astype(np.float64)
    pool = EXACT_POOL[t]
    return pool.take(rng.integers(0, len(pool), size=shape))


# ------------------------------------------------------------------------------------------------ registers

def pack(fm: fragments.FragmentMap, bits: np.ndarray) -> np.ndarray:
    """Each lane's registers as 32-bit words, uint32 [32, words], from the element bits [instances, rows, cols]:
    value v of a lane sits in register v // per_register at bit (v % per_register) * bits; an f64 register is two
    words, low first."""
    row, col, inst = fm.table
    vals = np.asarray(bits, np.uint64)[inst, row, col].reshape(32, fm.registers, fm.per_register)
    shifts = (np.arange(fm.per_register, dtype=np.uint64) * np.uint64(fm.bits))
    regs = (vals << shifts).sum(axis=2, dtype=np.uint64)  # fields never overlap: the sum is their or
    if fm.register_bits == 64:
        return np.stack([regs & np.uint64(0xFFFFFFFF), regs >> np.uint64(32)], axis=-1).reshape(32, -1).astype(
            np.uint32)
    return regs.astype(np.uint32)


def unpack(fm: fragments.FragmentMap, words: np.ndarray) -> np.ndarray:
    """The element bits [instances, rows, cols] (uint64) the registers hold: `pack`'s inverse."""
    w = np.asarray(words, np.uint64).reshape(32, -1)
    if fm.register_bits == 64:
        regs = w[:, 0::2] | (w[:, 1::2] << np.uint64(32))
    else:
        regs = w
    row, col, inst = fm.table
    v = np.arange(fm.values)
    reg, sub = fm.register_of(v)
    mask = np.uint64((1 << fm.bits) - 1) if fm.bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    vals = (regs[:, reg] >> (sub * fm.bits).astype(np.uint64)) & mask
    out = np.zeros((fm.instances, fm.rows, fm.cols), np.uint64)
    out[inst, row, col] = vals
    return out


# ------------------------------------------------------------------------------------------------ the product

def product(form: forms.MmaForm, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D = A B + C of each instance ([inst, M, K], [inst, K, N], [inst, M, N]) as the form computes it, exactly:
    .b1 as popc of and / xor, integers wrapped modulo 2^32 or clamped (.satfinite), floats in float64 (the caller
    checks that the accumulator holds the result exactly)."""
    if form.atype == "b1":
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        both = np.einsum("imk,ikn->imn", a64, b64)
        ones = a64.sum(axis=2)[:, :, None] + b64.sum(axis=1)[:, None, :]
        pop = both if form.bitop is forms.BitOp.AND_POPC else ones - 2 * both
        return _s32(form, pop + c.astype(np.int64))
    if form.dtype == "s32":
        return _s32(form, np.einsum("imk,ikn->imn", a.astype(np.int64), b.astype(np.int64)) + c.astype(np.int64))
    return np.einsum("imk,ikn->imn", a.astype(np.float64), b.astype(np.float64)) + c


def _s32(form: forms.MmaForm, d: np.ndarray) -> np.ndarray:
    if form.satfinite:
        return np.clip(d, -(1 << 31), (1 << 31) - 1)
    return ((d + (1 << 31)) % (1 << 32)) - (1 << 31)


def d_bits(form: forms.MmaForm, d: np.ndarray, what: str) -> np.ndarray:
    """D's element bits; AssertionError where a float accumulator does not hold the exact result (the value pools
    would be wrong)."""
    if form.dtype == "s32":
        return (d.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)
    bits = to_bits(form.dtype, d)
    if not np.array_equal(from_bits(form.dtype, bits), d):
        raise AssertionError(f"{what}: D is not exact in {form.dtype}; the value pools are wrong")
    return bits


# ------------------------------------------------------------------------------------------------ sparse A

PAIRS = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))


def draw_fields(rng, form: forms.MmaForm) -> tuple[np.ndarray, np.ndarray]:
    """(metadata fields [M, K / chunk], a decoy: another legal field for every chunk), ascending indices (legal
    under ::ordered_metadata too); a .tf32 chunk keeps element 0 (0b0100) or 1 (0b1110)."""
    m, _, k = form.mnk
    shape = (m, k // forms.chunk_elements(form.atype))
    if forms.BITS[form.atype] == 32:
        keep = rng.integers(0, 2, size=shape)
        field = np.where(keep == 0, 0b0100, 0b1110)
        return field, np.where(keep == 0, 0b1110, 0b0100)
    pick = rng.integers(0, 6, size=shape)
    other = (pick + 1 + rng.integers(0, 5, size=shape)) % 6
    table = np.array([lo | hi << 2 for lo, hi in PAIRS])
    return table[pick], table[other]


def expand(form: forms.MmaForm, compressed: np.ndarray, fields: np.ndarray) -> np.ndarray:
    """The logical M x K A whose kept elements the compressed M x K/2 storage holds, placed by the fields."""
    m, _, k = form.mnk
    cols = fragments.expand_columns(form, fields)
    dense = np.zeros((m, k), compressed.dtype)
    np.put_along_axis(dense, cols, compressed, axis=1)
    return dense


def metadata_words(form: forms.MmaForm, fields: np.ndarray, decoy: np.ndarray) -> np.ndarray:
    """Each lane's metadata register: the fields in the lanes the form's selector names, the decoy in every other
    selector's lanes (a hardware that read the metadata of the wrong lanes sums other elements: it is caught)."""
    regs = fragments.encode_metadata(form, fields)
    for s in forms.selectors(form.shape, form.atype):
        if s != form.selector:
            regs = regs | fragments.encode_metadata(_with_selector(form, s), decoy)
    return regs.astype(np.uint32)


def _with_selector(form: forms.MmaForm, s: int) -> forms.MmaForm:
    from dataclasses import replace
    return replace(form, selector=s)


# ------------------------------------------------------------------------------------------------ ldmatrix tiles

@dataclass(frozen=True)
class Tile:
    """Where an operand's block sits: the tile (its base in the window), the block's storage origin."""
    tile: SmemTile
    row0: int
    col0: int  # in .b16 units

    @property
    def end(self) -> int:
        return self.tile.base + self.tile.rows * self.tile.pitch


def tile_of(case: Case, operand: str, load: Load, base: int) -> Tile:
    fm = form_maps(case.form)[operand]
    srows = fm.rows if load.contiguous == "rows" else fm.cols
    block = block_bytes(case.key, operand, load.contiguous)
    if load.row_bytes == 16:  # no swizzle: rows padded by one 16-byte chunk, the block in the second chunk
        pitch, swizzle, col0 = -(-block // 16) * 16 + 16, Swizzle(0, 4, 3), 8
    else:  # the block's row at the end of the tile's row, on a 16-byte boundary
        pitch, swizzle, col0 = load.row_bytes, ROW_SWIZZLES[load.row_bytes], ((load.row_bytes - block) // 16) * 8
    rows = ROW0 + srows + 1  # a row of slack after the block: rows+16 reads into it
    return Tile(SmemTile(rows, pitch // 2, swizzle, base, pitch), ROW0, col0)


def tiles_of(case: Case) -> dict[str, Tile]:
    """The tile of each operand the case loads by ldmatrix, each in its own REGION-aligned part of the window (A's
    first): where prepare writes them, and where the probes (probe.py) code every byte by its address."""
    tiles, end = {}, 0
    for op, load in (("A", case.a), ("B", case.b)):
        if load.via == "ldmatrix":
            tiles[op] = tile_of(case, op, load, -(-end // REGION) * REGION)
            end = tiles[op].end
    return tiles


def write_tile(t: Tile, fm: fragments.FragmentMap, contiguous: str, bits: np.ndarray, image: np.ndarray) -> None:
    """The operand's element bits [rows, cols] into the image where the tile puts them, per_unit elements of a .b16
    unit low first."""
    storage = bits if contiguous == "rows" else bits.T
    per_unit = 16 // fm.bits
    r, u = storage.shape[0], storage.shape[1] // per_unit
    units = np.zeros((r, u), np.uint64)
    for j in range(per_unit):
        units |= storage[:, j::per_unit] << np.uint64(fm.bits * j)
    rr, uu = np.indices((r, u))
    addr = t.tile.address(t.row0 + rr, t.col0 + uu)
    image[addr] = (units & 0xFF).astype(np.uint8)
    image[addr + 1] = (units >> np.uint64(8)).astype(np.uint8)


def junk(rng, t: str, nbytes: int) -> np.ndarray:
    """Filler for bytes no element of the block occupies: non-zero exact values of a float type (a misread of them
    still sums exactly, so the model predicts it bit for bit), any byte for integer types."""
    if t in INT_RANGE:
        return rng.integers(0, 256, size=nbytes, dtype=np.uint8)
    width = forms.BITS[t] // 8
    pool = np.arange(1, SMALL_INTS[t] + 1, dtype=np.float64) if t in SMALL_INTS else EXACT_POOL[t][EXACT_POOL[t] != 0]
    enc = to_bits(t, pool).astype(dtypes.UNSIGNED_OF_WIDTH[width])
    return enc.take(rng.integers(0, len(enc), size=nbytes // width)).view(np.uint8)


# ------------------------------------------------------------------------------------------------ a case

@dataclass
class Prepared:
    case: Case
    image: np.ndarray | None  # uint8, multiple of 16 bytes
    a_words: np.ndarray | None  # uint32 [32, words]: the registers the fragment model packs (the 'regs' path's)
    b_words: np.ndarray | None
    c_words: np.ndarray | None
    e_words: np.ndarray | None  # uint32 [32]: the sparse metadata (zeros for a dense form)
    ld_rows: np.ndarray | None  # uint32 [32, 2]: each lane's ldmatrix row address of A and of B, in the window
    a_path: int
    b_path: int
    launch_variant: int
    expected: dict  # 'D', 'A', 'B' -> uint32 [32, words]: what the kernel must write (a control's predicted misread)
    intended: dict | None  # a control's: what the right setup writes (None for other cases)
    st_in: np.ndarray | None = None  # uint32 [ST_ARGS]: the stmatrix store's lane addresses and tile (None: none)
    st_expected: np.ndarray | None = None  # uint32 [ST_BYTES / 4]: the tile after the store, poison beyond it
    st_intended: np.ndarray | None = None  # a store control's: the tile the right addresses give
    st_pitch: int = 0  # bytes a row of the stmatrix tile (where a differing byte is named)

    def slim(self) -> "Prepared":
        """Only what the diff needs (the registers and tile to expect), for shipping between processes."""
        self.image = self.a_words = self.b_words = self.c_words = self.e_words = self.ld_rows = self.st_in = None
        return self


def prepare(case: Case) -> Prepared:
    key, form = case.key, case.form
    maps = form_maps(form)
    rng = np.random.default_rng(case.seed)
    inst = maps["A"].instances
    m, n, k = form.mnk
    sat = case.extra == "sat"
    a_rows, a_cols = maps["A"].rows, maps["A"].cols  # a sparse A's compressed storage: M x K/2
    a_vals = draw(rng, form.atype, (inst, a_rows, a_cols))
    b_vals = draw(rng, form.btype, (inst, k, n))
    if sat:  # products of one sign per row: B >= 0, a row of A >= 0 where C is near +2^31, <= 0 near -2^31
        b_vals = np.minimum(np.abs(b_vals), INT_RANGE[form.btype][1])  # |-128| is no s8
        up = rng.integers(0, 2, size=(inst, m, 1)).astype(bool)
        mag = np.minimum(np.abs(a_vals), INT_RANGE[form.atype][1])
        a_vals = np.where(up, mag, -mag) if form.atype[0] == "s" else a_vals
        edge = rng.integers(0, 1 << 12, size=(inst, m, n))
        c_vals = np.where(up, (1 << 31) - 1 - edge, -(1 << 31) + edge).astype(np.int64)
    elif key.dtype == "s32":
        c_vals = rng.integers(-(1 << 20), 1 << 20, size=(inst, m, n)).astype(np.int64)
    else:
        c_vals = rng.integers(-8, 9, size=(inst, m, n)).astype(np.float64)
    a_bits, b_bits = to_bits(form.atype, a_vals), to_bits(form.btype, b_vals)
    c_bits = (c_vals & 0xFFFFFFFF).astype(np.uint64) if key.ctype == "s32" else to_bits(key.ctype, c_vals)
    e_words = np.zeros(32, np.uint32)
    if form.sparse:
        fields, decoy = draw_fields(rng, form)
        e_words = metadata_words(form, fields, decoy)
        a_logical = expand(form, a_vals[0], fields)[None]
    else:
        fields = decoy = None
        a_logical = a_vals

    # the shared-memory image: each ldmatrix operand's tile in its own region, junk around the blocks
    tiles = tiles_of(case)
    end = max((t.end for t in tiles.values()), default=0)
    size = -(-(end + 32) // 16) * 16 if tiles else 16  # slack: rows+16 reads a chunk past the last row
    image = np.concatenate([junk(rng, form.atype, size // 2), junk(rng, form.btype, size - size // 2)])
    ld_rows = np.zeros((32, 2), np.uint32)
    words = {"A": pack(maps["A"], a_bits), "B": pack(maps["B"], b_bits)}
    loaded = dict(words)
    for j, op in enumerate(("A", "B")):
        if op not in tiles:
            continue
        load, t = (case.a, case.b)[j], tiles[op]
        write_tile(t, maps[op], load.contiguous, (a_bits if op == "A" else b_bits)[0], image)
        move, addr = lane_addresses(maps[op], load.contiguous, t.tile, t.row0, t.col0)
        got = ldmatrix(move, addr, image)
        if not np.array_equal(got, words[op]):  # the two models must agree before any GPU is asked
            raise AssertionError(f"{case.id}: ldmatrix from the tile does not give the {op} fragment")
        ld_rows[:, j] = addr
        if case.control and case.operand == op:
            ld_rows[:, j], loaded[op] = misread(case, maps[op], load, t, move, addr, image)
    paths = [path_of(key, "A", case.a), path_of(key, "B", case.b)]
    if case.control == "trans-dropped":
        paths[("A", "B").index(case.operand)] = LD_PATH["ldmatrix"]

    def result(a_words, b_words, meta) -> np.ndarray:
        a = from_bits(form.atype, unpack(maps["A"], a_words))
        if form.sparse:
            a = expand(form, a[0], meta)[None]
        b = from_bits(form.btype, unpack(maps["B"], b_words))
        d = product(form, a, b, c_vals)
        return pack(maps["D"], d_bits(form, d, case.id))

    intended = {"D": result(words["A"], words["B"], fields), "A": words["A"], "B": words["B"]}
    if not np.array_equal(result(words["A"], words["B"], fields),
                          pack(maps["D"], d_bits(form, product(form, a_logical, b_vals, c_vals), case.id))):
        raise AssertionError(f"{case.id}: D from the packed registers is not D from the matrices")
    if case.control:
        meta = decoy if case.control == "wrong-selector" else fields
        expected = {"D": result(loaded["A"], loaded["B"], meta), "A": loaded["A"], "B": loaded["B"]}
    else:
        expected, intended = intended, None
    c_words = pack(maps["C"], c_bits)
    prep = Prepared(case, image, words["A"], words["B"], c_words, e_words, ld_rows, paths[0], paths[1],
                    case.launch_variant, expected, intended)
    if case.st.num:
        add_store(prep, rng, form.dtype)
    return prep


def store_tile(case: Case, base: int) -> Tile:
    """Where stmatrix stores: a tile of the store's row width (16: unswizzled, padded by a chunk), the stored block
    at the end of each row (tile_of's arrangement), ROW0 rows in, a row of slack after it."""
    st = case.st
    fm = store.store_map(case.key, st.num)
    srows = fm.rows if st.contiguous == "rows" else fm.cols
    block = store_bytes(case.key, st)
    if st.row_bytes == 16:
        pitch, swizzle, col0 = -(-block // 16) * 16 + 16, Swizzle(0, 4, 3), 8
    else:
        pitch, swizzle, col0 = st.row_bytes, ROW_SWIZZLES[st.row_bytes], ((st.row_bytes - block) // 16) * 8
    return Tile(SmemTile(ROW0 + srows + 1, pitch // 2, swizzle, base, pitch), ROW0, col0)


def add_store(prep: Prepared, rng, dtype: str) -> None:
    """The case's stmatrix store: its tile after the image's tiles (junk around the block, so that a byte the store
    should leave alone is checked too), each lane's row address, and the tile the store leaves (a wrong-swizzle
    control's: the model's prediction of its store through the addresses solved for half-width rows)."""
    case = prep.case
    st = case.st
    fm = store.store_map(case.key, st.num)
    base = -(-prep.image.size // REGION) * REGION
    t = store_tile(case, base)
    size = t.tile.rows * t.tile.pitch
    if size > ST_BYTES:
        raise AssertionError(f"{case.id}: a {size}-byte stmatrix tile exceeds ST_BYTES {ST_BYTES}")
    image = np.concatenate([prep.image, junk(rng, dtype, base - prep.image.size), junk(rng, dtype, size)])
    regs = store.registers(st.num, prep.expected["D"], prep.c_words)
    _, addr = lane_addresses(fm, st.contiguous, t.tile, t.row0, t.col0)
    if not np.array_equal(ldmatrix(MatrixMoveForm(st.num, st.trans), addr, _stored(st.move, addr, regs, image)),
                          regs):  # the store's addresses and the load model agree before any GPU is asked
        raise AssertionError(f"{case.id}: the stmatrix addresses do not give back the stored fragment")
    handed = addr
    if case.control == "wrong-swizzle" and case.operand == "D":
        wrong = SmemTile(t.tile.rows, t.tile.cols, ROW_SWIZZLES[st.row_bytes // 2], t.tile.base, t.tile.pitch)
        _, handed = lane_addresses(fm, st.contiguous, wrong, t.row0, t.col0)
        prep.st_intended = _tile_words(_stored(st.move, addr, regs, image), base, size)
    prep.st_expected = _tile_words(_stored(st.move, handed, regs, image), base, size)
    prep.st_in = np.concatenate([handed.astype(np.uint32), np.array(
        [1 + store.STORE_MOVES.index(st.move), base, size, 0], np.uint32)])
    prep.image = image
    prep.st_pitch = t.tile.pitch


def _stored(move: MatrixMoveForm, addresses, regs, image: np.ndarray) -> np.ndarray:
    out = image.copy()
    stmatrix(move, addresses, regs, out)
    return out


def _tile_words(image: np.ndarray, base: int, size: int) -> np.ndarray:
    """The tile's bytes as the kernel copies them out (uint32 words), poison after them."""
    out = np.full(ST_BYTES // 4, POISON, np.uint32)
    out[:size // 4] = image[base:base + size].view(np.uint32)
    return out


def misread(case: Case, fm, load: Load, t: Tile, move: MatrixMoveForm, addr: np.ndarray, image: np.ndarray):
    """(the row addresses the kernel is handed, the registers ldmatrix then loads) of a control on this operand."""
    if case.control == "wrong-swizzle":  # the addresses of the tile swizzled as if its rows were half as wide
        wrong = SmemTile(t.tile.rows, t.tile.cols, ROW_SWIZZLES[load.row_bytes // 2], t.tile.base, t.tile.pitch)
        _, bad = lane_addresses(fm, load.contiguous, wrong, t.row0, t.col0)
        return bad, ldmatrix(move, bad, image)
    if case.control == "rows+16":  # every lane's row address one 16-byte chunk on
        bad = addr + 16
        return bad, ldmatrix(move, bad, image)
    if case.control == "trans-dropped":  # the right addresses, ldmatrix issued without .trans
        return addr, ldmatrix(MatrixMoveForm(move.num, trans=False), addr, image)
    raise ValueError(f"{case.id}: {case.control} is not a control on an operand's load")
