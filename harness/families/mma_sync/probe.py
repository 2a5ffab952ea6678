"""mma_sync's diagnosis: the maps the hardware used, recovered from probes whose data name their own place, beside
the model's, and one sentence naming the operand and the bit roles that differ.

The family's own kernel runs every probe (it writes A and B as loaded, raw, and D): no kernel of its own.

* **A and B as loaded from global memory** ('load' records): every element of A and B holds the digits of its own
  index, (row, col) packed as bits, `bits` bits a pass (one pass for 16-bit and wider types, two or three for 8- and
  4-bit ones, twelve for .b1): the registers the kernel writes back name, slot by slot, which element each
  (lane, register, sub-element) holds after the load. No product is involved.
* **A and B loaded by ldmatrix** ('ldmatrix' records), per failing case with an ldmatrix operand: the case's own
  launch (its tile, its lanes' row addresses, its path) with every 16-bit unit of the image holding its own address
  / 2, so the registers name the shared-memory address each (lane, register, half) was read from. That address map
  is solved against the model's (the ldmatrix model on the addresses the lanes were handed: `affine.solve`, named
  'address bit i'), each of CuTe's Swizzle<B,4,3> is tried as the tile's swizzle ("the tile was read with
  Swizzle<2,4,3>, the case built it with Swizzle<3,4,3>"), and the addresses, decoded through the tile the case
  built, give the fragment as loaded ((lane, register, sub-element) -> (row, col)) beside the model's.
* **D** ('accumulator'): C = 0, A and B from registers, packed through the load maps the probe above observed (so
  a misloading device does not scramble this probe), coded so that D[m, n] = m (row pass: A[m, k] = binary digit
  of m, B[k, n] = the digit's weight), = n (col pass), = the MMA instance (m8n8k4 .f16's quad pairs): D's registers
  name the (row, col) each slot holds. Weights larger than the type holds exactly are split over several k (s4 holds
  4, .b1 1: unary); .b1 runs its .and.popc variant (a popcount of and is the product's sum).

Each table is solved for its GF(2) affine map (harness/diagnosis/affine.py through bitmaps.py: row and col bits from
lane, sub-element and register bits) and compared with the model's map (fragments.py) bit by bit ("row bit 3 comes
from register; the model takes it from lane bit 2"); a table no affine map gives is named by its witness (inputs
XORing to 0 whose outputs do not). Each failing case's own launch is then replayed on the CPU through the
recovered maps (its A and B as loaded, the MMA taking them by the model's maps, C in and D out through the recovered
D map): `replays_case` says whether that reproduces every D register it wrote.

What no probe here can tell apart (stated, not guessed): an MMA that *takes* A's (or B's) registers in another order
than fragments.py says reads, to a probe that sees only D, like a D placement of the same rows (a row permutation
applied to both the A and the D fragment returns the same registers; mma.sync, unlike wgmma, has no shared-memory A
to pin D's rows). Such a bug shows as a D map that is not a bijection, or one whose replay of the case fails: the D
record then says 'inconclusive' and names A's and B's fragment models as the other suspects instead of blaming D.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.contract import LaunchFailed, ranges
from harness.diagnosis import affine, bitmaps
from harness.families.mma_sync import forms, fragments
from harness.families.mma_sync.cases import LD_PATH, Case, form_maps, operand_maps
from harness.families.mma_sync.fragments import WARP, FragmentMap
from harness.families.mma_sync.ldmatrix import MatrixMoveForm, SmemTile, Swizzle
from harness.families.mma_sync.reference import (POISON, REGION, Prepared, expand, from_bits, pack, prepare, product,
                                                 tiles_of, to_bits, unpack)

OPERAND_WORDS = {"A": ("row", "k"), "B": ("k", "col"), "C": ("row", "col"), "D": ("row", "col")}
SWIZZLE_CANDIDATES = tuple(Swizzle(b, 4, 3) for b in range(4))  # CuTe's 16/32/64/128-byte-row swizzles
MAX_FIRST = 6


# ------------------------------------------------------------------------------------------------ slots

def slot_values(fm: FragmentMap, words) -> np.ndarray:
    """The raw bits each (lane, value) slot holds, uint64 [32, values], from a lane's 32-bit words."""
    w = np.asarray(words, np.uint64).reshape(WARP, -1)
    regs = w[:, 0::2] | (w[:, 1::2] << np.uint64(32)) if fm.register_bits == 64 else w
    reg, sub = fm.register_of(np.arange(fm.values))
    mask = np.uint64(0xFFFFFFFFFFFFFFFF if fm.bits >= 64 else (1 << fm.bits) - 1)
    return (regs[:, reg] >> (sub * fm.bits).astype(np.uint64)) & mask


