"""The reference of a tcgen05 case, from the spec: shared-memory images, Tensor Memory images, expected D."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from harness.families.tcgen05.cases import (CONTROL_PREDICTION, EXACT, SMEM_CONTROLS as SMEM_CONTROLS_NAMES, TcCase,
                                            storage_dtype)
from harness.families.tcgen05.datapaths import (SF_ROWS_PER_COPY, SF_TILE_BYTES, SPARSE_NIBBLES,
                                                TF32_NIBBLES, a_lane, base32b_strides,
                                                d_position, decode_d, decompress, meta_chunks, meta_columns, meta_position,
                                                scale_codes_to_values, sf_blocks, sf_smem_offset, shifted_down,
                                                subbyte_bit_addresses,
                                                tmem_a_container, write_bits_anywhere)
from harness.families.tcgen05.forms import SCALE_INPUT_D, Form
from harness.spec import desc_tcgen05, dtypes, idesc, layouts, zero_mask
from harness.spec.layouts import SmemLayout

POISON = 0x7FFF7FFF  # the launch's output buffer before the read-back writes it (a cell never read back)
# Tensor Memory's D columns before an MMA that does not accumulate (enable-input-d off): a pattern no case produces
# (an f32 NaN whose low half is an f16 NaN; as s32 2141290077, far beyond any case's sums), so a D cell the MMA did
# not write, a skipped MMA or a previous case's D left in place, fails the read-back (readback.diff names them)
TMEM_POISON = 0x7FA17E5D
# the disable-output-lane forms' mask: word w masks lanes 32 (w % 4) .. of CTA w // 4, a different pattern per word so
# a misread order shows; a masked lane keeps its D
LANE_MASK = (0x000000FF, 0x0000FF00, 0x00FF0000, 0xFF000000, 0x0F0F0F0F, 0xF0F0F0F0, 0x33333333, 0xCCCCCCCC)

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
    operands: dict | None = None  # 'a', 'b' (values [m, k], [n, k]; a decompressed), 'sfa', 'sfb' (scale codes
    # [m|n, blocks]), 'meta' (a sparse case's nibbles [m, chunks]), 'a_stored' (A as written: compressed if sparse)
    intended: np.ndarray | None = None  # a negative control: the product the descriptors were meant to give
    prediction: str = "exact"  # 'exact': `expected` is the predicted misread; 'undefined': the ISA says nothing
    alloc_cols: int | None = None  # a control that allocates fewer Tensor Memory columns than the case uses
    # [m, n]: D elements the prediction says keep the Tensor Memory poison (a wrong-m / wrong-n control's smaller MMA
    # does not write them); None: every element is written
    keeps_poison: np.ndarray | None = None
    # [m, n]: D elements the ISA leaves undefined (the row a shift brings in), excluded from the comparison and counted
    # in the record as not checked, with `unchecked_why`; their `expected` is a placeholder (0), never compared
    unchecked: np.ndarray | None = None
    unchecked_why: str = ""


@dataclass(frozen=True)
class ChosenOperands:
    """Operand values a probe chooses instead of the case's random draw: A [M, K] and B [N, K] values, and for the
    block-scaled kinds the scale-factor codes [M, blocks] / [N, blocks]. C is zero (the probe cases have
    scale_d 0)."""
    a: np.ndarray
    b: np.ndarray
    sfa: np.ndarray | None = None
    sfb: np.ndarray | None = None

    def __post_init__(self):
        if np.ndim(self.a) != 2 or np.ndim(self.b) != 2 or np.shape(self.a)[1] != np.shape(self.b)[1]:
            raise ValueError("chosen operands: A is [M, K] and B is [N, K]")
        if (self.sfa is None) != (self.sfb is None):
            raise ValueError("chosen operands: scale factors of both A and B, or of neither")


def _draw(rng, t: str, shape):
    return rng.choice(EXACT[t], size=shape)


def _bits(t: str, v):
    return dtypes.get(t).to_bits(v)


def _acc_bits(dtype: str, v):
    if dtype == "s32":
        return (np.asarray(v, np.int64) & 0xFFFFFFFF).astype(np.uint64)
    return dtypes.get(dtype).to_bits(v)


def operand_layout(form, t, rows, k, major, swizzle, start) -> SmemLayout:
    st = storage_dtype(form, t)
    if swizzle == "128B_base32b":
        lbo, sbo = base32b_strides(st, rows, k)
    else:
        lbo, sbo = layouts.packed_strides(major, swizzle, st, rows, k)
    lay = SmemLayout(major, swizzle, st, rows, k, lbo, sbo, start)
    layouts.validate(lay)
    return lay


def _desc(lay: SmemLayout, arch: str) -> int:
    return desc_tcgen05.encode_tcgen05_smem_desc(lay.start, lay.lbo, lay.sbo, lay.swizzle, 0, "relative", arch)


def prepare(c: TcCase, arch: str = "sm_100a", operands: ChosenOperands | None = None) -> TcPrepared:
    """Images, parameters, Tensor Memory image and expected D of a case; its operands drawn from the case's seed,
    or `operands` (a probe's chosen values, C = 0) placed exactly as drawn ones would be."""
    f, cg = c.form, c.form.cta_group
    rng = np.random.default_rng(c.seed)
    M, N, K = c.m, c.n, c.k
    if operands is None:
        a = _draw(rng, c.atype, (M, K))
        b = _draw(rng, c.btype, (N, K))
        a_stored, k_stored, nibbles = a, K, None
        if f.sparse:  # A is stored compressed (K/2 per row); the metadata says where each stored element belongs
            k_stored = K // 2
            a_stored = _draw(rng, c.atype, (M, k_stored))
            choices = TF32_NIBBLES if f.kind == "tf32" else SPARSE_NIBBLES
            nibbles = rng.choice(np.array(choices), size=(M, meta_chunks(f.kind, K)))
            a = decompress(f.kind, a_stored, nibbles)
        cm = rng.integers(-8, 9, size=(M, N)).astype(np.float64)
    else:
        if operands.a.shape != (M, K) or operands.b.shape != (N, K) or c.scale_d or c.control or f.sparse:
            raise ValueError(f"{c.id}: chosen operands are A [{M}, {K}] and B [{N}, {K}] of a dense case with C "
                             "off and no control")
        a, b, cm = np.asarray(operands.a, np.float64), np.asarray(operands.b, np.float64), np.zeros((M, N))
        a_stored, k_stored, nibbles = a, K, None
    b_eff = b.copy()
    if c.zero_mask is not None:
        zero = np.array(zero_mask.zero_column_mask_bits(c.zero_mask, M, N), bool)
        b_eff[zero, :] = 0
    sfa = sfb = None
    if f.block_scaled:
        if N > SF_ROWS_PER_COPY or M // cg > SF_ROWS_PER_COPY:
            raise ValueError(f"{c.id}: the kernel copies one 128-row block of scale factors per operand")
        if cg == 2 and M == 128:
            raise ValueError(f"{c.id}: B's factors of an M=128 pair take CUTLASS's 2x2 layout (sf_tmem_position "
                             "'2x2'), which one 32x128b.warpx4 copy cannot produce; not modelled in prepare")
        blocks = sf_blocks(f)
        if operands is None:
            sfa = rng.integers(126, 129, size=(M, blocks))  # ue8m0 exponents: scales 0.5, 1, 2
            sfb = rng.integers(126, 129, size=(N, blocks))
            if f.scale_type == "ue4m3":  # ue4m3 codes of 0.5, 1, 2
                sfa = rng.choice([0x30, 0x38, 0x40], size=(M, blocks))
                sfb = rng.choice([0x30, 0x38, 0x40], size=(N, blocks))
        elif operands.sfa is None or operands.sfa.shape != (M, blocks) or operands.sfb.shape != (N, blocks):
            raise ValueError(f"{c.id}: chosen scale-factor codes are [{M}, {blocks}] and [{N}, {blocks}]")
        else:
            sfa, sfb = np.asarray(operands.sfa), np.asarray(operands.sfb)
        bk = K // blocks
        a_s = a * np.repeat(scale_codes_to_values(f.scale_type, sfa), bk, axis=1)
        b_s = b_eff * np.repeat(scale_codes_to_values(f.scale_type, sfb), bk, axis=1)
        prod = a_s @ b_s.T
    elif f.variant == "ashift":  # A's rows shifted down by one in Tensor Memory (ASHIFT_UNDEFINED); row 0 a placeholder
        prod = np.vstack([np.zeros((1, K)), a[:-1]]) @ b_eff.T
    else:
        prod = a @ b_eff.T
    # a collector form issues f.mmas MMAs, the later ones accumulating; scale-input-d scales the input D by 2^-s
    sid = SCALE_INPUT_D if f.variant in ("sid", "dol_sid") else 0
    expected = f.mmas * prod + (cm * 2.0 ** -sid if c.scale_d else 0)
    if c.dtype != "s32":
        t = dtypes.get(c.dtype)
        assert np.array_equal(t.from_bits(t.to_bits(expected)), expected), f"{c.id}: reference is not exact"

    # TMEM columns: D, then A (TS), then the two scale-factor groups (4 columns each), then the sparsity metadata
    # (4-column aligned, as CUTLASS's tmem_e_frg assumes; a selector s puts it s columns after that address)
    dcols = d_columns(c)
    col = -(-dcols // 8) * 8
    a_col = a_cols = 0
    if f.a_src == "TS":
        abits = dtypes.get(storage_dtype(f, c.atype)).bits
        a_col, a_cols = col, -(-(k_stored * abits // 32) // 8) * 8
        col += a_cols
    sf_a = sf_b = 0
    if f.block_scaled:
        sf_a, sf_b = col, col + 8
        col += 16
    meta_col = meta_cols = 0
    if f.sparse:
        meta_col = -(-col // 4) * 4
        meta_cols = c.sp_selector + meta_columns(f.kind)
        col = meta_col + meta_cols
    read_cols = max(8, col)
    alloc = max(32, 1 << (read_cols - 1).bit_length())
    ctas = cg
    tmem_in = np.zeros((ctas, 128, read_cols), np.uint32)
    cta, lane, dcol, half = d_position(M, N, cg, f.ws, c.dtype)
    if not c.scale_d:  # every lane of D's columns (A, the factors and the metadata sit after them)
        tmem_in[:, :, :dcols] = TMEM_POISON
        assert not np.any(_acc_bits(c.dtype, expected) == TMEM_POISON), f"{c.id}: D holds the poison pattern"
    if c.scale_d:
        bits = _acc_bits(c.dtype, cm)
        if c.dtype == "f16":
            np.bitwise_or.at(tmem_in, (cta, lane, dcol), (bits << (16 * half).astype(np.uint64)).astype(np.uint32))
        else:
            tmem_in[cta, lane, dcol] = bits.astype(np.uint32)

    images, params = [], []
    rows_a, cols_b = M // cg, N // cg
    for r in range(ctas):
        a_part, b_part = a_stored[r * rows_a:(r + 1) * rows_a], b[r * cols_b:(r + 1) * cols_b]
        if f.sparse:  # this CTA's rows' nibbles, at the metadata address (+ selector) of its own Tensor Memory
            lane, mcol, bit = meta_position(f.kind, rows_a)
            nib = nibbles[r * rows_a:(r + 1) * rows_a].astype(np.uint64)
            np.bitwise_or.at(tmem_in[r], (lane, meta_col + c.sp_selector + mcol),
                             (nib << bit.astype(np.uint64)).astype(np.uint32))
        a_lay = operand_layout(f, c.atype, rows_a, k_stored, c.major_a, c.swizzle_a, 0)
        b_start = -(-layouts.footprint(a_lay)[1] // 1024) * 1024
        b_lay = operand_layout(f, c.btype, cols_b, K, c.major_b, c.swizzle_b, b_start)
        if c.b_atoms == "cutlass_base32b":  # CUTLASS's packed strides: LBO 512 between MN atoms, SBO over 4 K-rows
            lbo, sbo = layouts.packed_strides("MN", "128B_base32b", storage_dtype(f, c.btype), cols_b, K)
            b_lay = layouts.validate(b_lay.moved(lbo=lbo, sbo=sbo))
        end = layouts.footprint(b_lay)[1]
        sf_start = -(-end // 1024) * 1024
        size = sf_start + (2 * SF_TILE_BYTES if f.block_scaled else 0)  # A's factors, then B's (512 bytes per 128 rows)
        img = np.zeros(-(-size // 16) * 16, np.uint8)
        if f.a_src == "SS":
            _write_operand(f, c.atype, a_lay, _bits(c.atype, a_part), img)
        else:  # A in TMEM: row -> lane (this CTA's rows), K packed along 32-bit columns
            _write_tmem_rows(tmem_in[r], a_col, tmem_a_container(c.atype, _bits(c.atype, a_part)),
                             dtypes.get(storage_dtype(f, c.atype)).bits, a_lane(M, np.arange(rows_a)))
        _write_operand(f, c.btype, b_lay, _bits(c.btype, b_part), img)
        desc_b = _desc(b_lay, arch)
        p = {"desc_a": _desc(a_lay, arch) if f.a_src == "SS" else 0, "desc_b": desc_b,
             "idesc": idesc.encode_idesc(c.idesc()), "alloc_cols": alloc, "read_cols": read_cols,
             "enable_input_d": c.scale_d, "a_tmem_col": a_col, "a_tmem_cols": a_cols,
             "zero_mask": zero_mask.encode_zero_column_mask(c.zero_mask) if c.zero_mask else 0,
             "sf_col_a": sf_a, "sf_col_b": sf_b, "sf_desc_a": 0, "sf_desc_b": 0,
             "sp_meta_col": meta_col, "sp_meta_cols": meta_cols}
        if f.block_scaled:
            # CUTLASS's scale-factor atom (sf_smem_offset): 32 rows of 16 bytes per 128 rows/columns and 4 blocks
            # (a second atom 512 bytes on for K = 96 .block16's factors 4-5; with at most 128 rows an operand no
            # 128-row step is taken, so one K atom or two lay out alike), which
            # tcgen05.cp 32x128b.warpx4 puts in every lane quarter (sf_tmem_position). Each CTA holds its own A
            # rows' factors and the factors of all N columns of B (CUTLASS's TiledMMA_SF: a 1-CTA MMA over N).
            for which, sf, start in (("a", sfa[r * rows_a:(r + 1) * rows_a], sf_start),
                                     ("b", sfb, sf_start + SF_TILE_BYTES)):
                mn, blk = np.meshgrid(np.arange(sf.shape[0]), np.arange(sf.shape[1]), indexing="ij")
                img[start + sf_smem_offset(mn, blk)] = sf.astype(np.uint8)
                # K-major, no swizzle: 8-row core matrices of 16-byte rows, 128 bytes apart (SBO)
                p[f"sf_desc_{which}"] = desc_tcgen05.encode_tcgen05_smem_desc(start, 16, 128, "none", 0, "relative", arch)
        images.append(img)
        params.append(p)
    prep = TcPrepared(c, images, params, tmem_in, expected, read_cols,
                      {"a": a, "b": b, "sfa": sfa, "sfb": sfb, "meta": nibbles, "a_stored": a_stored})
    if f.variant in ("dol", "dol_sid"):  # masked lanes keep what was stored: C (unscaled), or the poison
        for prm in params:
            prm.update({f"lane_mask{i}": w for i, w in enumerate(LANE_MASK)})
        masked = ((np.asarray(LANE_MASK, np.uint64)[4 * cta + lane // 32] >> (lane % 32).astype(np.uint64)) & 1) == 1
        if c.scale_d:
            prep.expected = np.where(masked, cm, expected)
        else:
            prep.keeps_poison = masked
    if f.variant in UNDEFINED_ROWS:
        _undefined_rows(prep)
    return _apply_control(prep, a_lay, b_lay, cm, arch) if c.control else prep


# The shift qualifiers' rows the ISA leaves undefined: excluded from the comparison, counted in the record as not
# checked, with this reason (readback.diff); every other element is compared exactly.
UNDEFINED_ROWS = {
    "ashift": ("PTX ISA 9.7.16.10.9.1 (tcgen05.mma): '.ashift shifts the rows of the A matrix down by one row, except "
               "for the last row in the Tensor Memory': D's row r (r >= 1) is A's row r - 1 times B (plus C); what A's "
               "row 0 then holds is not stated, so D's row 0 is not checked"),
    "shift_down": ("PTX ISA 9.7.16.9.3 (tcgen05.shift): 'shifting of 32-byte elements downwards across all the rows, "
                   "except the last, by one row' (shape .31x256b, 9.7.16.2.3), after the MMA (a pipelined pair, "
                   "9.7.16.6): lanes 1-31 of D's first 8 columns take the lane above; what lane 0 then holds is not "
                   "stated, so its elements in those columns are not checked"),
}


def _undefined_rows(prep: TcPrepared) -> None:
    """A shift form's prediction: the defined elements as the ISA says (ashift: already in the product; tcgen05.shift:
    moved here, through D's data path), the undefined ones marked and their placeholder 0."""
    c = prep.case
    if c.form.variant == "ashift":
        if c.form.cta_group != 1 or c.m != 128:
            raise ValueError(f"{c.id}: .ashift is modelled for M = 128 with one CTA (D's rows on lanes 0-127)")
        undefined = np.zeros((c.m, c.n), bool)
        undefined[0] = True
    else:  # tcgen05.shift.down [d_tmem]: D's address, lane 0, column 0
        source, undefined = shifted_down(c.m, c.n, c.form.cta_group, c.form.ws, c.dtype)
        prep.expected = prep.expected.ravel()[source].reshape(c.m, c.n)
    prep.expected = np.where(undefined, 0.0, prep.expected)
    prep.unchecked, prep.unchecked_why = undefined, UNDEFINED_ROWS[c.form.variant]


def _wrong_layout(name: str, lay: SmemLayout) -> SmemLayout:
    if name == "wrong-swizzle":
        return lay.moved(swizzle={"none": "128B", "32B": "none", "64B": "32B", "128B": "64B"}[lay.swizzle])
    if name == "swapped-lbo-sbo":
        return lay.moved(lbo=lay.sbo, sbo=lay.lbo)
    if name == "start+16":
        return lay.moved(start=lay.start + 16)
    return lay


def _apply_control(prep: TcPrepared, a_lay: SmemLayout, b_lay: SmemLayout, cm, arch: str) -> TcPrepared:
    """Turn a prepared positive case (one CTA) into its negative control: change the descriptor, and predict
    what the hardware then computes, from the same models the positive cases use."""
    c, (img,), (p,) = prep.case, prep.images, prep.params
    name, _, target = c.control.partition("@")
    prep.intended = prep.expected
    a, b = prep.operands["a"], prep.operands["b"]
    acc = cm if c.scale_d else 0
    if CONTROL_PREDICTION.get(name) in ("undefined", "observation"):  # an encoding the ISA forbids (a public bug)
        prep.prediction = CONTROL_PREDICTION[name]
        if name == "version-cleared":  # bits 46-48 hold 0b001: clearing them clears bit 46 (triton#8032)
            p[f"desc_{target.lower()}"] &= ~(0x7 << 46)
        elif name == "n-above-256":  # the N field written unmasked for N = 512 (triton#8910)
            p["idesc"] = (p["idesc"] & ~(0x3F << 17)) | ((512 >> 3) << 17)
        elif name == "m64-collision":  # M = 64 packed as M >> 4 at bit 24 of a block-scaled idesc (TRT-LLM#19183)
            p["idesc"] = (p["idesc"] & ~(0x3 << 27)) | ((64 >> 4) << 24)
        elif name == "tmem-beyond-alloc":  # D's columns 128..255 are not allocated
            prep.alloc_cols = 128
        else:
            raise ValueError(f"{c.id}: no encoding for control {name!r}")
        return prep
    if name in SMEM_CONTROLS_NAMES:
        bad = _wrong_layout(name, b_lay if target == "B" else a_lay)
        layouts.validate(bad)
        need = -(-layouts.footprint(bad)[1] // 16) * 16
        if need > img.size:  # the misread reaches past the image: it reads zeros there
            img = np.concatenate([img, np.zeros(need - img.size, np.uint8)])
            prep.images = [img]
        t = c.btype if target == "B" else c.atype
        read = dtypes.get(t).from_bits(layouts.read_image(bad, img))
        a_r, b_r = (a, read) if target == "B" else (read, b)
        p[f"desc_{target.lower()}"] = _desc(bad, arch)
        prep.expected = a_r @ b_r.T + acc
    else:  # wrong-m / wrong-n: the smaller MMA's D through its data path, read back through the case's
        m2, n2 = (c.m // 2, c.n) if name == "wrong-m" else (c.m, c.n // 2)
        if c.form.a_src == "TS":  # A sits on the lanes of M's data path; the smaller M reads its own lanes
            lane_of = a_lane(c.m, np.arange(c.m))
            row_at_lane = {int(lane): r for r, lane in enumerate(lane_of)}
            a_eff = a[[row_at_lane[int(lane)] for lane in a_lane(m2, np.arange(m2))]]
        else:
            a_eff = a[:m2]
        small = a_eff @ b[:n2].T + (cm[:m2, :n2] if c.scale_d else 0)
        tm = prep.tmem_in.copy()
        cta, lane, col, half = d_position(m2, n2, 1, c.form.ws, c.dtype)
        tm[cta, lane, col] = _acc_bits(c.dtype, small).astype(np.uint32)
        prep.expected = decode_d(c, tm)
        if not c.scale_d:  # the cells the smaller MMA leaves alone keep the poison stored before it
            written = np.zeros(tm.shape, bool)
            written[cta, lane, col] = True
            ccta, clane, ccol, _ = d_position(c.m, c.n, 1, c.form.ws, c.dtype)
            prep.keeps_poison = ~written[ccta, clane, ccol]
        p["idesc"] = idesc.encode_idesc(replace(c.idesc(), m=m2, n=n2))
    if c.dtype != "s32":
        t = dtypes.get(c.dtype)
        assert np.array_equal(t.from_bits(t.to_bits(prep.expected)), prep.expected, equal_nan=True), \
            f"{c.id}: misread is not exact"
    if np.array_equal(prep.expected, prep.intended, equal_nan=True):
        raise AssertionError(f"{c.id}: the control reads the intended product: it could not fail")
    return prep


def _write_operand(form: Form, t: str, lay: SmemLayout, bits_: np.ndarray, img: np.ndarray) -> None:
    width = dtypes.get(t).bits
    if lay.dtype == "u8" and width < 8:
        layouts.check_distinct(lay)
        write_bits_anywhere(img, subbyte_bit_addresses(lay, width), bits_, width)
    else:
        layouts.write_image(lay, bits_, img)


def _write_tmem_rows(tm: np.ndarray, col0: int, bits: np.ndarray, width: int, lanes) -> None:
    per = 32 // width
    for j in range(bits.shape[1]):
        tm[lanes, col0 + j // per] |= (bits[:, j].astype(np.uint64) << np.uint64((j % per) * width)).astype(np.uint32)


