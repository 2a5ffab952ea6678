"""The mma_sync models diffed against NVIDIA's own code: CuTe's warp-level MMA atoms and ldmatrix / stmatrix copy atoms
(CUTLASS's C++ headers built for the host, tests/oracles/cutlass_mma_sm80.cpp), element by element.

Each atom's ALayout / BLayout / CLayout maps (thread, value) to (m, k) / (n, k) / (m, n); CuTe's value index is the
ISA's element index (a0, a1, ...), so model and atom must name the same coordinate for every lane and value. The
atoms CUTLASS lacks, or whose layout does not compile, are listed (`NOT_IN_CUTE`, `CUTE_DOES_NOT_COMPILE`), so a list
entry that no longer applies fails too.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from harness.families.mma_sync import fragments as R
from harness.families.mma_sync import ldmatrix as L
from harness.families.mma_sync.forms import BitOp, MmaForm, Sparsity, all_forms
from tests.oracles import cutlass_cpp

pytestmark = [pytest.mark.cutlass,
              pytest.mark.skipif(cutlass_cpp.skip_reason() is not None, reason=str(cutlass_cpp.skip_reason()))]

# the dense map keys (shape, A bits, B bits, D type, layouts) no CuTe atom has: the e4m3/e5m2 m16n8k16 forms (PTX 8.7)
NOT_IN_CUTE = {("m16n8k16", 8, 8, "f32"), ("m16n8k16", 8, 8, "f16")}
# SM80_16x8x128_S32U1U1S32_TN_XORPOPC's ALayout is Shape<Shape<_4,_8>,Shape<_32,_2>> with
# Stride<Stride<_512,_1>,Stride<Stride<_16,_8>>>: its value mode has one stride (a tuple) for two shape modes, and g++
# refuses to evaluate it (no matching getv_cr<1>); only its B and C are diffed
CUTE_DOES_NOT_COMPILE = {"SM80_16x8x128_S32U1U1S32_TN_XORPOPC"}
# where CuTe and the ISA disagree: SM80_16x8x32_S32S4S4S32_TN's (and its S4U4/U4S4/U4U4 heirs') BLayout is
# ((4,8),8):((32,1),8) over (N8, K32), so thread t holds K = 4t .. 4t+7: the four threads overlap and K 20..31 is held
# by none (160 distinct coordinates of 256). The ISA (9.7.14.5.10, m16n8k32 .s4/.u4 B: "row = threadID_in_group * 8
# + i") gives K = 8t .. 8t+7, as CuTe's own 8x8x32 S4 atom does (stride 64). The model follows the ISA.
CUTE_DISAGREES = {("SM80_16x8x32_S32S4S4S32_TN", "b")}


@pytest.fixture(scope="module")
def oracle():
    return cutlass_cpp.run_json("cutlass_mma_sm80.cpp")


_TYPE = {"F16": "f16", "F32": "f32", "F64": "f64", "BF16": "bf16", "TF32": "tf32", "S32": "s32", "S8": "s8",
         "U8": "u8", "S4": "s4", "U4": "u4", "U1": "b1", "E4M3": "e4m3", "E5M2": "e5m2"}


def form_of(name: str) -> MmaForm:
    """SM80_16x8x16_F32F16F16F32_TN -> the PTX form it issues (T: K-major, .row for A / .col for B)."""
    _, mnk, types, majors, *rest = name.split("_")
    m, n, k = mnk.split("x")
    d, a, b, c = (_TYPE[t] for t in re.findall("BF16|TF32|E4M3|E5M2|F16|F32|F64|S32|S8|U8|S4|U4|U1", types))
    bitop = {"XORPOPC": BitOp.XOR_POPC, "ANDPOPC": BitOp.AND_POPC}.get(rest[0]) if rest else None
    return MmaForm(f"m{m}n{n}k{k}", d, a, b, c, satfinite=rest == ["SATURATE"], bitop=bitop,
                   alayout="row" if majors[0] == "T" else "col", blayout="col" if majors[1] == "N" else "row")


def _model_coords(frag: R.FragmentMap, lanes: np.ndarray):
    row, col, inst = frag.table
    return row[lanes], col[lanes], inst[lanes]


def _diff(atom, key, frag, swap=False):
    """Disagreements between the atom's (thread, value) -> coordinate and the model's, as text lines."""
    cute = np.asarray(atom[key]).reshape(len(atom["thr"]), -1, 2)
    lanes = np.asarray(atom["thr"])
    row, col, inst = _model_coords(frag, lanes)
    if cute.shape[1] != row.shape[1]:
        return [f"{atom['name']} {key}: CuTe has {cute.shape[1]} values a thread, the model {row.shape[1]}"]
    first, second = (col, row) if swap else (row, col)  # B: CuTe's (n, k) is the model's (col, row)
    bad = np.argwhere((cute[..., 0] != first) | (cute[..., 1] != second) | (inst != 0))
    return [f"{atom['name']} {key} lane {lanes[t]} value {v}: CuTe {tuple(cute[t, v])}, model "
            f"{(int(first[t, v]), int(second[t, v]))}" for t, v in bad[:5]]


def test_every_atom_names_the_models_coordinate_for_every_lane_and_value(oracle):
    bad, checked = [], 0
    for atom in oracle["mma"]:
        form = form_of(atom["name"])
        for key, frag in (("a", R.a_map(form)), ("b", R.b_map(form)), ("c", R.c_map(form))):
            if key in atom and (atom["name"], key) not in CUTE_DISAGREES:
                bad += _diff(atom, key, frag, swap=key == "b")
                checked += 1
    assert not bad, "\n".join(bad)
    assert checked == 3 * len(oracle["mma"]) - len(CUTE_DOES_NOT_COMPILE) - len(CUTE_DISAGREES)


@pytest.mark.parametrize("name,key", sorted(CUTE_DISAGREES))
def test_where_cute_and_the_isa_disagree_cutes_map_is_not_one_to_one(oracle, name, key):
    atom = next(a for a in oracle["mma"] if a["name"] == name)
    form = form_of(name)
    frag = {"a": R.a_map, "b": R.b_map, "c": R.c_map}[key](form)
    assert _diff(atom, key, frag, swap=key == "b"), f"{name} {key} agrees now: drop it from CUTE_DISAGREES"
    cute = {tuple(c) for c in atom[key]}
    assert len(cute) < len(atom[key])  # CuTe's names some coordinates twice
    frag.inverse  # the model's is a bijection (raises otherwise)


def test_only_the_listed_atom_lacks_an_a_layout(oracle):
    assert {a["name"] for a in oracle["mma"] if "a" not in a} == CUTE_DOES_NOT_COMPILE


def test_the_atoms_cover_every_dense_map_but_the_listed_ones(oracle):
    """Every dense form's maps (they depend on shape, widths, accumulator and layouts only) meet an atom."""
    def key(f):
        return (f.shape.value, R.BITS[f.atype], R.BITS[f.btype], f.dtype, f.alayout.value, f.blayout.value)
    covered = {key(form_of(a["name"])) for a in oracle["mma"]}
    dense = {key(f) for f in all_forms() if f.sparsity is Sparsity.DENSE}
    missing = {k[:4] for k in dense - covered}
    assert missing == NOT_IN_CUTE


