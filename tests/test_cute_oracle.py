"""The numpy models against CUTLASS's CuTe DSL, evaluated on the CPU (no GPU, no compilation).

- shared-memory layout atoms: every SmemLayoutAtomKind x element type, tiled to a multi-atom operand tile the
  way CUTLASS builds one (tile_to_shape, MN first); LBO/SBO are read off CuTe's unswizzled layout the way
  CUTLASS's make_gmma_desc does, and the model's addresses must equal CuTe's, with CuTe's swizzle applied to
  the byte address;
- warpgroup MMA atoms: the accumulator (C) and register-A thread-value layouts at several N.
The DSL has no warpgroup atom for tf32 or b1, so those fragments are checked against the spec formulas only.
"""
import numpy as np
import pytest

from harness.spec import fragments, layouts
from harness.spec.layouts import SmemLayout


def dsl():
    """tests/cute_oracle.py, which imports the DSL: at a test's first need, not at collection, where every xdist
    worker collects this module (the DSL's import took 1.4 s of each one's collection). Where the DSL is missing the
    root conftest skips this module's tests (`cute`), or under CI fails them, before they ask."""
    import cute_oracle
    return cute_oracle


pytestmark = pytest.mark.cute  # an independent oracle: always run (tests/cute_eval.py keeps it to a few seconds)

ATOM_TYPES = ["f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"]


def _strides_from_cute(major, sw, offsets, T, elem_bytes):
    """LBO/SBO in bytes, read off the unswizzled CuTe layout (as make_gmma_desc reads its strides)."""
    W = layouts.SWIZZLE_ROW_BYTES[sw] // 16
    if major == "K":
        sbo = int(offsets[8, 0]) * elem_bytes
        lbo = int(offsets[0, T]) * elem_bytes if sw == "none" else 16
    elif sw == "none":
        sbo = int(offsets[T, 0]) * elem_bytes
        lbo = int(offsets[0, 8]) * elem_bytes
    else:
        lbo = int(offsets[T * W, 0]) * elem_bytes
        sbo = int(offsets[0, 8]) * elem_bytes
    return lbo, sbo


def _tile_shape(major, sw, dtype):
    T = 128 // {"f16": 16, "bf16": 16, "tf32": 32}.get(dtype, 8)
    W = layouts.SWIZZLE_ROW_BYTES[sw] // 16
    if major == "K":  # two 8-row groups, one swizzle row (two chunks without swizzle) of K
        return 16, (2 * T if sw == "none" else T * W)
    return 2 * T * W, 16  # two atoms along MN, two 8-row groups along K


ATOMS = [(major, sw, dtype) for major in ("K", "MN") for sw in layouts.SWIZZLES for dtype in ATOM_TYPES]


@pytest.fixture(scope="module")
def cute_tiles():
    """Every atom of the test, evaluated by the DSL in one trace."""
    answers = dsl().smem_tiles([(m, s, d, *_tile_shape(m, s, d)) for m, s, d in ATOMS])
    return dict(zip(ATOMS, answers))


@pytest.mark.parametrize("dtype", ATOM_TYPES)
@pytest.mark.parametrize("sw", layouts.SWIZZLES)
@pytest.mark.parametrize("major", ["K", "MN"])
def test_smem_atom_tiles_match_cute(major, sw, dtype, cute_tiles):
    T = 128 // {"f16": 16, "bf16": 16, "tf32": 32}.get(dtype, 8)
    rows, cols = _tile_shape(major, sw, dtype)
    got = cute_tiles[(major, sw, dtype)]
    assert got["swizzle"] == layouts.SWIZZLE_BMS[sw], got["atom"]
    lbo, sbo = _strides_from_cute(major, sw, got["offsets"], T, got["elem_bytes"])
    model = SmemLayout(major, sw, dtype, rows, cols, lbo, sbo)
    assert np.array_equal(layouts.smem_address(model), got["address"]), (got["atom"], lbo, sbo)


MMA = [("f16", "f32"), ("f16", "f16"), ("bf16", "f32"), ("e4m3", "f32"), ("e5m2", "f16"), ("s8", "s32"),
       ("u8", "s32")]
