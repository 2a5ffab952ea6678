"""Every tcgen05 data-layout model of harness/families/tcgen05/cases.py against CUTLASS's C++ CuTe layouts, evaluated on the
host (tests/oracles/cutlass_tcgen05_layouts.cpp): the accumulator data paths (1-CTA, CTA pair, .ws), A in Tensor
Memory, the block-scale factors (shared-memory atom, the tcgen05.cp shape that moves them, their Tensor Memory
layout, the values of ue8m0/ue4m3 codes), the 4/6-bit f8f6f4 operands in shared memory, the e2m1 pairs of the mxf4
kinds, and the 128B swizzle with 32-byte atomicity. No GPU; the program is built once with g++ and cached."""
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from oracles import cutlass_cpp  # noqa: E402

from harness import registry  # noqa: E402
from harness.contract import case_keys  # noqa: E402
from harness.spec import dtypes, idesc, layouts
from harness.families.tcgen05 import cases as T, datapaths as DP, forms as tcgen05, readback as RB, reference as R  # noqa: E402,E501
from harness.spec.layouts import SmemLayout  # noqa: E402

pytestmark = [pytest.mark.cutlass, pytest.mark.skipif(cutlass_cpp.skip_reason() is not None,
                                                      reason=str(cutlass_cpp.skip_reason()))]


@pytest.fixture(scope="module")
def nv():
    return cutlass_cpp.run_json("cutlass_tcgen05_layouts.cpp")


def _cells(entry, width):
    return np.array(entry["cells"]).reshape(-1, width)


# ------------------------------------------------------------------------------------------------ accumulators

def test_accumulator_data_paths_match_cutlass_tmem_frg(nv):
    """D[row, col] of CTA 0 -> (lane, column, half): tmem_frg_1sm (layouts D, F), tmem_frg_2sm (A: M=256 pair,
    B: M=128 pair, column halves folded), tmem_frg_ws (E: M=64 column halves, G: M=32 column quarters), f16."""
    seen = set()
    for e in nv["acc"]:
        m, n, nsm = e["m"], e["n"], e["nsm"]
        dtype = "f32" if e["bits"] == 32 else "f16"
        got = _cells(e, 3).reshape(m, n, 3)
        cta, lane, col, half = DP.d_position(m * nsm, n, nsm, e["kind"] == "ws", dtype)
        assert (cta[:m] == 0).all()
        mine = np.stack([lane[:m], col[:m], half[:m]], axis=-1)
        bad = np.argwhere((mine != got).any(axis=-1))
        assert bad.size == 0, (f"{e['kind']} M={m * nsm} N={n} {dtype}: D{tuple(bad[0])} model lane/col/half "
                               f"{tuple(mine[tuple(bad[0])])}, CUTLASS {tuple(got[tuple(bad[0])])}")
        seen.add((e["kind"], m))
    assert {("1sm", 128), ("1sm", 64), ("2sm", 128), ("2sm", 64), ("ws", 128), ("ws", 64), ("ws", 32)} <= seen


