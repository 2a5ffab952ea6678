"""mma_sync's forms, fragment maps, sparse metadata and ldmatrix models, on the CPU: registers worked out by hand from
the PTX ISA's formulas (9.7.14.5.x, 9.7.14.6.x; groupID g = lane >> 2, threadID_in_group t = lane % 4), written out
literally here (not computed by the model), inverses, and ldmatrix loading operands out of swizzled tiles."""
from __future__ import annotations

import numpy as np
import pytest

from harness.families.mma_sync import fragments as R
from harness.families.mma_sync import ldmatrix as L
from harness.families.mma_sync.forms import MmaForm, Sparsity, all_forms, metadata_threads, selectors
from harness.spec import layouts
from harness.spec.cute_layout import apply_swizzle
from harness.spec.fragments import gather_registers, scatter_registers

# ------------------------------------------------------------------------------------------------ forms


def test_every_listed_form_is_valid_and_distinct():
    forms = all_forms()
    assert len(forms) == len(set(forms)) == 246
    assert sum(f.sparse for f in forms) == 152
    assert {f.shape.value for f in forms if not f.sparse} == {
        "m8n8k4", "m8n8k16", "m8n8k32", "m8n8k128", "m16n8k4", "m16n8k8", "m16n8k16", "m16n8k32", "m16n8k64",
        "m16n8k128", "m16n8k256"}


def test_older_targets_and_older_ptx_list_fewer_forms():
    sm80 = all_forms(sm=80)
    assert not any(f.atype in ("e4m3", "e5m2") or (f.atype == "f64" and f.shape.value != "m8n8k4") for f in sm80)
    assert not any(f.sparsity is Sparsity.SP_ORDERED for f in all_forms(ptx=(8, 4)))
    assert {f.atype for f in all_forms(sm=89)} >= {"e4m3", "e5m2"}


@pytest.mark.parametrize("args,reason", [
    (("m16n8k16", "f16", "bf16", "bf16", "f16"), "accumulate as D/C f32/f32"),
    (("m16n8k16", "f32", "f16", "f16", "f16"), "not f32/f16"),
    (("m16n8k8", "s32", "s8", "s8", "s32"), "takes A.B types"),
    (("m16n8k32", "f32", "e4m3", "e4m3", "f32", "sp", False, None, "row", "col", 0), "takes A.B types"),
    (("m16n8k16", "f32", "f16", "f16", "f32", "dense", True), ".satfinite is for"),
    (("m16n8k256", "s32", "b1", "b1", "s32"), "needs .xor.popc or .and.popc"),
    (("m16n8k16", "f32", "f16", "f16", "f32", "dense", False, None, "col", "col"), "only m8n8k4 .f16"),
    (("m16n8k32", "f32", "f16", "f16", "f32", "sp", False, None, "row", "col", 2), "selector"),
    (("m16n8k64", "s32", "s8", "s8", "s32", "sp", False, None, "row", "col", 1), "one of 0, not 1"),
    (("m16n8k16", "f32", "f16", "f16", "f32", "dense", False, None, "row", "col", 0), "only mma.sp"),
    (("m16n8k4", "f32", "f16", "f16", "f32"), "takes A.B types"),
    (("m8n8k4", "f16", "f16", "f16", "f32"), "not f16/f32"),
    (("m16n8k8", "f64", "f64", "f64", "f64", "sp", False, None, "row", "col", 0), "takes A.B types"),
])
def test_illegal_forms_are_refused_with_a_reason(args, reason):
    with pytest.raises(ValueError, match=reason.replace(".", r"\.")):
        MmaForm(*args)