NS = [8, 16, 24, 64, 128, 256]


@pytest.fixture(scope="module")
def cute_tv():
    reqs = [(a, acc, n) for a, acc in MMA for n in NS]
    return dict(zip(reqs, dsl().mma_tv_layouts(reqs)))


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("atype,acc", MMA)
def test_warpgroup_mma_thread_value_layouts_match_cute(atype, acc, n, cute_tv):
    tv = cute_tv[(atype, acc, n)]
    d = fragments.wgmma_d_fragment(n, acc)
    assert np.array_equal(tv["C_row"], d.row) and np.array_equal(tv["C_col"], d.col)
    # not only which (row, col) a thread holds, but in which register and which 16-bit half (or byte)
    assert d.bits == tv["C_bits"] and np.array_equal(tv["C_reg"], d.reg) and np.array_equal(tv["C_shift"], d.shift)
    a = fragments.wgmma_a_fragment(atype)
    assert np.array_equal(tv["A_row"], a.row) and np.array_equal(tv["A_col"], a.col)
    assert a.bits == tv["A_bits"] and np.array_equal(tv["A_reg"], a.reg) and np.array_equal(tv["A_shift"], a.shift)


TMEM_LD = [(shape, num) for shape in ("32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2") for num in (1, 2, 4)]


@pytest.fixture(scope="module")
def cute_tmem_ld():
    from cute_oracle_sm100 import tmem_ld_layouts
    return dict(zip(TMEM_LD, tmem_ld_layouts(TMEM_LD)))


@pytest.mark.parametrize("shape,num", TMEM_LD)
def test_tcgen05_ld_fragments_match_cute(shape, num, cute_tmem_ld):
    """CuTe's tcgen05.ld atoms index their (lane, column) tile as lane * columns + column; for 16x32bx2
    CuTe places the second half `num` columns on, which is what imm_half_offset = num means here."""
    index = np.array(cute_tmem_ld[(shape, num)])
    lane, col = fragments.tmem_ld_fragment(shape, num, imm_half_offset=num)
    lanes = 32 if shape == "32x32b" else 16
    columns = index.size // lanes
    assert index.shape == lane.shape
    assert np.array_equal(index // columns, lane) and np.array_equal(index % columns, col)


# (operand, M, N or K, cta_group, type): every tcgen05 data path the DSL exposes for one CTA's view
MMA_FRAGMENTS = [("C", 128, 64, 1, "f32"), ("C", 64, 64, 1, "f32"), ("C", 128, 256, 1, "f16"),
                 ("C", 64, 32, 1, "f16"), ("C", 256, 64, 2, "f32"), ("C", 128, 64, 2, "f32"),
                 ("C", 128, 128, 2, "f16"), ("A", 128, 16, 1, "f16"), ("A", 64, 16, 1, "f16")]


def test_tcgen05_tmem_data_paths_match_cute():
    """Where D[row, col] (per CTA of a pair) and A[row, k] sit in Tensor Memory: tcgen05_cases' model against
    CuTe's TMEM fragments of the same MMAs (layouts D, F, A, B; f16 accumulators; A from TMEM)."""
    from cute_oracle_sm100 import tmem_mma_layouts

    from harness.families.tcgen05 import cases as T, datapaths as DP, readback as RB, reference as R
    for (operand, m, nk, cg, t), cells in zip(MMA_FRAGMENTS, tmem_mma_layouts(MMA_FRAGMENTS)):
        cute_cells = np.array(cells)  # [rows of this CTA, cols, (lane, column, bit)]
        rows = cute_cells.shape[0]
        if operand == "C":
            cta, lane, col, half = DP.d_position(m, nk, cg, False, t)
            mine = np.stack([lane[:rows], col[:rows], 16 * half[:rows]], axis=-1)  # CTA 0's rows
            assert (cta[:rows] == 0).all()
        else:
            k = np.arange(nk)[None, :]
            lane = DP.a_lane(m, np.arange(m))[:, None] + 0 * k
            mine = np.stack([lane, 0 * lane + k * 16 // 32, 0 * lane + (k * 16) % 32], axis=-1)
        assert np.array_equal(mine, cute_cells), (operand, m, nk, cg, t)