def test_the_sm70_quad_pair_atoms_are_instance_0_of_the_models_four(oracle):
    """CuTe's SM70 atoms are one quad pair (ThrID lanes 0-3 and 16-19); the model's instance 0 is that pair, and the
    other three pairs hold the same coordinates of their own MMA."""
    atom = next(a for a in oracle["mma"] if a["name"] == "SM70_8x8x4_F32F16F16F32_NT")
    assert atom["thr"] == [0, 1, 2, 3, 16, 17, 18, 19]
    frag = R.c_map(form_of(atom["name"]))
    row, col, inst = frag.table
    for q in range(4):
        lanes = np.array(atom["thr"]) + 4 * q
        assert (inst[lanes] == q).all()
        assert np.array_equal(row[lanes], row[atom["thr"]]) and np.array_equal(col[lanes], col[atom["thr"]])


# ------------------------------------------------------------------------------------------------ negative checks

def _mutant(frag: R.FragmentMap, coords) -> R.FragmentMap:
    return R.FragmentMap(frag.operand, frag.rows, frag.cols, frag.bits, frag.values, coords, frag.instances)


@pytest.mark.parametrize("mutation", ["group off by one", "group and thread swapped", "rows and K stepped the other way",
                                      "transposed"])
def test_a_wrong_map_disagrees_with_cutlass(oracle, mutation):
    atom = next(a for a in oracle["mma"] if a["name"] == "SM80_16x8x16_F32F16F16F32_TN")
    good = R.a_map(form_of(atom["name"]))
    assert not _diff(atom, "a", good)

    def coords(lane, v):
        lane = np.asarray(lane)
        if mutation == "group off by one":
            return good.coords((lane + 4) % 32, v)
        if mutation == "group and thread swapped":  # g in the low bits: lane = 8 t + g
            return good.coords(4 * (lane % 8) + lane // 8, v)
        if mutation == "rows and K stepped the other way":
            reg, sub = v // 2, v % 2
            return good.coords(lane, 2 * (2 * (reg % 2) + reg // 2) + sub)
        row, col, inst = good.coords(lane, v)
        return col, row, inst  # A read as its transpose
    bad = _diff(atom, "a", _mutant(good, coords))
    assert bad, f"the mutant ({mutation}) agrees with CUTLASS: the check cannot fail"


def test_a_b_map_read_unswapped_disagrees_with_cutlass(oracle):
    atom = next(a for a in oracle["mma"] if a["name"] == "SM80_16x8x32_S32S8S8S32_TN")
    assert not _diff(atom, "b", R.b_map(form_of(atom["name"])), swap=True)
    assert _diff(atom, "b", R.b_map(form_of(atom["name"])), swap=False)


# ------------------------------------------------------------------------------------------------ sparse

def test_sparse_a_and_metadata_of_m16n8k64_e4m3_match_sm120s_sparse_atom(oracle):
    """The one warp-level mma.sp atom in CuTe (SM120's 16x8x64 f8, the same register layout as sm_89's mma.sp
    m16n8k64 .e4m3): its A, over logical K, is the model's compressed A with each kept pair's chunk; its E gives
    each logical element one metadata bit."""
    sp = oracle["sparse"]
    form = MmaForm("m16n8k64", "f32", "e4m3", "e4m3", "f32", "sp", selector=0)
    # A: CuTe's 32 logical values a thread, 8 a register, against the model's 4 kept elements a register (2 chunks)
    cute = np.asarray(sp["a"]).reshape(32, 4, 8, 2)
    row, col, _ = R.a_map(form).table
    row, col = row.reshape(32, 4, 4), col.reshape(32, 4, 4)
    chunk = col // 2  # 2 kept of every chunk of 4
    assert (cute[..., 0] == row[..., :1]).all() and (row == row[..., :1]).all()
    assert np.array_equal(np.unique(cute[..., 1] // 4), np.arange(16))
    assert np.array_equal(cute[..., 1].min(axis=-1), 4 * chunk.min(axis=-1))
    assert np.array_equal(cute[..., 1].max(axis=-1), 4 * chunk.max(axis=-1) + 3)
    # B of the same atom
    assert not _diff({"name": "SM120 sparse", "thr": list(range(32)), "b": sp["b"]}, "b", R.b_map(form), swap=True)
    # E: value v of thread t is metadata bit v of lane t
    cute_e = np.asarray(sp["e"]).reshape(32, 32, 2)
    mm = R.metadata_map(form)
    assert mm.held.all()
    assert np.array_equal(cute_e[..., 0], mm.row)
    assert np.array_equal(cute_e[..., 1] // 4, mm.chunk)
    assert np.array_equal(cute_e[..., 1] % 4, 2 * mm.slot + mm.index_bit)


def test_a_metadata_map_with_rows_and_k_halves_swapped_disagrees_with_sm120(oracle):
    cute_e = np.asarray(oracle["sparse"]["e"]).reshape(32, 32, 2)
    form = MmaForm("m16n8k64", "s32", "s8", "s8", "s32", "sp", selector=0)
    mm = R.metadata_map(form)
    # lanes 4g+1 and 4g+2 exchanged: the K half stepping first, then the row
    swapped = (np.arange(32) & ~3) | ((np.arange(32) & 1) << 1) | ((np.arange(32) >> 1) & 1)
    assert not np.array_equal(cute_e[..., 0], mm.row[swapped])


# ------------------------------------------------------------------------------------------------ ldmatrix / stmatrix

_MOVES = {"SM75_U32x1_LDSM_N": (1, False, False), "SM75_U32x2_LDSM_N": (2, False, False),
          "SM75_U32x4_LDSM_N": (4, False, False), "SM75_U16x2_LDSM_T": (1, True, False),
          "SM75_U16x4_LDSM_T": (2, True, False), "SM75_U16x8_LDSM_T": (4, True, False),
          "SM90_U32x1_STSM_N": (1, False, True), "SM90_U32x2_STSM_N": (2, False, True),
          "SM90_U32x4_STSM_N": (4, False, True), "SM90_U16x2_STSM_T": (1, True, True),
          "SM90_U16x4_STSM_T": (2, True, True), "SM90_U16x8_STSM_T": (4, True, True)}


def _register_bits(move: L.MatrixMoveForm) -> np.ndarray:
    """[32, num * 32]: the bit of the 8x8 .b16 matrices (1024 a matrix, 128 a row, 16 an element) that bit b of
    register r of each lane holds, by the model (value index 32 r + b, CuTe's order)."""
    matrix, row, col = move.elements  # [32, num, 2]
    b = np.arange(16)
    bits = (1024 * matrix + 128 * row + 16 * col)[..., None] + b
    return bits.reshape(32, -1)


def _address_bits(move: L.MatrixMoveForm) -> np.ndarray:
    matrix, row = move.address_rows
    return np.where(matrix >= 0, 128 * (8 * matrix + row), -1)


@pytest.mark.parametrize("name", sorted(_MOVES))
def test_every_copy_atom_moves_the_models_elements(oracle, name):
    atom = next(a for a in oracle["copy"] if a["name"] == name)
    move = L.MatrixMoveForm(*_MOVES[name])
    regs = np.asarray(atom["dst" if not move.store else "src"]).reshape(32, -1)
    rows = np.asarray(atom["src" if not move.store else "dst"]).reshape(32, -1)
    assert np.array_equal(regs, _register_bits(move))
    # the address side: lane l's 128 bits are one row; the lanes the model leaves unread repeat rows CuTe names
    # through a 0 stride (lanes 8-31 of .x1 give rows 0-7 again), which the hardware ignores
    addr = _address_bits(move)
    used = addr >= 0
    assert np.array_equal(rows[used, 0], addr[used]) and np.array_equal(rows[:, :] - rows[:, :1], np.tile(
        np.arange(128), (32, 1)))
    assert np.array_equal(rows[~used, 0], addr[np.arange(32)[~used] % (8 * move.num)])


def test_a_transposed_ldmatrix_map_disagrees_with_the_non_transposed_atom(oracle):
    atom = next(a for a in oracle["copy"] if a["name"] == "SM75_U32x4_LDSM_N")
    assert not np.array_equal(np.asarray(atom["dst"]).reshape(32, -1), _register_bits(L.MatrixMoveForm(4, True)))