def test_a_in_tensor_memory_matches_cutlass(nv):
    """A[row, k] -> (lane, column, sub-word index) for UMMA_TS (NonInterleaved): rows on D's lanes, K packed
    along 32-bit columns, lower k in the lower bits. The project has no cta_group::2 TS form; CUTLASS's
    (Duplicated: rows 0..63 on lanes 0..63 and again on 64..127) is checked to be what it says."""
    for e in nv["a_tmem"]:
        m, k, bits = e["m"], e["k"], e["bits"]
        got = _cells(e, 3).reshape(m, k, 3)
        kk = np.arange(k)[None, :] + 0 * np.arange(m)[:, None]
        if e["frg"] == "2sm_duplicated":
            assert np.array_equal(got[:, :, 0], np.arange(m)[:, None] + 0 * kk)
            assert not any(f.cta_group == 2 and f.a_src == "TS" for f in tcgen05.all_forms())
            continue
        lane = DP.a_lane(m, np.arange(m))[:, None] + 0 * kk
        per = 32 // bits
        mine = np.stack([lane, kk // per, kk % per], axis=-1)
        assert np.array_equal(mine, got), (m, k, bits)
    # and the writer puts element j of a row at bits (j % per) * width of column j // per
    tm = np.zeros((128, 8), np.uint32)
    R._write_tmem_rows(tm, 0, np.arange(32)[None, :].repeat(2, 0).astype(np.uint64) & 0xFF, 8, np.array([5, 9]))
    assert tm[5, 1] == 4 | 5 << 8 | 6 << 16 | 7 << 24


# ------------------------------------------------------------------------------------------------ scale factors

def test_scale_factor_tensor_memory_layout_matches_cutlass_tmem_sf_frg(nv):
    """(row|column mn, factor s, replica) -> (lane, column, byte) of tmem_sf_frg, 4x1 (A and B, 1 CTA and pairs)
    and 2x2 (B of an M=128 pair)."""
    for e in nv["sf_tmem"]:
        mn, nsf, reps = e["mn"], e["nsf"], e["replicas"]
        got = _cells(e, 3).reshape(reps, mn, nsf, 3)  # CuTe's first mode: mn + MN * replica
        idx, s = np.meshgrid(np.arange(mn), np.arange(nsf), indexing="ij")
        lanes, col, byte = DP.sf_tmem_position(idx, s, e["mode"], mn)
        assert lanes.shape[-1] == reps, e["mode"]
        for r in range(reps):
            assert np.array_equal(got[r, :, :, 0], lanes[..., r]), (e["mode"], e["operand"], mn, r)
            assert np.array_equal(got[r, :, :, 1], col), (e["mode"], e["operand"], mn)
            assert np.array_equal(got[r, :, :, 2], byte), (e["mode"], e["operand"], mn)


def test_scale_factor_shared_memory_atom_matches_cutlass(nv):
    """Every factor of a tile of 4 K blocks (one atom along K) and of 8 (two: K = 96 .block16's 6 factors reach the
    second), 128-row groups after all of a tile's K atoms."""
    assert {e["k"] // e["vs"] for e in nv["sf_smem"]} == {4, 8}
    for e in nv["sf_smem"]:
        blocks = e["k"] // e["vs"]
        got = np.array(e["bytes"]).reshape(e["m"], blocks)
        mn, blk = np.meshgrid(np.arange(e["m"]), np.arange(blocks), indexing="ij")
        assert np.array_equal(DP.sf_smem_offset(mn, blk, blocks // DP.SF_PER_ATOM), got), (e["vs"], blocks)


def test_k96_scale_factors_sit_where_cutlass_sm103_mainloop_addresses_them(nv):
    """sm_103a's K = 96 MMA takes the address of its first factor (CUTLASS's SM103 mainloop: factor index 3t for
    .block32, 6t for .block16, through a tmem_sf_frg walked one factor a K index) and reads its 3 / 6 factors on from
    there; sf_tmem_position puts factor g of row mn where that tensor does (4 a column's bytes, then 4 columns on), so
    .block16's factors 4 and 5 sit 4 columns after 0-3. One CTA and a pair's CTA (4x1), A and B."""
    assert {(e["vs"], e["nsm"]) for e in nv["sf_iter"]} == {(16, 1), (32, 1), (16, 2), (32, 2)}
    for e in nv["sf_iter"]:
        mn, nk, reps = e["mn"], e["nk"], e["replicas"]
        got = np.array(e["cells"]).reshape(reps, mn, nk, 3)
        idx, g = np.meshgrid(np.arange(mn), np.arange(nk), indexing="ij")
        lanes, col, byte = DP.sf_tmem_position(idx, g)
        for r in range(reps):
            assert np.array_equal(got[r, ..., 0], lanes[..., r]), (e["vs"], e["operand"], r)
            assert np.array_equal(got[r, ..., 1], col) and np.array_equal(got[r, ..., 2], byte), (e["vs"], e["operand"])
    # the forms' factors per MMA: the ISA's Table 54 (M x 6 for .block16, M x 3 for .block32 at K = 96)
    assert {(f.kind, f.k96_block): DP.sf_blocks(f) for f in tcgen05.k96_forms()} == \
        {("mxf4nvf4", 16): 6, ("mxf4nvf4", 32): 3, ("mxf4", 32): 3}


def _utccp(nv, name):
    e = next(u for u in nv["utccp"] if u["op"] == name)
    return e, np.array(e["cells"]).reshape(e["replicas"], e["rows"], e["bits"] // 32, 2)


def test_the_kernel_copies_scale_factors_with_cutlass_utccp_shape(nv):
    """CUTLASS's block-scaled collectives use SM100_UTCCP_4x32dp128bit_{1,2}cta = tcgen05.cp 32x128b.warpx4:
    source row r (16 bytes) -> lane r + 32 p of every quarter p, 32-bit word w of the row -> column w."""
    e, cells = _utccp(nv, "32x128b.warpx4")
    p, r, w = np.meshgrid(np.arange(4), np.arange(32), np.arange(4), indexing="ij")
    assert np.array_equal(cells[..., 0], r + 32 * p) and np.array_equal(cells[..., 1], 32 * w)
    for f in tcgen05.all_forms():
        if f.block_scaled:
            assert f"tcgen05.cp.cta_group::{f.cta_group}.32x128b.warpx4" in tcgen05.scale_copy(f)


def test_smem_atom_then_copy_lands_where_the_mma_reads(nv):
    """Compose the three NVIDIA facts: the smem atom (byte of factor (mn, b)), the copy (row r -> lanes r+32p,
    bytes along columns) and tmem_sf_frg: they must agree with each other and with the model."""
    _, cells = _utccp(nv, "32x128b.warpx4")
    mn, blk = np.meshgrid(np.arange(128), np.arange(4), indexing="ij")
    off = DP.sf_smem_offset(mn, blk)
    row, q = off // 16, off % 16
    lanes_copy = cells[:, row, q // 4, 0].transpose(1, 2, 0)  # [mn, b, replica]
    col_copy = cells[0, row, q // 4, 1] // 32
    lanes, col, byte = DP.sf_tmem_position(mn, blk)
    assert np.array_equal(lanes_copy, lanes) and np.array_equal(col_copy, col) and np.array_equal(q % 4, byte)


SCALED = [c for _, cs in T.all_cases() for c in cs if c.form.block_scaled] + \
    [c for _, cs in T.all_cases("sm_103a") for c in cs if c.form.k96_block]  # sm_103a's K = 96: its own cases


@pytest.mark.parametrize("case", SCALED, ids=lambda c: c.id)
def test_prepared_scale_factors_reach_the_lanes_the_mma_reads(case, nv):
    """Simulate the kernel's tcgen05.cp 32x128b.warpx4 copies (forms.scale_copies: copy t from 512 t bytes on in the
    image to 4 t columns on) on each CTA's prepared image, then read every factor where tmem_sf_frg says the MMA takes
    it: A's rows of this CTA, all N columns of B (CUTLASS's TiledMMA_SF)."""
    _, cells = _utccp(nv, "32x128b.warpx4")
    prep = R.prepare(case, "sm_103a" if case.form.k96_block else "sm_100a")
    cg, copies = case.form.cta_group, tcgen05.scale_copies(case.form)
    text = tcgen05.scale_copy(case.form)  # what the kernel issues: copy t 4 t columns and 512 t bytes on
    assert text.count("tcgen05.cp") == 2 * copies and all(
        f"sf{w} + {DP.SF_PER_ATOM * t}u), \"l\"(p.sf_desc_{w} + window_field + {DP.SF_ATOM_BYTES * t >> 4}ull)" in text
        for w in "ab" for t in range(1, copies))
    for r in range(cg):
        img, p = prep.images[r], prep.params[r]
        for which, codes in (("a", prep.operands["sfa"][r * case.m // cg:(r + 1) * case.m // cg]),
                             ("b", prep.operands["sfb"])):
            start = (p[f"sf_desc_{which}"] & 0x3FFF) << 4
            tmem = np.zeros((128, 16 * copies), np.uint8)  # 4 columns x 4 bytes a copy
            for t in range(copies):
                src = img[start + DP.SF_ATOM_BYTES * t:start + DP.SF_ATOM_BYTES * (t + 1)].reshape(32, 16)
                for rep in range(4):
                    for w in range(4):
                        tmem[cells[rep, :, w, 0], 16 * t + 4 * w:16 * t + 4 * w + 4] = src[:, 4 * w:4 * w + 4]
            mn, blk = np.meshgrid(np.arange(codes.shape[0]), np.arange(codes.shape[1]), indexing="ij")
            lanes, col, byte = DP.sf_tmem_position(mn, blk)
            for rep in range(4):
                assert np.array_equal(tmem[lanes[..., rep], 4 * col + byte], codes), (case.id, r, which, rep)


def test_scale_factor_codes_decode_as_ml_dtypes(nv):
    """ue8m0: 2^(code-127), 0xFF NaN (float8_e8m0fnu); ue4m3: e4m3 with the sign bit clear (float8_e4m3fn)."""
    codes = np.arange(256)
    want = codes.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    got = DP.scale_codes_to_values("mxf8f6f4", codes)
    assert np.array_equal(got, want, equal_nan=True) and np.isnan(got[255])
    assert np.array_equal(got[:255], np.exp2(codes[:255] - 127.0))
    codes = np.arange(128)
    want = codes.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    assert np.array_equal(DP.scale_codes_to_values("mxf4nvf4", codes), want, equal_nan=True)
    assert DP.scale_codes_to_values("mxf4nvf4", [0x38])[0] == 1.0
    with pytest.raises(ValueError):
        DP.scale_codes_to_values("mxf4nvf4", [0xB8])


# ------------------------------------------------------------------------------------------------ sub-byte operands

def test_f8f6f4_subbyte_operands_take_8bit_slots_packed_16_per_chunk(nv):
    """CUTLASS types 4/6-bit f8f6f4 operands as *_unpacksmem_t (4/6 value bits) in uint8_t shared memory (one
    8-bit slot of the canonical layout each), loaded by TMA as 16U4_ALIGN16B / 16U6_ALIGN16B: 16 packed values
    then padding in every 16 bytes (the ISA's 'contiguously packed along with padding')."""
    bits = {e["type"].split("_")[0]: e for e in nv["subbyte"]}
    from harness.families.tcgen05.forms import Form
    for t in ("e2m1", "e2m3", "e3m2"):
        e = bits[t]
        assert e["value_bits"] == dtypes.get(t).bits and e["smem_alloc_bits"] == 8
        for kind in ("f8f6f4", "mxf8f6f4"):
            assert T.storage_dtype(Form(kind), t) == "u8"
        lay = SmemLayout("K", "128B", "u8", 16, 128, 16, 1024)
        addr = DP.subbyte_bit_addresses(lay, e["value_bits"])
        byte = layouts.smem_address(lay)
        assert np.array_equal(addr - (byte & ~15) * 8, (byte & 15) * e["value_bits"])
        assert ((addr % 128) + e["value_bits"] <= 16 * e["value_bits"]).all()  # never in the padding


SUBBYTE = [c for _, cs in T.all_cases() for c in cs
           if c.form.kind in ("f8f6f4", "mxf8f6f4") and c.form.a_src == "SS"
           and min(dtypes.get(c.atype).bits, dtypes.get(c.btype).bits) < 8]


@pytest.mark.parametrize("case", SUBBYTE[::3], ids=lambda c: c.id)
def test_prepared_subbyte_operands_read_back_packed(case):
    prep = R.prepare(case)
    cg = case.form.cta_group
    b_start = (prep.params[0]["desc_b"] & 0x3FFF) << 4
    k_a = case.k // 2 if case.form.sparse else case.k  # a sparse A is stored compressed
    for which, t, rows, major, sw, start, k in (
            ("a_stored", case.atype, case.m // cg, case.major_a, case.swizzle_a, 0, k_a),
            ("b", case.btype, case.n // cg, case.major_b, case.swizzle_b, b_start, case.k)):
        lay = R.operand_layout(case.form, t, rows, k, major, sw, start)
        w = dtypes.get(t).bits
        vals = dtypes.get(t).to_bits(prep.operands[which][:rows])
        if w < 8:
            got = DP.read_bits_anywhere(prep.images[0], DP.subbyte_bit_addresses(lay, w), w)
        else:
            got = layouts.read_image(lay, prep.images[0])
        assert np.array_equal(got, vals), (case.id, which)


def test_mxf4_pairs_put_the_lower_element_in_the_low_nibble(nv):
    """cutlass::Array<float_e2m1_t> storage (what TMA moves for the mxf4 kinds, two per byte, no padding)."""
    assert nv["e2m1_pairs"] == [0x7 << (4 * i) for i in range(8)]
    lay = SmemLayout("K", "none", "e2m1", 8, 32, 128, 128)
    bits = np.zeros((8, 32), np.uint64)
    bits[0, 1] = 0x7
    img = np.zeros(2048, np.uint8)
    layouts.write_image(lay, bits, img)
    assert img[0] == 0x70 and img.sum() == 0x70


# ------------------------------------------------------------------------------------------------ 128B swizzle, 32B atoms

def test_sw128_32b_atom_is_four_k_rows_as_layouts_and_every_case_reads_it(nv):
    """CUTLASS's SW128_32B atom (4 K-rows) is what layouts.py computes for 128B_base32b, for CUTLASS's own tiles and
    for every case's operand, the CUTLASS-strided ones ('cutlass_base32b': LBO 512, SBO 512 per MN atom) included;
    those are settled (no `unsettled` mark), and their B image holds B where CUTLASS's reading says."""
    for e in nv["sw128_32b"]:
        assert e["k_rows_per_atom"] == 4 and e["layout_type"] == 1
        mn, k = np.meshgrid(np.arange(e["mn"]), np.arange(e["k"]), indexing="ij")
        got = np.array(e["bytes"]).reshape(e["mn"], e["k"])
        lbo, sbo = e["lbo"] or 512, e["sbo"] or 512
        assert np.array_equal(DP.base32b_cutlass_bytes(mn, k, lbo, sbo), got), e
        lay = SmemLayout("MN", "128B_base32b", "f32", e["mn"], e["k"], lbo, sbo)
        assert np.array_equal(layouts.smem_address(lay), got), e
    cases = [c for _, cs in T.all_cases() for c in cs if "128B_base32b" in (c.swizzle_a, c.swizzle_b)]
    assert cases
    tell = [c for c in cases if c.b_atoms == "cutlass_base32b"]
    assert tell and not any(T.unsettled_reason(c) for c in tell)
    for c in cases:
        prep = R.prepare(c)
        for op, sw, major, rows in (("a", c.swizzle_a, c.major_a, c.m // c.form.cta_group),
                                    ("b", c.swizzle_b, c.major_b, c.n // c.form.cta_group)):
            if sw != "128B_base32b":
                continue
            d = prep.params[0][f"desc_{op}"]
            start, lbo, sbo = (d & 0x3FFF) << 4, ((d >> 16) & 0x3FFF) << 4, ((d >> 32) & 0x3FFF) << 4
            if c in tell:
                assert (lbo, sbo) == (512, 512 * rows // 32), c.id
            mn, k = np.meshgrid(np.arange(rows), np.arange(c.k), indexing="ij")
            addr = DP.base32b_cutlass_bytes(mn, k, lbo, sbo, start)
            assert np.unique(addr).size == addr.size
            got = prep.images[0][addr[..., None] + np.arange(4)].view("<u4")[..., 0]
            t = c.atype if op == "a" else c.btype
            assert np.array_equal(got, dtypes.get(t).to_bits(prep.operands[op][:rows]).astype(np.uint32)), c.id


# ------------------------------------------------------------------------------------------------ unsettled cases

def test_unsettled_cases_are_named_and_their_records_carry_the_reason():
    cases = [c for _, cs in T.all_cases() for c in cs]
    marked = [c for c in cases if T.unsettled_reason(c)]
    assert marked and len(marked) < len(cases)
    assert all(c.form.a_src == "TS" or (c.form.block_scaled and c.form.cta_group == 2) or c.sp_selector
               or c.form.variant for c in marked)
    fam = registry.get("tcgen05")

    def record(c):  # as the engine gives it: the readback's record with what every record of its case carries
        prep = R.prepare(c)
        return {**RB.diff(prep, np.zeros((c.form.cta_group, 128, prep.read_cols), np.uint32), [0] * c.form.cta_group),
                **case_keys(fam, c)}
    c = marked[0]
    assert record(c)["unsettled"] == T.unsettled_reason(c)
    assert case_keys(fam, c)["unsettled"] == T.unsettled_reason(c)  # in every record of the case, run or not
    assert "unsettled" not in record(next(x for x in cases if not T.unsettled_reason(x)))


# ------------------------------------------------------------------------------------------------ sparse metadata

KIND_OF_META_BITS = {32: "tf32", 16: "f16", 8: "i8", 4: "mxf4"}  # the element width tmem_e_frg is asked for


def test_sparse_metadata_in_tensor_memory_matches_cutlass_tmem_e_frg(nv):
    """Element by element: the TMEM (lane, column, first bit) of logical A element (row, k) of one sparse MMA in
    CUTLASS's tmem_e_frg / tmem_e_frg_ws (128 rows, every element width) is where the model puts the nibble of k's
    chunk, plus k's share of the nibble (4 bits over a chunk of 2, 4 or 8 elements)."""
    seen = set()
    for e in nv["meta"]:
        kind = KIND_OF_META_BITS[e["bits"]]
        m, k = e["m"], e["k"]
        got = _cells(e, 3).reshape(m, k, 3)
        chunk = DP.SPARSE_CHUNK[kind]
        assert k == idesc.mma_k(kind, True) and k // chunk == DP.meta_chunks(kind, k)
        lane, col, bit = DP.meta_position(kind, m)
        kk = np.arange(k)
        mine = np.stack([lane[:, kk // chunk], col[:, kk // chunk],
                         bit[:, kk // chunk] + (kk % chunk) * 4 // chunk], axis=-1)
        bad = np.argwhere((mine != got).any(axis=-1))
        assert bad.size == 0, (f"{e['frg']} {kind} E{tuple(bad[0])}: model lane/col/bit {tuple(mine[tuple(bad[0])])},"
                               f" CUTLASS {tuple(got[tuple(bad[0])])}")
        assert int(col.max()) + 1 == DP.meta_columns(kind)
        seen.add((e["frg"], kind))
    assert {("1sm", k) for k in KIND_OF_META_BITS.values()} <= seen and ("ws", "f16") in seen


def test_sparse_decompression_puts_each_unit_where_its_index_says():
    """Worked by hand from PTX ISA 9.7.16.10.8.1-3: f16 chunk nibble 0b1001 (indices 1, 2), tf32 0b1110 (second
    element), mxf4 0b1100 (pairs 0 and 3)."""
    assert DP.decompress("f16", np.array([[5., 7, 1, 2]]), np.array([[0b1001, 0b0100]])).tolist() == \
        [[0, 5, 7, 0, 1, 2, 0, 0]]
    assert DP.decompress("tf32", np.array([[5., 7]]), np.array([[0b1110, 0b0100]])).tolist() == [[0, 5, 7, 0]]
    assert DP.decompress("mxf4", np.arange(1., 5)[None], np.array([[0b1100]])).tolist() == [[1, 2, 0, 0, 0, 0, 3, 4]]