def coding(fm: FragmentMap, operand: str) -> bitmaps.Coding:
    """A place is (lane, sub-element within its register, register); an element (row, col[, instance])."""
    ins = [("lane", WARP)]
    if fm.per_register > 1:
        ins.append(("half" if fm.per_register == 2 else "sub-element", fm.per_register))
    if fm.registers > 1:
        ins.append(("register", fm.registers))
    rw, cw = OPERAND_WORDS[operand]
    outs = [(rw, fm.rows), (cw, fm.cols)] + ([("instance", fm.instances)] if fm.instances > 1 else [])
    return bitmaps.Coding(tuple(ins), tuple(outs))


def places(fm: FragmentMap, operand: str) -> np.ndarray:
    lane = np.broadcast_to(np.arange(WARP)[:, None], (WARP, fm.values))
    reg, sub = fm.register_of(np.broadcast_to(np.arange(fm.values)[None, :], (WARP, fm.values)))
    cd = coding(fm, operand)
    return cd.places(lane, *([sub] if fm.per_register > 1 else []), *([reg] if fm.registers > 1 else []))


def element_codes(fm: FragmentMap, operand: str, row, col, inst) -> np.ndarray:
    return coding(fm, operand).elements(row, col, *([inst] if fm.instances > 1 else []))


def decode_elements(fm: FragmentMap, code) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, col, instance) of packed element codes; -1 where a code names no element."""
    code = np.asarray(code, np.int64)
    rb, cb = bitmaps.bit_width(fm.rows), bitmaps.bit_width(fm.cols)
    row, col, inst = code & ((1 << rb) - 1), (code >> rb) & ((1 << cb) - 1), code >> (rb + cb)
    ok = (code >= 0) & (row < fm.rows) & (col < fm.cols) & (inst < fm.instances)
    return tuple(np.where(ok, a, -1) for a in (row, col, inst))


def index_map(fm: FragmentMap, operand: str, table) -> affine.AffineMap | bitmaps.Witness | None:
    """The affine map (or the proof there is none) of a slot table (row, col, instance) [32, values]; slots naming
    no element (-1) are left out; None where no slot names one."""
    row, col, inst = (np.asarray(a, np.int64) for a in table)
    ok = (row >= 0) & (col >= 0) & (inst >= 0)
    if not ok.any():
        return None
    elements = element_codes(fm, operand, np.where(ok, row, 0), np.where(ok, col, 0), np.where(ok, inst, 0))
    return bitmaps.recover(coding(fm, operand), places(fm, operand), elements, ok)


def pack_through(fm: FragmentMap, bits: np.ndarray, loaded) -> np.ndarray:
    """Registers to hand the kernel so that, after a load whose slot s takes the input element loaded[s] (the
    observed load table), slot s holds bits[model element of s]; the model's packing where loaded is None."""
    if loaded is None:
        return pack(fm, bits)
    row, col, inst = fm.table
    lr, lc, li = loaded
    arranged = np.zeros_like(np.asarray(bits, np.uint64))
    arranged[li, lr, lc] = np.asarray(bits, np.uint64)[inst, row, col]
    return pack(fm, arranged)


def _bijective(fm: FragmentMap, table) -> bool:
    row, col, inst = (np.asarray(a) for a in table)
    if (row < 0).any() or (col < 0).any() or (inst < 0).any():
        return False
    return np.unique((inst * fm.rows + row) * fm.cols + col).size == row.size == fm.instances * fm.rows * fm.cols


# ------------------------------------------------------------------------------------------------ probe CTAs

def probe_form(key: forms.KernelKey, case: Case | None = None) -> tuple[int, forms.MmaForm]:
    """(variant index, form) the D and load probes launch: the case's own (m8n8k4 .f16's layouts have maps of their
    own), else the first variant, but .and.popc for .b1 (a popcount of and is the sum of products; .xor.popc's is
    not)."""
    vs = forms.variants(key)
    if case is not None and case.form.bitop is not forms.BitOp.XOR_POPC:
        return case.variant_index, case.form
    i = next((i for i, f in enumerate(vs) if f.bitop is not forms.BitOp.XOR_POPC), 0)
    return i, vs[i]