def test_selectors_and_metadata_threads_follow_the_isa():
    # (shape, atype): (threads of a group holding metadata, selector values) from ISA 9.7.14.6.1
    expected = {("m16n8k16", "f16"): 1, ("m16n8k32", "bf16"): 2, ("m16n8k8", "tf32"): 1, ("m16n8k16", "tf32"): 2,
                ("m16n8k32", "s8"): 2, ("m16n8k64", "u8"): 4, ("m16n8k64", "e4m3"): 4, ("m16n8k64", "s4"): 2,
                ("m16n8k128", "u4"): 4}
    for (shape, atype), threads in expected.items():
        assert metadata_threads(shape, atype) == threads
        assert selectors(shape, atype) == tuple(range(4 // threads))


def test_instruction_text():
    f = MmaForm("m16n8k32", "s32", "u8", "s8", "s32", "sp::ordered_metadata", True, selector=1)
    assert f.instruction() == "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.s8.s32"
    assert f.min_ptx == (8, 5) and f.min_sm == 80
    b1 = MmaForm("m16n8k256", "s32", "b1", "b1", "s32", bitop="and.popc")
    assert b1.instruction() == "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc"


# ------------------------------------------------------------------------------------------------ by hand

LANE = 13  # g = 3, t = 1


def _held(frag, lane=LANE):
    row, col, inst = frag.table
    return [(int(r), int(c)) for r, c in zip(row[lane], col[lane])]


def _run(row, cols):
    return [(row, c) for c in cols]


def _krun(cols, n):
    return [(k, n) for k in cols]


def F(*args, **kw):
    return MmaForm(*args, **kw)


HAND = [  # (form, A, B, C) of lane 13, each element in register order, from the ISA's formulas
    (F("m16n8k8", "f32", "f16", "f16", "f32"), [(3, 2), (3, 3), (11, 2), (11, 3)], [(2, 3), (3, 3)],
     [(3, 2), (3, 3), (11, 2), (11, 3)]),
    (F("m16n8k16", "f16", "f16", "f16", "f16"),
     [(3, 2), (3, 3), (11, 2), (11, 3), (3, 10), (3, 11), (11, 10), (11, 11)], [(2, 3), (3, 3), (10, 3), (11, 3)],
     [(3, 2), (3, 3), (11, 2), (11, 3)]),
    (F("m16n8k4", "f32", "tf32", "tf32", "f32"), [(3, 1), (11, 1)], [(1, 3)], None),
    (F("m16n8k8", "f32", "tf32", "tf32", "f32"), [(3, 1), (11, 1), (3, 5), (11, 5)], [(1, 3), (5, 3)], None),
    (F("m16n8k16", "s32", "s8", "u8", "s32"), _run(3, range(4, 8)) + _run(11, range(4, 8)), _krun(range(4, 8), 3),
     None),
    (F("m16n8k32", "f32", "e4m3", "e5m2", "f32"), _run(3, range(4, 8)) + _run(11, range(4, 8))
     + _run(3, range(20, 24)) + _run(11, range(20, 24)), _krun(range(4, 8), 3) + _krun(range(20, 24), 3), None),
    (F("m8n8k16", "s32", "s8", "s8", "s32"), _run(3, range(4, 8)), _krun(range(4, 8), 3), [(3, 2), (3, 3)]),
    (F("m8n8k32", "s32", "s4", "u4", "s32"), _run(3, range(8, 16)), _krun(range(8, 16), 3), [(3, 2), (3, 3)]),
    (F("m16n8k32", "s32", "s4", "s4", "s32"), _run(3, range(8, 16)) + _run(11, range(8, 16)),
     _krun(range(8, 16), 3), None),
    (F("m16n8k64", "s32", "u4", "u4", "s32"), _run(3, range(8, 16)) + _run(11, range(8, 16))
     + _run(3, range(40, 48)) + _run(11, range(40, 48)), _krun(range(8, 16), 3) + _krun(range(40, 48), 3), None),
    (F("m8n8k128", "s32", "b1", "b1", "s32", bitop="xor.popc"), _run(3, range(32, 64)), _krun(range(32, 64), 3),
     [(3, 2), (3, 3)]),
    (F("m16n8k128", "s32", "b1", "b1", "s32", bitop="and.popc"), _run(3, range(32, 64)) + _run(11, range(32, 64)),
     _krun(range(32, 64), 3), None),
    (F("m16n8k256", "s32", "b1", "b1", "s32", bitop="xor.popc"), _run(3, range(32, 64)) + _run(11, range(32, 64))
     + _run(3, range(160, 192)) + _run(11, range(160, 192)), _krun(range(32, 64), 3) + _krun(range(160, 192), 3),
     None),
    (F("m8n8k4", "f64", "f64", "f64", "f64"), [(3, 1)], [(1, 3)], [(3, 2), (3, 3)]),
    (F("m16n8k4", "f64", "f64", "f64", "f64"), [(3, 1), (11, 1)], [(1, 3)], [(3, 2), (3, 3), (11, 2), (11, 3)]),
    (F("m16n8k8", "f64", "f64", "f64", "f64"), [(3, 1), (11, 1), (3, 5), (11, 5)], [(1, 3), (5, 3)], None),
    # f64 m16n8k16 A: col = 2i + t for even i, 2i - 2 + t for odd i
    (F("m16n8k16", "f64", "f64", "f64", "f64"), [(3, 1), (11, 1), (3, 5), (11, 5), (3, 9), (11, 9), (3, 13), (11, 13)],
     [(1, 3), (5, 3), (9, 3), (13, 3)], None),
    # sparse: A over the compressed columns; lane 13's chunks are 1 (f16 k16) and, for u4 k128, logical 16..31 and
    # 80..95 (firstcol = 16 t, + 64 for a16..a31), compressed 8..15 and 40..47
    (F("m16n8k16", "f32", "f16", "f16", "f32", "sp", selector=0), [(3, 2), (3, 3), (11, 2), (11, 3)],
     [(2, 3), (3, 3), (10, 3), (11, 3)], None),
    (F("m16n8k128", "s32", "u4", "s4", "s32", "sp", selector=0), _run(3, range(8, 16)) + _run(11, range(8, 16))
     + _run(3, range(40, 48)) + _run(11, range(40, 48)), _krun(range(8, 16), 3) + _krun(range(40, 48), 3)
     + _krun(range(72, 80), 3) + _krun(range(104, 112), 3), None),
]


@pytest.mark.parametrize("form,a,b,c", HAND, ids=[h[0].describe() for h in HAND])
def test_lane_13_holds_what_the_isa_says(form, a, b, c):
    assert _held(R.a_map(form)) == a
    assert _held(R.b_map(form)) == b
    if c is not None:
        assert _held(R.c_map(form)) == c


def test_m8n8k4_f16_quad_pairs_by_hand():
    # lane 18: quad pair 0, high group, t = 2; lane 5: quad pair 1, low group, t = 1
    row = F("m8n8k4", "f32", "f16", "f16", "f32", alayout="row", blayout="col")
    col = F("m8n8k4", "f16", "f16", "f16", "f16", alayout="col", blayout="row")
    assert _held(R.a_map(row), 18) == [(6, 0), (6, 1), (6, 2), (6, 3)]
    assert _held(R.a_map(col), 18) == [(4, 2), (5, 2), (6, 2), (7, 2)]
    assert _held(R.b_map(row), 18) == [(0, 6), (1, 6), (2, 6), (3, 6)]
    assert _held(R.b_map(col), 18) == [(2, 4), (2, 5), (2, 6), (2, 7)]
    assert _held(R.c_map(col), 18) == [(6, c) for c in range(8)]
    # f32 C: row = (t & 1) + (i & 2) + 4 high, col = (t & 2) + (i & 1) + (i & 4)
    assert _held(R.c_map(row), 18) == [(4, 2), (4, 3), (6, 2), (6, 3), (4, 6), (4, 7), (6, 6), (6, 7)]
    assert set(R.a_map(row).table[2][5]) == {1} and set(R.a_map(row).table[2][18]) == {0}


def test_every_map_of_every_form_inverts():
    for form in all_forms():
        for frag in (R.a_map(form), R.b_map(form), R.c_map(form)):
            lane, value = frag.inverse
            row, col, inst = frag.table
            assert np.array_equal(lane[inst, row, col], np.broadcast_to(np.arange(32)[:, None], row.shape))
            reg, sub = frag.register_of(value[inst, row, col])
            assert np.array_equal(reg * frag.per_register + sub, np.broadcast_to(np.arange(frag.values), row.shape))


def test_locate_answers_by_hand():
    form = F("m16n8k16", "f32", "bf16", "bf16", "f32")
    assert tuple(map(int, R.a_map(form).locate(11, 10))) == (13, 3, 0)  # a6 of lane 13 = register 3, low half
    assert tuple(map(int, R.b_map(form).locate(10, 3))) == (13, 1, 0)
    assert tuple(map(int, R.c_map(form).locate(11, 3))) == (13, 3, 0)


def test_a_planted_off_by_one_group_is_not_a_bijection_or_disagrees():
    good = R.a_map(F("m16n8k16", "f32", "f16", "f16", "f32"))
    bad = R.FragmentMap("A", 16, 16, 16, 8, lambda lane, v: good.coords((np.asarray(lane) + 4) % 32, v))
    bad.inverse  # still a bijection: only the hand-worked lane catches it
    assert _held(bad) != _held(good)


def test_gather_and_scatter_through_the_spec_fragment():
    rng = np.random.default_rng(5)
    for form in (F("m16n8k16", "f32", "f16", "f16", "f32"), F("m16n8k64", "s32", "s4", "u4", "s32"),
                 F("m16n8k256", "s32", "b1", "b1", "s32", bitop="and.popc")):
        frag = R.a_map(form).spec_fragment()
        m = rng.integers(0, 1 << R.a_map(form).bits, size=(R.a_map(form).rows, R.a_map(form).cols))
        regs = gather_registers(frag, m.astype(np.uint64))
        assert regs.shape == (32, R.a_map(form).registers)
        assert np.array_equal(scatter_registers(frag, regs, m.shape), m)


# ------------------------------------------------------------------------------------------------ metadata

def test_metadata_holders_by_hand():
    # one thread a group (selector 2): row g in bits 0..15, row g + 8 in bits 16..31, chunk c at bits 4c..4c+3
    f16 = F("m16n8k16", "f32", "f16", "f16", "f32", "sp", selector=2)
    assert R.metadata_holders(f16, 3, 1) == (14, 4)
    assert R.metadata_holders(f16, 11, 3) == (14, 28)
    # a thread pair of a 16-bit type (selector 1: threads 2, 3): K split between them, each holding rows g (bits
    # 0..15) and g + 8 (16..31) of its half, chunks 0..3 in the first, 4..7 in the second (as an H100 runs it)
    k32 = F("m16n8k32", "f32", "bf16", "bf16", "f32", "sp::ordered_metadata", selector=1)
    assert R.metadata_holders(k32, 3, 7) == (15, 12)
    assert R.metadata_holders(k32, 11, 0) == (14, 16)
    tf32 = F("m16n8k16", "f32", "tf32", "tf32", "f32", "sp", selector=0)  # chunks of 2: 8 a row, likewise
    assert [R.metadata_holders(tf32, r, c) for r, c in ((0, 0), (8, 3), (0, 4), (8, 7))] == [
        (0, 0), (0, 28), (1, 0), (1, 28)]
    # a thread pair of an 8-bit type (m16n8k32 .s8, selector 1): row g whole in the first, g + 8 in the second
    s8 = F("m16n8k32", "s32", "s8", "s8", "s32", "sp", selector=1)
    assert R.metadata_holders(s8, 3, 7) == (14, 28)
    assert R.metadata_holders(s8, 11, 0) == (15, 0)
    # all four (m16n8k64 8-bit): 4g row g chunks 0..7, 4g+1 row g+8, 4g+2 row g chunks 8..15, 4g+3 row g+8
    k64 = F("m16n8k64", "s32", "s8", "s8", "s32", "sp", selector=0)
    assert [R.metadata_holders(k64, r, c) for r, c in ((3, 0), (11, 0), (3, 8), (11, 15))] == [
        (12, 0), (13, 0), (14, 0), (15, 28)]
    assert not R.metadata_map(f16).held[[12, 13, 15]].any() and R.metadata_map(f16).held[14]


def _sparse_case(form, rng):
    """A dense 2:4 (1:2, 4:8 in pairs) A, its compressed storage and fields, built by hand, not by the model."""
    m, _, k = form.mnk
    bits = R.BITS[form.atype]
    chunk = {32: 2, 16: 4, 8: 4, 4: 8}[bits]
    dense = np.zeros((m, k), np.int64)
    fields = np.zeros((m, k // chunk), np.int64)
    for r in range(m):
        for c in range(k // chunk):
            if bits == 32:
                e = int(rng.integers(2))
                keep = [e]
                fields[r, c] = 0b0100 if e == 0 else 0b1110
            elif bits == 4:
                p0, p1 = sorted(rng.choice(4, 2, replace=False))
                keep = [2 * p0, 2 * p0 + 1, 2 * p1, 2 * p1 + 1]
                fields[r, c] = p0 | p1 << 2
            else:
                i0, i1 = sorted(rng.choice(4, 2, replace=False))
                keep = [i0, i1]
                fields[r, c] = i0 | i1 << 2
            for j in keep:
                dense[r, chunk * c + j] = rng.integers(1, 7)
    return dense, fields


@pytest.mark.parametrize("form", [f for f in all_forms() if f.sparsity is Sparsity.SP_ORDERED and not f.satfinite
                                  and f.atype == f.btype and f.dtype in ("f32", "s32")],
                         ids=lambda f: f.describe())
def test_metadata_round_trips_and_expands_to_the_dense_matrix(form):
    rng = np.random.default_rng(11)
    dense, fields = _sparse_case(form, rng)
    regs = R.encode_metadata(form, fields)
    assert np.array_equal(R.decode_metadata(form, regs), fields)
    assert R.legal_field(form, fields).all()
    cols = R.expand_columns(form, fields)
    compressed = np.take_along_axis(dense, cols, axis=1)
    rebuilt = np.zeros_like(dense)
    np.put_along_axis(rebuilt, cols, compressed, axis=1)
    assert np.array_equal(rebuilt, dense) and (compressed != 0).all()


def test_legal_fields():
    ordered = F("m16n8k16", "f32", "f16", "f16", "f32", "sp::ordered_metadata", selector=0)
    plain = F("m16n8k16", "f32", "f16", "f16", "f32", "sp", selector=0)
    tf32 = F("m16n8k8", "f32", "tf32", "tf32", "f32", "sp", selector=0)
    assert list(R.legal_field(ordered, [0b0100, 0b0001, 0b0101, 0b1110])) == [True, False, False, True]
    assert list(R.legal_field(plain, [0b0100, 0b0001, 0b0101, 0b1111])) == [True, True, False, False]
    assert list(R.legal_field(tf32, [0b0100, 0b1110, 0b1000])) == [True, True, False]


# ------------------------------------------------------------------------------------------------ ldmatrix

def test_ldmatrix_elements_by_hand():
    x4, x4t = L.MatrixMoveForm(4), L.MatrixMoveForm(4, trans=True)
    m, r, c = x4.elements
    assert [(int(m[13, j, h]), int(r[13, j, h]), int(c[13, j, h])) for j in range(4) for h in range(2)] == [
        (j, 3, 2 + h) for j in range(4) for h in range(2)]
    m, r, c = x4t.elements
    assert [(int(r[13, 1, h]), int(c[13, 1, h])) for h in range(2)] == [(2, 3), (3, 3)]
    matrix, row = L.MatrixMoveForm(2).address_rows
    assert (int(matrix[13]), int(row[13])) == (1, 5) and matrix[16] == -1


def test_swizzle_matches_the_spec_and_cute_notation():
    addr = np.arange(0, 1 << 13, 2)
    for name, width in (("none", 16), ("32B", 32), ("64B", 64), ("128B", 128)):
        sw = L.ROW_SWIZZLES[width]
        assert np.array_equal(sw(addr), layouts.swizzle_address(addr, name))
        assert [int(x) for x in sw(addr[::97])] == [apply_swizzle(int(a), (sw.b, sw.m, sw.s)) for a in addr[::97]]
    with pytest.raises(ValueError, match="S >= B"):
        L.Swizzle(3, 4, 2)


def _image(tile: L.SmemTile, matrix_bits: np.ndarray) -> np.ndarray:
    """Write a (rows, cols) .b16 matrix into a shared-memory image through the tile's addresses (by hand)."""
    img = np.zeros(1 << 15, np.uint8)
    r, c = np.indices(matrix_bits.shape)
    a = tile.address(r, c)
    img[a] = matrix_bits & 0xFF
    img[a + 1] = matrix_bits >> 8
    return img


CASES = [  # (form, operand, contiguous storage, tile rows, tile .b16 cols, swizzle row bytes)
    (F("m16n8k16", "f32", "f16", "f16", "f32"), "A", "rows", 64, 64, 128),
    (F("m16n8k16", "f32", "bf16", "bf16", "f32"), "B", "cols", 32, 32, 64),
    (F("m16n8k16", "f32", "f16", "f16", "f32"), "B", "rows", 32, 16, 32),  # N-major B: .trans
    (F("m16n8k32", "s32", "s8", "s8", "s32"), "A", "rows", 32, 32, 64),  # 8-bit pairs as .b16 units
    (F("m16n8k8", "f16", "f16", "f16", "f16"), "A", "cols", 32, 32, 64),  # M-major A: .trans
    (F("m16n8k32", "f32", "f16", "f16", "f32", "sp", selector=0), "A", "rows", 32, 64, 128),  # compressed sparse A
]


@pytest.mark.parametrize("form,operand,contiguous,rows,cols,width", CASES,
                         ids=[f"{c[0].describe()} {c[1]} {c[2]}" for c in CASES])
def test_ldmatrix_from_a_swizzled_tile_yields_the_mma_fragment(form, operand, contiguous, rows, cols, width):
    frag = R.a_map(form) if operand == "A" else R.b_map(form)
    tile = L.SmemTile(rows, cols, L.ROW_SWIZZLES[width], base=1024)
    rng = np.random.default_rng(3)
    units = rng.integers(0, 1 << 16, size=(rows, cols), dtype=np.uint64)
    img = _image(tile, units)
    per_unit = 16 // frag.bits
    # the operand's elements: storage (row, unit col) split into per_unit elements, low bits first
    elem = np.stack([(units >> np.uint64(frag.bits * j)) & np.uint64((1 << frag.bits) - 1)
                     for j in range(per_unit)], axis=-1).reshape(rows, cols * per_unit)
    row0, col0 = 16, 8  # an operand block inside the tile, not at its origin
    r_need = frag.rows if contiguous == "rows" else frag.cols
    c_need = frag.cols if contiguous == "rows" else frag.rows
    block = elem[row0:row0 + r_need, col0 * per_unit:col0 * per_unit + c_need]
    operand_matrix = block if contiguous == "rows" else block.T
    expected = gather_registers(frag.spec_fragment(), operand_matrix)
    move, addresses = L.lane_addresses(frag, contiguous, tile, row0, col0)
    assert move.trans == (contiguous != ("rows" if operand == "A" else "cols"))
    assert np.array_equal(L.ldmatrix(move, addresses, img), expected)
    # the same addresses without the swizzle read other elements
    plain = L.SmemTile(rows, cols, L.Swizzle(0, 4, 3), base=1024)
    _, unswizzled = L.lane_addresses(frag, contiguous, plain, row0, col0)
    assert not np.array_equal(L.ldmatrix(move, unswizzled, img), expected)


def test_stmatrix_stores_what_ldmatrix_loads():
    tile = L.SmemTile(16, 64, L.ROW_SWIZZLES[128], base=2048)
    rng = np.random.default_rng(9)
    for num, trans in ((1, False), (2, True), (4, False), (4, True)):
        regs = rng.integers(0, 1 << 32, size=(32, num), dtype=np.uint64).astype(np.uint32)
        lane = np.arange(32)
        addresses = tile.address(lane % 8 + 8 * ((lane // 8) % 2), 8 * (lane // 16))
        img = np.zeros(1 << 14, np.uint8)
        L.stmatrix(L.MatrixMoveForm(num, trans, store=True), addresses, regs, img)
        assert np.array_equal(L.ldmatrix(L.MatrixMoveForm(num, trans), addresses, img), regs)


def test_fragments_ldmatrix_cannot_load_are_refused():
    with pytest.raises(ValueError, match="16-bit units"):
        L.ldmatrix_plan(R.a_map(F("m16n8k8", "f32", "tf32", "tf32", "f32")), "rows")
    # a made-up 16 x 8 .b16 map whose register holds a column pair of two rows 8 apart: no 8x8 block gives it
    odd = R.FragmentMap("A", 16, 8, 16, 4, lambda lane, v: (np.asarray(lane) % 8 + 8 * (np.asarray(v) % 2),
                                                             2 * (np.asarray(lane) // 8) + np.asarray(v) // 2,
                                                             0 * np.asarray(v)))
    odd.inverse
    with pytest.raises(ValueError, match="no ldmatrix"):
        L.ldmatrix_plan(odd, "rows")