def _metadata(form: forms.MmaForm) -> tuple[np.ndarray | None, np.ndarray]:
    """(fields, each lane's metadata register): every chunk keeps its first two elements (0b0100: legal under
    ::ordered_metadata, and .tf32's element 0)."""
    if not form.sparse:
        return None, np.zeros(WARP, np.uint32)
    m, _, k = form.mnk
    fields = np.full((m, k // forms.chunk_elements(form.atype)), 0b0100)
    return fields, fragments.encode_metadata(form, fields)


def _blank(case: Case, variant: int, a_words, b_words, c_words, e_words, image=None, ld_rows=None, paths=(0, 0)):
    return Prepared(case, image if image is not None else np.zeros(16, np.uint8), a_words, b_words, c_words, e_words,
                    ld_rows if ld_rows is not None else np.zeros((WARP, 2), np.uint32), paths[0], paths[1], variant,
                    {}, None)


def load_passes(fm: FragmentMap, operand: str) -> int:
    bits = bitmaps.bit_width(fm.rows) + bitmaps.bit_width(fm.cols) + bitmaps.bit_width(fm.instances)
    return -(-bits // min(fm.bits, 62))


def load_probe(key: forms.KernelKey, case: Case) -> list[Prepared]:
    """CTAs whose A and B elements hold the digits (pass p: bits p * width ..) of their own element code."""
    variant, form = probe_form(key, case)
    maps = form_maps(form)
    _, e_words = _metadata(form)
    zero_c = np.zeros((WARP, maps["C"].registers * maps["C"].register_bits // 32), np.uint32)
    out = []
    for p in range(max(load_passes(maps[op], op) for op in "AB")):
        regs = {}
        for op in "AB":
            fm = maps[op]
            i, r, c = np.indices((fm.instances, fm.rows, fm.cols))
            code = element_codes(fm, op, r, c, i).astype(np.uint64)
            width = min(fm.bits, 62)
            regs[op] = pack(fm, (code >> np.uint64(p * width)) & np.uint64((1 << width) - 1))
        out.append(_blank(case, variant, regs["A"], regs["B"], zero_c, e_words))
    return out


def read_load(form: forms.MmaForm, operand: str, words_per_pass: list) -> tuple:
    """(row, col, instance) [32, values] each slot held after the load probe's passes (of `form`)."""
    fm = form_maps(form)[operand]
    width = min(fm.bits, 62)
    code = np.zeros((WARP, fm.values), np.int64)
    for p in range(load_passes(fm, operand)):
        code |= slot_values(fm, words_per_pass[p]).astype(np.int64) << (p * width)
    return decode_elements(fm, code)


def _cap(t: str) -> int:
    """The largest weight (a power of two, at most 8) a B or A element of type t holds exactly."""
    return {"s4": 4, "b1": 1}.get(t, 8)


def _digit_plan(count: int, cap: int) -> list[tuple[int, int]]:
    """(digit j, weight) per k used: the binary digits of 0..count-1, digit j weighing 2^j in pieces <= cap."""
    out = []
    for j in range(bitmaps.bit_width(count)):
        out += [(j, min(1 << j, cap))] * max(1, (1 << j) // cap)
    return out


def accumulator_probe(key: forms.KernelKey, case: Case, loaded: dict) -> tuple[list[str], list[Prepared]]:
    """(what each CTA codes, the CTAs) of the D probe: 'row', 'col' and, for several MMAs a warp, 'instance'.
    `loaded`: operand -> the observed load table, or None (pack by the model)."""
    variant, form = probe_form(key, case)
    maps = form_maps(form)
    fields, e_words = _metadata(form)
    m, n, k = form.mnk
    inst = maps["A"].instances
    if form.sparse:  # the logical ks the metadata keeps: compressed column j is logical column kept[j]
        kept = fragments.expand_columns(form, fields)[0]
    else:
        kept = np.arange(k)
    zero_c = np.zeros((WARP, maps["C"].registers * maps["C"].register_bits // 32), np.uint32)
    what, out = [], []
    for coord, count in (("row", m), ("col", n), ("instance", inst)):
        if count == 1:
            continue
        coded = form.atype if coord != "col" else form.btype
        weighed = form.btype if coord != "col" else form.atype
        plan = _digit_plan(count, _cap(weighed))
        if len(plan) > len(kept):
            raise ValueError(f"{key.name}: the D probe's {coord} digits need {len(plan)} k, the form has "
                             f"{len(kept)}")
        a = np.zeros((inst, m, k))
        b = np.zeros((inst, k, n))
        idx = {"row": np.arange(m)[None, :, None], "col": np.arange(n)[None, None, :],
               "instance": np.arange(inst)[:, None, None]}[coord]
        for pos, (j, w) in enumerate(plan):
            kk = kept[pos]
            digit = (idx >> j) & 1
            if coord == "col":
                a[:, :, kk] = w
                b[:, kk, :] = np.broadcast_to(digit[:, 0, :], (inst, n))
            else:
                a[:, :, kk] = np.broadcast_to(digit[..., 0], (inst, m))
                b[:, kk, :] = w
        a_store = a[:, :, kept] if form.sparse else a  # the compressed storage holds the kept columns
        a_w = pack_through(maps["A"], to_bits(form.atype, a_store.astype(np.int64) if form.atype in _INTS
                                              else a_store), loaded.get("A"))
        b_w = pack_through(maps["B"], to_bits(form.btype, b.astype(np.int64) if form.btype in _INTS else b),
                           loaded.get("B"))
        what.append(coord)
        out.append(_blank(case, variant, a_w, b_w, zero_c, e_words))
    return what, out


_INTS = ("s8", "u8", "s4", "u4", "b1")


def _acc_values(key: forms.KernelKey, raw: np.ndarray) -> np.ndarray:
    """Accumulator slot bits -> integers; -1 where a value is no integer (poison, NaN)."""
    raw = np.asarray(raw, np.uint64)
    if key.dtype == "s32":
        s = raw.astype(np.int64)
        return np.where(s >= 1 << 31, s - (1 << 32), s)
    with np.errstate(invalid="ignore"):
        v = np.asarray(from_bits(key.dtype, raw), np.float64)
    ok = np.isfinite(v) & (np.rint(np.nan_to_num(v)) == np.nan_to_num(v))
    return np.where(ok, np.rint(np.nan_to_num(v)), -1).astype(np.int64)


def read_accumulator(key: forms.KernelKey, what: list[str], d_words: list) -> tuple:
    fm = operand_maps(key)["D"]
    got = {c: _acc_values(key, slot_values(fm, w)) for c, w in zip(what, d_words)}
    zero = np.zeros((WARP, fm.values), np.int64)
    row, col, inst = got.get("row", zero), got.get("col", zero), got.get("instance", zero)
    ok = (row >= 0) & (row < fm.rows) & (col >= 0) & (col < fm.cols) & (inst >= 0) & (inst < fm.instances)
    return tuple(np.where(ok, a, -1) for a in (row, col, inst))


# ------------------------------------------------------------------------------------------------ ldmatrix

def coded_image(prep: Prepared) -> np.ndarray:
    """The case's window, every 16-bit unit holding its own address / 2, whole REGIONs (a misread address still
    lands on a coded unit)."""
    size = -(-prep.image.size // REGION) * REGION
    return np.arange(size // 2, dtype=np.uint16).view(np.uint8).copy()


@dataclass(frozen=True, eq=False)
class LdmatrixSetup:
    """What the address probe of one operand of one case needs: the operand's fragment map, its tile, the path
    launched (.trans or not), the row addresses the lanes were handed."""
    operand: str
    fm: FragmentMap
    contiguous: str
    tile: object  # reference.Tile
    trans: bool
    ld_rows: np.ndarray  # [32] the lanes' row addresses

    def __post_init__(self):
        if self.operand not in ("A", "B") or self.contiguous not in ("rows", "cols"):
            raise ValueError(f"an ldmatrix setup is of A or B, rows or cols, not {self.operand} / {self.contiguous}")

    @property
    def move(self) -> MatrixMoveForm:
        return MatrixMoveForm(self.fm.registers, self.trans)


def ldmatrix_setups(case: Case, prep: Prepared) -> list[LdmatrixSetup]:
    tiles = tiles_of(case)
    out = []
    for j, (op, load) in enumerate((("A", case.a), ("B", case.b))):
        if load.via == "ldmatrix":
            path = (prep.a_path, prep.b_path)[j]
            out.append(LdmatrixSetup(op, form_maps(case.form)[op], load.contiguous, tiles[op],
                                     path == LD_PATH["ldmatrix.trans"], np.asarray(prep.ld_rows[:, j], np.int64)))
    return out


def _storage(fm: FragmentMap, contiguous: str):
    """Each slot's (storage row, .b16 unit column, element within the unit)."""
    row, col, _ = fm.table
    srow, scol = (row, col) if contiguous == "rows" else (col, row)
    per_unit = 16 // fm.bits
    return srow, scol // per_unit, scol % per_unit


def slot_addresses(st: LdmatrixSetup, words) -> np.ndarray:
    """The byte address each slot's 16-bit unit was read from, [32, values], off an address-coded launch."""
    fm = st.fm
    per_unit = 16 // fm.bits
    w = np.asarray(words, np.int64).reshape(WARP, -1)
    reg, sub = fm.register_of(np.arange(fm.values))
    half = sub // per_unit
    return 2 * ((w[:, reg] >> (16 * half)) & 0xFFFF)


def model_addresses(st: LdmatrixSetup) -> np.ndarray:
    """The ldmatrix model's address of each slot's unit, from the addresses the lanes were handed."""
    fm = st.fm
    per_unit = 16 // fm.bits
    matrix, row, col = st.move.elements  # [32, num, 2]
    addr = st.ld_rows[8 * matrix + row] + 2 * col
    reg, sub = fm.register_of(np.arange(fm.values))
    return addr[:, reg, sub // per_unit]


def tile_addresses(st: LdmatrixSetup, swizzle: Swizzle | None = None) -> np.ndarray:
    """Where the tile (swizzled as built, or by `swizzle`) holds each slot's model element."""
    t = st.tile
    tile = t.tile if swizzle is None else SmemTile(t.tile.rows, t.tile.cols, swizzle, t.tile.base, t.tile.pitch)
    srow, ucol, _ = _storage(st.fm, st.contiguous)
    return tile.address(t.row0 + srow, t.col0 + ucol)


def decode_addresses(st: LdmatrixSetup, addr: np.ndarray) -> tuple:
    """(row, col, instance) of the element the tile the case built holds at each slot's address (-1 outside the
    operand's block)."""
    fm, t = st.fm, st.tile
    per_unit = 16 // fm.bits
    lin = t.tile.swizzle(np.asarray(addr, np.int64)) - t.tile.base  # a Swizzle<B,M,S> with S >= B is an involution
    srow, ucol = lin // t.tile.pitch - t.row0, (lin % t.tile.pitch) // 2 - t.col0
    _, _, within = _storage(fm, st.contiguous)
    nrows, ncols = (fm.rows, fm.cols) if st.contiguous == "rows" else (fm.cols, fm.rows)
    scol = ucol * per_unit + within
    ok = (lin >= 0) & (srow >= 0) & (srow < nrows) & (ucol >= 0) & (scol < ncols)
    row, col = (srow, scol) if st.contiguous == "rows" else (scol, srow)
    return tuple(np.where(ok, a, -1) for a in (row, col, 0 * row))


def swizzle_words(s: Swizzle) -> str:
    return f"Swizzle<{s.b},{s.m},{s.s}>"


def read_swizzle(st: LdmatrixSetup, observed: np.ndarray) -> Swizzle | None:
    """The Swizzle<B,4,3> under which the tile's addresses are exactly the ones read, if one is."""
    for s in (st.tile.tile.swizzle,) + tuple(c for c in SWIZZLE_CANDIDATES if c != st.tile.tile.swizzle):
        if np.array_equal(tile_addresses(st, s), observed):
            return s
    return None


def address_map(observed: np.ndarray, model: np.ndarray, offsets: np.ndarray, nbits: int):
    """(the hardware's address map, the model's, the mask of offset bits whose column the data determine): affine
    maps (`affine.solve`) from each slot's element's unswizzled byte offset ('tile offset bit i': where the element
    sits, row after row, before any swizzle) to the address it was read from ('address bit i'), and to the address
    the model says. A swizzle is such a map (Swizzle<3,4,3>: address bit 4 = tile offset bit 4 ^ tile offset bit
    7, ...); an offset bit the probe's elements never vary alone (the tile's base, the block's fixed chunk bits) has
    column 0 by choice, its part folded into the constant."""
    cd = bitmaps.Coding((("tile offset", 1 << nbits),), (("address", 1 << nbits),))
    hw = bitmaps.recover(cd, offsets, observed)
    mdl = bitmaps.recover(cd, offsets, model)
    same = bitmaps.recover(cd, offsets, offsets)
    determined = same.span_bits if same.span_bits != -1 else (1 << nbits) - 1
    return hw, mdl, determined


# ------------------------------------------------------------------------------------------------ records

def _compare(table, model, fm: FragmentMap) -> dict:
    wrong = np.zeros((WARP, fm.values), bool)
    for a, b in zip(table, model):
        wrong |= np.asarray(a) != np.asarray(b)
    out = {"slots": int(wrong.size), "wrong": int(wrong.sum())}
    if out["wrong"]:
        lane, v = np.nonzero(wrong)
        reg, sub = fm.register_of(v)
        out["lanes"] = ranges(np.unique(lane))
        out["registers"] = ranges(np.unique(reg))
        out["first"] = [{"lane": int(l_), "register": int(r_), "sub": int(s_),
                         "expected": [int(model[0][l_, v_]), int(model[1][l_, v_])],
                         "observed": [int(table[0][l_, v_]), int(table[1][l_, v_])]}
                        for l_, v_, r_, s_ in list(zip(lane, v, reg, sub))[:MAX_FIRST]]
    return out


def fragment_record(cid: str, kernel: str, operand: str, probe: str, subject: str, table, fm: FragmentMap) -> dict:
    """A record comparing one observed slot table with the model's map: the maps, the roles and one sentence."""
    cmp = _compare(table, fm.table, fm)
    rec = {"type": "diagnosis", "id": cid, "operand": operand, "probe": probe, "kernel": kernel, **cmp}
    unnamed = int((np.asarray(table[0]) < 0).sum())
    rec["unnamed"] = unnamed
    differ = f"{cmp['wrong']} of {cmp['slots']} slots differ" + (
        f" ({unnamed} hold no element of {operand}'s block)" if unnamed else "") + (
        f", lanes {cmp['lanes']}, registers {cmp['registers']}" if cmp["wrong"] else "")
    hw, model = index_map(fm, operand, table), index_map(fm, operand, fm.table)
    sentence = bitmaps.record_maps(rec, subject, hw, model, differ,
                                   unnamed=f"no slot holds an element of {operand}'s block")
    if unnamed and isinstance(hw, affine.AffineMap) and not affine.differences(hw, model):
        sentence = (f"{subject}: every slot holding an element of {operand}'s block holds the model's; {unnamed} "
                    f"slots hold none ({differ})")
    if not cmp["wrong"]:
        rec.update(status="pass", summary=f"{subject}: every slot holds the element the model's {operand} map gives "
                                          f"({cmp['slots']} slots)")
    else:
        rec.update(status="fail", explanation=sentence, summary=sentence)
    return rec


def ldmatrix_record(cid: str, kernel: str, st: LdmatrixSetup, words, load_tag: str) -> tuple[dict, tuple]:
    """The 'ldmatrix' record of one operand of one case (and the fragment as loaded it decodes)."""
    observed = slot_addresses(st, words)
    model = model_addresses(st)
    intended = tile_addresses(st)
    offsets = tile_addresses(st, Swizzle(0, 4, 3))
    nbits = max(int(np.max(observed)), int(np.max(model)), int(np.max(offsets)), 2).bit_length()
    hw, mdl, determined = address_map(observed, model, offsets, nbits)
    table = decode_addresses(st, observed)
    subject = f"{st.operand} as loaded by ldmatrix ({load_tag})"
    rec = fragment_record(cid, kernel, st.operand, "ldmatrix", subject, table, st.fm)
    built = st.tile.tile.swizzle
    same = bool(np.array_equal(observed, model))
    rec.update(reads_as_model=same, reads_as_intended=bool(np.array_equal(observed, intended)),
               built_swizzle=swizzle_words(built), address_bits_determined=ranges(
                   [i for i in range(nbits) if determined >> i & 1]))
    said = bitmaps.verdict(f"{st.operand}'s ldmatrix addresses", hw, mdl)
    rec.update(address_map=said["hardware_map"], address_roles=said["roles"])
    sw = read_swizzle(st, observed)
    if sw is not None:
        rec["read_swizzle"] = swizzle_words(sw)
    if same:  # the hardware read what the ldmatrix model says of the handed addresses
        rec["status"] = "pass"
        rec["summary"] = (f"{st.operand}: ldmatrix read every unit from the address the model gives for the lanes' "
                          f"addresses" + ("" if rec["reads_as_intended"] else f" ({_unintended(sw, built, rec)}, "
                                                                               "as the case intends)"))
        return rec, table
    bad = np.nonzero(observed != model)
    rec["first_reads"] = [{"lane": int(a), "value": int(b), "expected_address": int(model[a, b]),
                           "observed_address": int(observed[a, b])}
                          for a, b in list(zip(*bad))[:MAX_FIRST]]
    where = f"{st.operand} ({load_tag}): "
    if sw is not None and sw != built:
        head = where + _swizzle_sentence(sw, built)
    else:
        head = where + said["sentence"]
    rec["status"] = "fail"
    rec["explanation"] = head + f"; as loaded, {rec['explanation']}" if rec.get("explanation") else head
    rec["summary"] = rec["explanation"]
    return rec, table


def _unintended(read: Swizzle | None, built: Swizzle, rec: dict) -> str:
    """How a control's reads differ from the tile's elements: by a swizzle, or slot by slot."""
    if read is not None and read != built:
        return _swizzle_sentence(read, built)
    return f"{rec['wrong']} of {rec['slots']} slots hold another element than the tile's"


def _swizzle_sentence(read: Swizzle | None, built: Swizzle) -> str:
    if read is None:
        return f"no Swizzle<B,4,3> of the tile gives the addresses read; the case built it with {swizzle_words(built)}"
    return f"the tile was read with {swizzle_words(read)}, the case built it with {swizzle_words(built)}"


def accumulator_record(cid: str, key: forms.KernelKey, table, replays) -> dict:
    fm = operand_maps(key)["D"]
    rec = fragment_record(cid, key.name, "D", "accumulator", "D fragment", table, fm)
    rec["replays_case"] = replays
    if rec["status"] == "fail" and (not _bijective(fm, table) or replays is False):
        # the MMA may have taken A's or B's registers other than the model's maps say: to D alone that reads as
        # a D map (see the module's docstring), so D is not blamed
        why = ("the slots do not hold every element of D once" if not _bijective(fm, table) else
               "the recovered maps do not reproduce the case's D registers")
        rec["status"] = "inconclusive"
        rec["summary"] = (f"D: inconclusive: {why}; the MMA may take A's or B's registers other than the model's "
                          f"fragments say (which reads like a D map to this probe). As read: {rec['summary']}")
    return rec


def replay(key: forms.KernelKey, prep: Prepared, outs: dict, d_table) -> bool | None:
    """Whether the case's own D registers are those of its A and B as loaded (taken by the model's A and B maps)
    times each other plus C, C and D placed by the recovered D table; None where the table is incomplete."""
    form = forms.variants(key)[prep.launch_variant]
    maps = form_maps(form)
    fm = maps["D"]
    if not _bijective(fm, d_table):
        return None
    a = from_bits(form.atype, unpack(maps["A"], outs["A"]))
    if form.sparse:
        a = expand(form, a[0], fragments.decode_metadata(form, prep.e_words))[None]
    b = from_bits(form.btype, unpack(maps["B"], outs["B"]))
    row, col, inst = d_table
    c_fm = maps["C"]
    if c_fm.bits != fm.bits:  # m8n8k4 .f32.f16: an .f16 C of 4 registers has a map of its own, not D's
        return None
    c_bits = np.zeros((fm.instances, fm.rows, fm.cols), np.uint64)
    c_bits[inst, row, col] = slot_values(c_fm, prep.c_words)
    c = from_bits(key.ctype, c_bits)
    c = c.astype(np.int64) if key.ctype == "s32" else c
    with np.errstate(invalid="ignore", over="ignore"):
        d = product(form, a, b, c)
    got = slot_values(fm, outs["D"])
    want = d[inst, row, col]
    if key.dtype == "s32":
        return bool(np.array_equal(got.astype(np.int64), (want.astype(np.int64) & 0xFFFFFFFF)))
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.array_equal(np.asarray(from_bits(key.dtype, got), np.float64), want.astype(np.float64)))


# ------------------------------------------------------------------------------------------------ running

def _outs(res: dict, i: int) -> dict:
    return {"D": np.asarray(res["d_out"][i]), "A": np.asarray(res["a_out"][i]), "B": np.asarray(res["b_out"][i])}


def diagnose(key: forms.KernelKey, cases: list, cubin_path: str, device, timeout: float = 30.0,
             png_dir: Path | None = None, max_png: int = 16) -> list[dict]:
    """The probe records of failing cases of one kernel: per case, D ('accumulator'), and A and B as loaded ('load'
    from global memory, shared by every case of the kernel; 'ldmatrix' for an operand the case loads from a tile)."""
    from harness.families.mma_sync import kernel as launch
    if not cases:
        return []
    groups: dict[tuple, list] = {}  # cases whose forms share their element maps probe together
    for c in cases:
        groups.setdefault(tuple(map(id, form_maps(c.form).values())), []).append(c)
    if len(groups) > 1:
        return [r for g in groups.values() for r in diagnose(key, g, cubin_path, device, timeout, png_dir, max_png)]
    base = cases[0]
    probed = probe_form(key, base)[1]
    maps = form_maps(probed)
    preps = [prepare(c) for c in cases]
    loads = load_probe(key, base)
    ctas = list(loads)
    plan = []  # per case: (index of its own CTA, [(setup, index of its address-coded CTA)])
    for c, p in zip(cases, preps):
        own = len(ctas)
        ctas.append(p)
        sts = []
        for st in ldmatrix_setups(c, p):
            sts.append((st, len(ctas)))
            ctas.append(_blank(c, p.launch_variant, p.a_words, p.b_words, p.c_words, p.e_words, coded_image(p),
                               p.ld_rows, (p.a_path, p.b_path)))
        plan.append((own, sts))
    try:
        first = device.run(cubin_path, key.name, launch.pack(ctas), timeout)
        loaded = {op: read_load(probed, op, [first[f"{op.lower()}_out"][i] for i in range(len(loads))]) for op in "AB"}
        compensate = {op: (t if _bijective(maps[op], t) and not _same(t, maps[op].table) else None)
                      for op, t in loaded.items()}
        what, acc = accumulator_probe(key, base, compensate)
        second = device.run(cubin_path, key.name, launch.pack(acc), timeout)
    except LaunchFailed as e:
        return [{"type": "diagnosis", "id": c.id, "operand": op, "probe": "accumulator" if op == "D" else "load",
                 "kernel": key.name, "status": e.status, "error": str(e), "summary": f"probe launch failed: {e}"}
                for c in cases for op in "DAB"]
    except ValueError as e:  # a form whose K is too short for the D probe's digits
        return [{"type": "diagnosis", "id": c.id, "operand": "D", "probe": "accumulator", "kernel": key.name,
                 "status": "not-probed", "summary": str(e)} for c in cases]
    d_table = read_accumulator(key, what, [second["d_out"][i] for i in range(len(acc))])
    out, pngs = [], 0
    for c, p, (own, sts) in zip(cases, preps, plan):
        outs = _outs(first, own)
        recs = [accumulator_record(c.id, key, d_table, replay(key, p, outs, d_table))]
        by_op = {st.operand: (st, i) for st, i in sts}
        for op, load in (("A", c.a), ("B", c.b)):
            if op in by_op:
                st, i = by_op[op]
                rec, table = ldmatrix_record(c.id, key.name, st, first[f"{op.lower()}_out"][i], load.tag)
            else:
                rec = fragment_record(c.id, key.name, op, "load", f"{op} as loaded from global memory", loaded[op],
                                      maps[op])
                table = loaded[op]
            rec["table"] = table
            recs.append(rec)
        recs[0]["table"] = d_table
        for rec in recs:
            table = rec.pop("table")
            if png_dir is not None and rec["status"] != "pass" and pngs < max_png:
                rec["png"] = _png(c.id, rec, table, maps[rec["operand"]], png_dir)
                pngs += 1
        out += recs
    if compensate["A"] is not None or compensate["B"] is not None:
        for r in out:
            if r["operand"] == "D":
                r["note"] = ("the D probe's A and B were packed through the load maps observed (" + ", ".join(
                    op for op in "AB" if compensate[op] is not None) + " loaded other than the model says)")
    return out


def _same(table, model) -> bool:
    return all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(table, model))


def _png(cid: str, rec: dict, table, fm: FragmentMap, png_dir) -> str:
    from harness.diagnosis.pictures import safe_name, wrap_text
    png_dir = Path(png_dir)
    png_dir.mkdir(parents=True, exist_ok=True)
    path = png_dir / f"{safe_name(cid)}-{rec['operand']}-{rec['probe']}.png"
    rw, cw = OPERAND_WORDS[rec["operand"]]
    try:
        from harness.diagnosis import pictures
        pictures.ownership_png(fm.table[:2], table[:2], path, f"{cid}  {rec['probe']} probe of {rec['operand']}\n"
                               f"{wrap_text(rec['summary'])}", fm.per_register, cw, rw, ylabel="lane")
        return str(path)
    except ImportError as e:
        return f"not drawn: {e}"
