"""sm_120a / sm_121a mma.sync `.kind::` forms (harness/families/mma_sync/block_scaled.py, kernel_sm120.py): the models
by hand, against CUTLASS's SM120 atoms (tests/oracles/cutlass_mma_sm120.cpp, marker `cutlass`), and the kernels
compiled by NVRTC through the harness's compile path and SASS-checked; the launch path (reference_sm120's inputs and
expectations, kernel_sm120.pack, readback_sm120's diff) on a simulated sm_120a device that computes from the models
(tests/simulated/mma_sync_sm120_device.py), with misreading devices and planted packing bugs that must fail. Nothing
here runs on a GPU: no sm_120 GPU exists in this project.

In a sweep (the family's `plans_every_arch`: harness/plan.py plans each arch's own kernels with their cases) the
sm_120a kernels' 180 cases are recorded not run, with the reason naming sm_120a wherever no sm_120 GPU is, an H100
included; sm_121a's kernels (sm_120a's names and sources) are compiled and SASS-checked only.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from harness.families.mma_sync import block_scaled as BS, kernel_sm120 as KS
from harness.run import compile as nvrtc, sass
from tests.oracles import cutlass_cpp

# ---------------------------------------------------------------------------------------------------- forms


def _ue8m0_4x_source() -> str:
    """A one-variant kernel of the ISA's .kind::mxf4nvf4 .scale_vec::4X .ue8m0 form (the harness does not plan it)."""
    key = KS.Sm120Key("mxf4", False, "f32")
    form = BS.BlockScaledForm("mxf4nvf4", "e2m1", "e2m1", "f32", "f32", False, "ue8m0", "4X")  # legal: it validates
    first = KS.variants(key)[0]  # .kind::mxf4 .ue8m0 .scale_vec::2X: the same registers
    source = KS.source(key, only_variant=0, name="ue8m0_4x")
    assert first.instruction() in source
    return source.replace(first.instruction(), form.instruction())


@pytest.mark.parametrize("version,accepted", [("13.0", False), ("13.1", True)])
def test_the_ue8m0_4x_form_the_isa_lists_is_rejected_by_nvrtc_13_0(version, accepted):
    """Why block_scaled.NEWER_THAN_PTX_9_0 is not planned: NVRTC 13.0 (PTX ISA 9.0) rejects the form, 13.1 takes it
    (13.0 is a version CI installs; 13.1 is tried where it is installed:
    `pip install --target ~/.cache/tc-harness/nvrtc/13.1 'nvidia-cuda-nvrtc==13.1.*'`)."""
    from tests.test_nvrtc_versions import toolchain_or_skip
    tc = toolchain_or_skip(version)
    cubin, log = tc.compile(_ue8m0_4x_source(), "ue8m0_4x", "sm_120a", ("-std=c++17",))
    if accepted:
        assert cubin, log
    else:
        assert cubin is None and "Illegal modifier '.scale_vec::4X'" in log and ".ue8m0" in log, log


def test_every_form_is_legal_and_the_counts_are_the_isas():
    forms = BS.all_forms()
    # f8f6f4: 25 type pairs x (f32, f16) x dense/sparse; mxf8f6f4: 25 x 2; mxf4: 2; mxf4nvf4: 2 scale combos x 2
    # (the ISA's third, .ue8m0 .scale_vec::4X, is not planned: NVRTC 13.0 rejects it)
    assert len(forms) == 100 + 50 + 2 + 4 == len(set(forms))
    assert not [f for f in forms if (f.kind, f.stype, f.scale_vec) == ("mxf4nvf4", "ue8m0", "4X")]
    # with every selector: mxf8f6f4 1X 4*2*4*4 = 128, mxf4(nvf4) 2X 2*2*2*4 = 32, 4X 1*2*1*4 = 8
    assert len(BS.all_forms(selectors=True)) == 100 + 50 * 128 + 2 * 32 + 2 * (32 + 8)


@pytest.mark.parametrize("args, message", [
    (("mxf8f6f4", "e4m3", "e4m3", "f32", "f32", False, "ue8m0", "2X"), "takes .ue8m0 .scale_vec::1X"),
    (("mxf4nvf4", "e2m1", "e2m1", "f32", "f32", False, "ue4m3", "2X"), ".ue4m3 .scale_vec::4X"),
    (("mxf4", "e2m1", "e2m1", "f32", "f32", False, "ue8m0", "4X"), "takes .ue8m0 .scale_vec::2X, not"),
    (("mxf4", "e4m3", "e2m1", "f32", "f32", False, "ue8m0", "2X"), "takes A and B of e2m1"),
    (("mxf8f6f4", "e4m3", "e4m3", "f16", "f16", False, "ue8m0", "1X"), "accumulates as D/C f32/f32"),
    (("f8f6f4", "e4m3", "e4m3", "f16", "f32"), "not f16/f32"),
    (("f8f6f4", "e4m3", "e4m3", "f32", "f32", False, "ue8m0", "1X"), "is not block-scaled"),
    (("mxf8f6f4", "e2m1", "e3m2", "f32", "f32", False, "ue8m0", "1X", 0, 2), "thread-id-a of .scale_vec::1X"),
    (("mxf4nvf4", "e2m1", "e2m1", "f32", "f32", False, "ue8m0", "2X", 1),
     "byte-id-a of .scale_vec::2X is one of 0, 2"),
    (("mxf4nvf4", "e2m1", "e2m1", "f32", "f32", True, "ue4m3", "4X", 0, 0, 2), "byte-id-b of .scale_vec::4X is one of 0,"),
    (("mxf8f6f4", "e4m3", "e4m3", "f32", "f32", False, "ue8m0", "1X", 0, 0, 0, 4), "thread-id-b"),
    (("tf32", "e4m3", "e4m3"), "kind 'tf32' is not one of"),
])
def test_an_illegal_combination_is_refused_in_one_line(args, message):
    with pytest.raises(ValueError) as e:
        BS.BlockScaledForm(*args)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_the_instruction_text_is_the_isas():
    f = BS.BlockScaledForm("mxf4nvf4", "e2m1", "e2m1", stype="ue4m3", scale_vec="4X", thread_id_a=1, thread_id_b=3)
    assert f.instruction() == ("mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X"
                               ".f32.e2m1.e2m1.f32.ue4m3")
    assert f.scale_operands("%1", "%2") == "%1, {0, 1}, %2, {0, 3}"
    g = BS.BlockScaledForm("f8f6f4", "e3m2", "e2m1", "f16", "f16", sparse=True)
    assert g.instruction() == "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f16.e3m2.e2m1.f16"
    assert (f.scale_vector_size, BS.BlockScaledForm("mxf4", "e2m1", "e2m1", sparse=True, stype="ue8m0",
                                                    scale_vec="2X").scale_vector_size) == (16, 64)


# ---------------------------------------------------------------------------------------------------- by hand
# lane 5: groupID g = 1, threadID_in_group t = 1

def _held(frag, lane):
    row, col, _ = frag.table
    return [(int(r), int(c)) for r, c in zip(row[lane], col[lane])]


def test_lane_5_of_mxf8f6f4_m16n8k32_by_hand():
    f = BS.BlockScaledForm("mxf8f6f4", "e2m1", "e5m2", stype="ue8m0", scale_vec="1X")
    a = _held(BS.a_map(f), 5)  # four 8-bit containers a register: K 4t .. 4t+3, rows g / g+8, then K + 16
    assert a[0:4] == [(1, 4), (1, 5), (1, 6), (1, 7)] and a[4:8] == [(9, 4), (9, 5), (9, 6), (9, 7)]
    assert a[8] == (1, 20) and a[12] == (9, 20)
    assert _held(BS.b_map(f), 5) == [(k, 1) for k in (4, 5, 6, 7, 20, 21, 22, 23)]
    assert _held(BS.acc_map(f), 5) == [(1, 2), (1, 3), (9, 2), (9, 3)]
    # e2m1 sits in bits 5-2 of its container, e5m2 fills it
    assert BS.encode_containers(f, "A", [0b1011]).tolist() == [0b101100]
    assert BS.encode_containers(f, "B", [0xA7]).tolist() == [0xA7]
    assert BS.decode_containers(f, "A", [0b11101111]).tolist() == [0b1011]


def test_lane_5_of_mxf4_m16n8k64_and_its_sparse_m16n8k128_by_hand():
    f = BS.BlockScaledForm("mxf4", "e2m1", "e2m1", stype="ue8m0", scale_vec="2X")
    a = _held(BS.a_map(f), 5)  # eight packed e2m1 a register: K 8t .. 8t+7, rows g / g+8, then K + 32
    assert a[0:8] == [(1, k) for k in range(8, 16)] and a[8] == (9, 8) and a[16] == (1, 40) and a[24] == (9, 40)
    assert _held(BS.b_map(f), 5) == [(k, 1) for k in [*range(8, 16), *range(40, 48)]]
    assert BS.encode_containers(f, "A", [0b1011]).tolist() == [0b1011]  # packed: no container shift
    sp = BS.BlockScaledForm("mxf4", "e2m1", "e2m1", sparse=True, stype="ue8m0", scale_vec="2X")
    assert BS.a_map(sp).cols == 64 and _held(BS.a_map(sp), 5)[:8] == [(1, c) for c in range(8, 16)]
    assert [k for k, _ in _held(BS.b_map(sp), 5)][::8] == [8, 40, 72, 104]
    assert BS.metadata_form(sp).shape.value == "m16n8k128"


def test_lane_5_and_6_scale_bytes_by_hand():
    one = BS.BlockScaledForm("mxf8f6f4", "e4m3", "e4m3", stype="ue8m0", scale_vec="1X", byte_id_a=2, byte_id_b=3,
                             thread_id_b=1)
    sa, sb = BS.scale_map(one, "A"), BS.scale_map(one, "B")
    # thread-id-a 0: lanes 4g, 4g+1 hold rows g, g+8; lane 5 -> row 9, byte byte-id-a only
    assert sa.held[5].tolist() == [False, False, True, False] and sa.index[5, 2] == 9 and sa.chunk[5, 2] == 0
    assert not sa.held[6].any()
    assert sb.held[5].tolist() == [False, False, False, True] and sb.index[5, 3] == 1
    four = BS.BlockScaledForm("mxf4nvf4", "e2m1", "e2m1", stype="ue4m3", scale_vec="4X", thread_id_a=1)
    sa = BS.scale_map(four, "A")
    assert not sa.held[5].any() and sa.held[6].all() and sa.index[6].tolist() == [1] * 4
    assert sa.chunk[6].tolist() == [0, 1, 2, 3] and sa.index[7, 0] == 9
    assert BS.scale_holder(four, "A", 9, 3) == (7, 3)
    two = BS.BlockScaledForm("mxf4", "e2m1", "e2m1", stype="ue8m0", scale_vec="2X", byte_id_b=2, thread_id_b=3)
    sb = BS.scale_map(two, "B")
    assert sb.held[7].tolist() == [False, False, True, True] and sb.chunk[7, 2:].tolist() == [0, 1]


def test_every_scale_factor_is_held_once_under_every_selector_and_round_trips():
    seen = set()
    for f in BS.all_forms(selectors=True):
        if not f.block_scaled or (f.scale_vec, f.selectors) in seen:
            continue
        seen.add((f.scale_vec, f.selectors))
        for op, n in (("A", 16), ("B", 8)):
            sm = BS.scale_map(f, op)
            assert sm.held.sum() == n * f.scale_count
            factors = (np.arange(n * f.scale_count).reshape(n, f.scale_count) * 37 + 5) % 256
            regs = BS.encode_scales(f, op, factors)
            assert np.array_equal(BS.decode_scales(f, op, regs), factors)
    assert len(seen) == 128 + 32 + 8


def test_registers_pack_and_unpack_every_form():
    rng = np.random.default_rng(1)
    for f in BS.all_forms():
        for frag in (BS.a_map(f), BS.b_map(f)):
            slots = rng.integers(0, 1 << frag.bits, (frag.rows, frag.cols))
            assert np.array_equal(BS.unpack_registers(frag, BS.pack_registers(frag, slots)), slots)


def test_the_reference_scales_each_chunk_by_hand():
    f = BS.BlockScaledForm("mxf4nvf4", "e2m1", "e2m1", stype="ue4m3", scale_vec="4X")
    a, b = np.zeros((16, 64), int), np.zeros((64, 8), int)
    a[3, 17], b[17, 5] = 0b0010, 0b0011  # 1.0 and 1.5, in chunk 1 of the four
    sfa, sfb = np.full((16, 4), 0x38), np.full((8, 4), 0x38)  # ue4m3 1.0
    sfa[3, 1], sfb[5, 1] = 0x40, 0x30  # 2.0 and 0.5
    c = np.full((16, 8), 0.25)
    d = BS.reference_d(f, a, b, c, sfa, sfb)
    assert d[3, 5] == 1.5 + 0.25 and np.count_nonzero(d - 0.25) == 1
    sfa[3, 0] = 0x00  # a chunk the product does not touch
    assert BS.reference_d(f, a, b, c, sfa, sfb)[3, 5] == 1.75


def test_the_sub_byte_ldmatrix_by_hand():
    for load in BS.SUB_BYTE_LOADS:
        rows = (np.arange(8 * load.num * 16).reshape(8 * load.num, 16) * 7) % (1 << load.bits)
        image = np.concatenate([load.pack_row(r) for r in rows])
        regs = load.load(np.arange(32) % (8 * load.num) * 16, image)
        # lane 5, register j: row 1 of matrix j, elements 4..7, a byte each
        for j in range(load.num):
            assert [(int(regs[5, j]) >> (8 * i)) & 0xFF for i in range(4)] == rows[8 * j + 1, 4:8].tolist()
    assert BS.SubByteLoad(1, "b6x16_p32").pack_row(np.full(16, 0x3F))[:12].tolist() == [0xFF] * 12


# ---------------------------------------------------------------------------------------------------- CUTLASS

def needs_cutlass(test):
    """Marker `cutlass`, skipped (with the reason) where the oracle cannot be built."""
    skip = pytest.mark.skipif(cutlass_cpp.skip_reason() is not None, reason=str(cutlass_cpp.skip_reason()))
    return pytest.mark.cutlass(skip(test))
ATOM_FORMS = {  # the atom's name's start -> the form whose maps it must give
    "SM120_16x8x32_TN<": BS.BlockScaledForm("f8f6f4", "e2m1", "e3m2"),
    "SM120::BLOCKSCALED::SM120_16x8x32_TN_VS<": BS.BlockScaledForm("mxf8f6f4", "e4m3", "e2m1", stype="ue8m0",
                                                                  scale_vec="1X"),
    "SM120::BLOCKSCALED::SM120_16x8x64_TN_VS<float_e2m1_t, float_e2m1_t, float, float_ue8m0_t":
        BS.BlockScaledForm("mxf4nvf4", "e2m1", "e2m1", stype="ue8m0", scale_vec="2X"),
    "SM120::BLOCKSCALED::SM120_16x8x64_TN_VS<float_e2m1_t, float_e2m1_t, float, float_ue4m3_t":
        BS.BlockScaledForm("mxf4nvf4", "e2m1", "e2m1", stype="ue4m3", scale_vec="4X"),
    "SM120::SPARSE::SM120_SPARSE_16x8x64_TN<": BS.BlockScaledForm("f8f6f4", "e3m2", "e2m1", sparse=True),
    "SM120::BLOCKSCALED::SPARSE::SM120_SPARSE_16x8x64_TN_VS<":
        BS.BlockScaledForm("mxf8f6f4", "e4m3", "e4m3", sparse=True, stype="ue8m0", scale_vec="1X"),
    "SM120::BLOCKSCALED::SPARSE::SM120_SPARSE_16x8x128_TN_VS<":
        BS.BlockScaledForm("mxf4nvf4", "e2m1", "e2m1", sparse=True, stype="ue4m3", scale_vec="4X"),
}


@pytest.fixture(scope="module")
def atoms():
    out = {}
    for atom in cutlass_cpp.run_json("cutlass_mma_sm120.cpp")["atoms"]:
        form = next(f for start, f in ATOM_FORMS.items() if atom["name"].startswith(start))
        out[atom["name"]] = (atom, form)
    assert len(out) == len(ATOM_FORMS)
    return out


def _cute(atom, key):
    return np.asarray(atom[key]).reshape(32, -1, 2)


@needs_cutlass
def test_dense_a_b_c_are_cutes_element_by_element(atoms):
    checked = 0
    for atom, f in atoms.values():
        if f.sparse:
            continue
        for key, frag, swap in (("a", BS.a_map(f), False), ("b", BS.b_map(f), True), ("c", BS.acc_map(f), False)):
            cute = _cute(atom, key)
            row, col, _ = frag.table
            first, second = (col, row) if swap else (row, col)
            assert np.array_equal(cute[..., 0], first) and np.array_equal(cute[..., 1], second), (atom["name"], key)
            checked += 1
    assert checked == 12


@needs_cutlass
def test_sparse_a_b_and_metadata_are_cutes(atoms):
    from harness.families.mma_sync import fragments as FR
    for atom, f in atoms.values():
        if not f.sparse:
            continue
        frag = BS.a_map(f)
        row, col, _ = frag.table
        kept = 2 if f.container_bits == 8 else 4  # elements kept of a chunk (e2m1: two pairs of eight)
        chunk_len = 4 if f.container_bits == 8 else 8
        per_reg = frag.per_register
        cute = _cute(atom, "a").reshape(32, frag.registers, 2 * per_reg, 2)
        chunk = (col // kept).reshape(32, frag.registers, per_reg)
        assert np.array_equal(cute[..., 0].min(-1), row.reshape(32, frag.registers, per_reg)[..., 0])
        assert np.array_equal(cute[..., 1].min(-1), chunk_len * chunk.min(-1)), atom["name"]
        assert np.array_equal(cute[..., 1].max(-1), chunk_len * chunk.max(-1) + chunk_len - 1), atom["name"]
        brow, bcol, _ = BS.b_map(f).table
        cb = _cute(atom, "b")
        assert np.array_equal(cb[..., 0], bcol) and np.array_equal(cb[..., 1], brow), atom["name"]
        mm = FR.metadata_map(BS.metadata_form(f))
        e = _cute(atom, "e")
        per_bit = e.shape[1] // 32  # logical elements one metadata bit covers in CuTe's E (1, or 2 for e2m1 pairs)
        bit = np.arange(e.shape[1]) // per_bit
        assert mm.held.all() and np.array_equal(e[..., 0], mm.row[:, bit]), atom["name"]
        assert np.array_equal(e[..., 1] // chunk_len, mm.chunk[:, bit]), atom["name"]
        assert np.array_equal((e[..., 1] % chunk_len) // per_bit, 2 * mm.slot[:, bit] + mm.index_bit[:, bit])


@needs_cutlass
def test_scale_factor_layouts_are_cutes_for_each_thread_id(atoms):
    """CuTe's SFALayout / SFBLayout give every lane of a quad (stride 0 over the thread-id bits) the factors that
    lane holds under the thread-id selecting it, chunk k // vector size; the model's holder of each (row, chunk)
    under thread-id (lane % 4) // 2 (A) or lane % 4 (B) names the same row / column."""
    checked = 0
    for atom, f in atoms.values():
        if not f.block_scaled:
            continue
        for op in ("A", "B"):
            cute = _cute(atom, "sf" + op.lower())
            for lane in range(32):
                tid = (lane % 4) // 2 if op == "A" else lane % 4
                g = BS.BlockScaledForm(f.kind, f.atype, f.btype, f.dtype, f.ctype, f.sparse, f.stype, f.scale_vec,
                                       **({"thread_id_a": tid} if op == "A" else {"thread_id_b": tid}))
                sm = BS.scale_map(g, op)
                assert sm.held[lane].any()
                assert set(cute[lane, :, 0].tolist()) == {int(sm.index[lane, 0])}, (atom["name"], op, lane)
                k = cute[lane, :, 1]
                assert np.array_equal(k, np.arange(f.mnk[2])) and atom["vs"] > 0
                assert sorted(set((k // f.scale_vector_size).tolist())) == sm.chunk[lane][sm.held[lane]].tolist()
            checked += 1
    assert checked == 10


@needs_cutlass
def test_e2m1_containers_are_cutlass_fp4_shift():
    """CUTLASS's fp4_shift_A on an f8f6f4 register (tests/oracles/cutlass_fp4_shift.cpp) is encode_containers of
    the codes in its bytes' low bits."""
    for atype, btype, reg_in, reg_out in cutlass_cpp.run_json("cutlass_fp4_shift.cpp")["a"]:
        if atype not in BS.ELEMENT_BITS or btype not in BS.ELEMENT_BITS:
            continue
        f = BS.BlockScaledForm("f8f6f4", atype, btype)
        codes = [(reg_in >> (8 * i)) & ((1 << BS.ELEMENT_BITS[atype]) - 1) for i in range(4)]
        if any((reg_in >> (8 * i)) & 0xFF != c for i, c in enumerate(codes)):
            continue  # a 6-bit probe value wider than a 4-bit type: not that type's code
        ours = sum(int(x) << (8 * i) for i, x in enumerate(BS.encode_containers(f, "A", codes)))
        assert ours == reg_out, (atype, btype, hex(reg_in))


def _header(name: str) -> str:
    return (Path(cutlass_cpp.include_dirs()[0]) / "cute" / "arch" / name).read_text()


@needs_cutlass
def test_where_cutlass_and_the_isa_disagree_the_16x8x64_atoms_scale_vec():
    """CUTLASS's SM120_16x8x64_TN_VS<e2m1, e2m1, float, ue8m0, VS> takes VS 16 or 32 ("Scaling factor vector size
    has to be 16 or 32") and passes a 32-bit scale register for VS 16 (SFBits), but always issues
    .scale_vec::2X, which the ISA (Table 35: scale_A is M x 2) reads as one factor per 32 elements of K = 64: two
    bytes, not four. Its ue4m3 atom takes VS 32 with a 16-bit register and issues .scale_vec::4X (four factors of
    16). The model follows the ISA: the vector size is K / scale_vec."""
    text = _header("mma_sm120.hpp")
    for stype, issued in (("float_ue8m0_t", "scale_vec::2X"), ("float_ue4m3_t", "scale_vec::4X")):
        body = text[text.index(f"struct SM120_16x8x64_TN_VS<float_e2m1_t, float_e2m1_t, float, {stype}, VS>"):]
        body = body[:body.index("};")]
        assert "VS == 16 || VS == 32" in body and "SFBits = (VS == 32) ? 16 : 32" in body
        assert re.findall(r"scale_vec::\dX", body) == [issued]
    assert BS.BlockScaledForm("mxf4nvf4", "e2m1", "e2m1", stype="ue8m0", scale_vec="2X").scale_vector_size == 32
    assert BS.BlockScaledForm("mxf4nvf4", "e2m1", "e2m1", stype="ue4m3", scale_vec="4X").scale_vector_size == 16


@needs_cutlass
def test_a_wrong_scale_map_disagrees_with_cutlass(atoms):
    """The check can fail: A's pair members swapped (lane 4g holding row g + 8) is not CuTe's SFALayout."""
    atom, f = next(v for v in atoms.values() if v[1].kind == "mxf8f6f4" and not v[1].sparse)
    cute = _cute(atom, "sfa")
    lane = np.arange(32)
    wrong = lane // 4 + 8 * (1 - lane % 2)
    assert not np.array_equal(cute[:, 0, 0], wrong)
    assert np.array_equal(cute[:, 0, 0], lane // 4 + 8 * (lane % 2))


# ---------------------------------------------------------------------------------------------------- kernels

@pytest.fixture(scope="module")
def compiled():
    """Every sm_120a and sm_121a kernel through the harness's compile path (compile_job -> compile_many: NVRTC,
    nvdisasm, the SASS check), cached by the compile cache."""
    from harness.families.mma_sync import FAMILY
    kernels = KS.arch_kernels("sm_120a") + KS.arch_kernels("sm_121a")
    jobs = [nvrtc.compile_job(k, FAMILY.sass_check(k)) for k in kernels]
    return dict(zip(kernels, nvrtc.compile_many(jobs, workers=2)))


def test_nine_kernels_an_arch_cover_every_form_and_load():
    assert [k.name for k in KS.arch_kernels("sm_120a")] == [k.name for k in KS.arch_kernels("sm_121a")]
    assert len(KS.arch_kernels("sm_120a")) == 9
    issued = {v for key in KS.all_keys() for v in KS.variants(key)}
    assert set(BS.all_forms()) | set(BS.SUB_BYTE_LOADS) <= issued
    for key in KS.all_keys():  # every selector component takes every legal value in a block-scaled kernel
        if key.group in ("mxf8f6f4", "mxf4"):
            for sv in {v.scale_vec for v in KS.variants(key)}:
                vs = [v for v in KS.variants(key) if v.scale_vec == sv]
                got = [sorted({v.selectors[i] for v in vs}) for i in range(4)]
                assert got == [list(BS.BYTE_IDS[sv]), [0, 1], list(BS.BYTE_IDS[sv]), [0, 1, 2, 3]]
    with pytest.raises(ValueError, match="sm_120a / sm_121a code"):
        KS.arch_kernels("sm_90a")


def test_every_kernel_compiles_and_passes_its_sass_check(compiled):
    for k, c in compiled.items():
        assert c.error is None, (k.name, k.arch, c.error)


def test_each_form_alone_shows_its_sass_instruction():
    """A sample of variants compiled alone (source(key, only_variant)): the one tensor or ldmatrix instruction of
    its listing is kernel_sm120.sass_expected's."""
    from harness.run import toolchain
    tc = toolchain.default()
    picks = [(key, i) for key in KS.all_keys() for i in (0, len(KS.variants(key)) - 1)]
    src = "".join(f"namespace p{n} {{\n{KS.source(key, i, f'probe_{n}')}\n}}\n" for n, (key, i) in enumerate(picks))
    cubin, log = tc.compile(src, "sm120_probe", "sm_120a", nvrtc.DEFAULT_OPTIONS + tc.fast_compile_options)
    assert cubin is not None, log
    listings = sass.function_listings(sass.disassembly(cubin))
    for n, (key, i) in enumerate(picks):
        ops = [x.opcode for x in sass.instructions(listings[f"probe_{n}"])
               if re.fullmatch(r"([HIDBQO]MMA|LDSM)(\..*)?", x.opcode)]
        assert ops == [KS.sass_expected(KS.variants(key)[i])], (key.name, i)


def test_a_wrong_sass_rule_is_a_broken_kernel(compiled):
    """The check can fail: a kernel's listing judged against the rules of its sibling (e2m1 and e3m2 swapped in
    one variant's expectation shows, and so does an f16 kernel judged as the f32 one)."""
    k = next(x for x in compiled if x.name == "mmasync120_m16n8k32_f8f6f4_f32_dense" and x.arch == "sm_120a")
    listing = sass.instructions(sass.function_listings(sass.sass(compiled[k].cubin_path))[k.name])
    assert [b for b in (r.broken(listing) for r in KS.sass_check(k.form, "sm_120a").rules) if b] == []
    f16 = KS.Sm120Key("f8f6f4", False, "f16")
    broken = [b for b in (r.broken(listing) for r in KS.sass_check(f16, "sm_120a").rules) if b]
    assert any("QMMA.16832.F16.E4M3.E4M3" in b for b in broken)


def test_a_sweep_plans_sm120a_cases_and_records_them_not_run_naming_the_arch_on_an_h100(monkeypatch, tmp_path):
    """On a (simulated) H100 the family's sm_90a kernels are the ones that run; its sm_120a kernels' cases are each
    recorded not run with a reason that names sm_120a (not None, though a GPU of another of the family's archs is
    here), and sm_121a's kernels are compiled only."""
    from harness import plan as planning, sweep
    from harness.records import results
    from tests.simulated import fake_gpus
    fake_gpus.install(monkeypatch, ["sm_90a"])
    p = planning.make(planning.Selection(families=("mma_sync",)), {"mma_sync": "sm_90a"}, cache=True)
    arch_of = {k.name: str(k.arch) for k, _ in p.work}
    assert sorted(set(arch_of.values())) == ["sm_120a", "sm_90a"]
    assert {str(k.arch) for k in p.compile_only} == {"sm_121a"} and len(p.compile_only) == 9
    sm120 = [(k, cs) for k, cs in p.work if str(k.arch) == "sm_120a"]
    assert sum(len(cs) for _, cs in sm120) == 180
    out = tmp_path / "r.jsonl"
    only_sm120 = planning.Plan(sm120, compile_only=p.compile_only)
    summary = sweep.execute(only_sm120, sweep.SweepConfig(out_path=out, workers=1), log=lambda m: None)
    _, recs, _ = results.load(out)
    assert len(recs) == 180 and {r["status"] for r in recs.values()} == {"not-run"}
    assert {r["reason"] for r in recs.values()} == {summary["not_run_reasons"]["mma_sync"]}
    assert summary["not_run_reasons"]["mma_sync"].startswith("needs a sm_120a GPU; this is ")


# ---------------------------------------------------------------------------------------------------- the launch
# prepare -> pack -> a simulated sm_120a GPU (tests/simulated/mma_sync_sm120_device.py, which runs each launch from
# the launch alone through the models) -> readback. The models are the device's too, so these check the packing,
# the variants and the diff, not the hardware: no sm_120 GPU has run any of it.

from harness.families.mma_sync import FAMILY, readback_sm120 as RB120, reference_sm120 as R120  # noqa: E402
from tests.run import simsweep  # noqa: E402
from tests.simulated import mma_sync_sm120_device  # noqa: E402

SM120_KERNELS = FAMILY.kernels("sm_120a")


def run_on_sim(kernel, cases):
    return {r["id"]: r for r in simsweep.in_process(kernel, cases, mma_sync_sm120_device.run)}


@pytest.fixture
def faulty_device(monkeypatch):
    def use(misread=None, scale_misread=None):
        monkeypatch.setattr(mma_sync_sm120_device, "misread", misread)
        monkeypatch.setattr(mma_sync_sm120_device, "scale_misread", scale_misread)
    return use


def test_the_launch_is_the_kernels_parameter_list():
    """pack's parameter record is the .cu's CaseParams field for field, and its inputs and outputs are the kernel's
    pointer parameters after `images, params`, in order (launch.device_buffers passes them so)."""
    cu = (Path(KS.__file__).parent / "mma_sync_sm120.cu").read_text()
    struct = cu[cu.index("struct CaseParams {"):cu.index("};")]
    assert re.findall(r"\b(\w+);", struct) == list(KS.PARAMS_DTYPE.names)
    widths = [8 if t == "long long" else 4 for t in re.findall(r"unsigned (long long|int) \w+;", struct)]
    assert widths == [KS.PARAMS_DTYPE[n].itemsize for n in KS.PARAMS_DTYPE.names]
    head = cu[cu.index("{{KERNEL_NAME}}("):]
    params = re.findall(r"\*\s*__restrict__\s+(\w+)", head[:head.index(")\n{")])
    for kernel, cases in SM120_KERNELS:
        launch = KS.pack([R120.prepare(cases[0])])
        assert params == ["images", "params", *launch.inputs, *launch.outputs], kernel.name
        w = KS.words(kernel.form)
        assert [launch.inputs[x].shape[1:] for x in ("a_in", "b_in", "c_in", "sf_in")] == [
            (32, w["A"]), (32, w["B"]), (32, w["C"]), (32, 2)]
        assert launch.outputs["d_out"].shape == (32, w["D"]) and launch.threads == 32


def test_every_sm120a_case_passes_on_the_simulated_device():
    seen = 0
    for kernel, cases in SM120_KERNELS:
        recs = run_on_sim(kernel, cases)
        assert set(recs) == {c.id for c in cases}
        for r in recs.values():
            assert r["status"] == "pass" and r["mismatches"] == 0 and r["unwritten_registers"] == 0, r
            assert r["arch"] == "sm_120a" and r["kernel"] == kernel.name
        seen += len(cases)
    assert seen == 180


def test_the_inputs_are_the_models_and_every_byte_nobody_reads_is_a_decoy():
    """Per case: A, B, C and D's registers unpack to values of the type's pool; every scale byte the selectors pick
    holds a pool factor, each row's chunks different ones, and every other byte the decoy; a sparse form's metadata
    is legal ordered metadata; the preparation keeps only the expectation once slimmed."""
    for _, cases in SM120_KERNELS:
        for c in cases:
            p = R120.prepare(c)
            if c.key.group == "ldmatrix":
                assert (p.expected[:, c.variant.num:] == R120.POISON).all()
                assert (p.ld_rows % 16 == 0).all() and len(set(p.ld_rows.tolist())) == 32
                continue
            f = c.variant
            for op, fm, regs in (("A", BS.a_map(f), p.a_words), ("B", BS.b_map(f), p.b_words)):
                slots = BS.unpack_registers(fm, regs)
                t = f.atype if op == "A" else f.btype
                assert np.isin(BS.decode_containers(f, op, slots), R120.element_pool(f, t)[0]).all()
                assert np.array_equal(BS.encode_containers(f, op, BS.decode_containers(f, op, slots)), slots)
            if f.sparse:
                from harness.families.mma_sync import fragments as FR
                fields = FR.decode_metadata(BS.metadata_form(f), p.e_words)
                assert ((fields & 3) < (fields >> 2)).all()
            if f.block_scaled:
                decoy = int(R120.pool_codes(f.stype, (R120.SCALE_DECOY[f.stype],))[0][0])
                for j, op in enumerate("AB"):
                    sm = BS.scale_map(f, op)
                    b = (p.sf_words[:, j, None] >> (8 * np.arange(4, dtype=np.uint32))) & 0xFF
                    assert (b[~sm.held] == decoy).all() and np.isin(b[sm.held], R120.pool_codes(
                        f.stype, R120.SCALE_POOL[f.stype])[0]).all()
                    factors = BS.decode_scales(f, op, p.sf_words[:, j])
                    assert all(len(set(row)) == f.scale_count for row in factors.tolist())
            else:
                assert not p.sf_words.any()
            slim = p.slim()
            assert slim.image is None and slim.a_words is None and slim.expected is p.expected


def test_the_exactness_check_refuses_a_pool_that_could_round(monkeypatch):
    """The check can fail: e4m3 values from 2^-9 to 448 in one f32 sum cannot be exact in every order."""
    key = KS.Sm120Key("f8f6f4")
    case = next(c for c in KS.cases_for_key(key) if (c.variant.atype, c.variant.btype) == ("e4m3", "e4m3"))
    monkeypatch.setitem(R120.WIDE_POOL, "e4m3", (2.0 ** -9, 448.0))
    R120.pool_codes.cache_clear()
    try:
        with pytest.raises(AssertionError, match="the value pools are wrong"):
            R120.prepare(case)
    finally:
        R120.pool_codes.cache_clear()
    with pytest.raises(ValueError, match="not exactly one of its codes"):
        R120.pool_codes("e2m1", (0.25,))


def _swap_lanes(lane_a, lane_b):
    def fn(name, out):
        o = out["d_out"]
        o[:, [lane_a, lane_b]] = o[:, [lane_b, lane_a]]
        return out
    return fn


def test_a_device_that_swaps_two_lanes_d_registers_is_caught_and_named(faulty_device):
    """Lanes 5 and 6 swapped: every case fails, named on lanes 5-6; an mma's first element is one lane 5 or 6 holds
    in D's map (rows 1, 9; columns 2-5), a sub-byte load's one of row 1's elements 4-11 of a matrix."""
    faulty_device(misread=_swap_lanes(5, 6))
    for kernel, cases in SM120_KERNELS:
        recs = run_on_sim(kernel, cases)
        for c in cases:
            r = recs[c.id]
            assert r["status"] == "fail" and r["bad_lanes"] == "5-6" and r["unwritten_registers"] == 0, r
            first = r["first_mismatches"][0]
            assert first["lane"] in (5, 6) and first["expected"] != first["got"]
            if c.key.group == "ldmatrix":
                assert first["operand"] == "ldmatrix" and first["row"] == 1 and 4 <= first["element"] < 12
                assert first["matrix"] == first["register"] < c.variant.num
            else:
                assert first["operand"] == "D" and first["row"] in (1, 9) and first["col"] in (2, 3, 4, 5)
                lane, reg, sub = BS.acc_map(c.variant).locate(first["row"], first["col"])
                assert (int(lane), int(reg), int(sub)) == (first["lane"], first["register"], first["sub"])


def test_a_device_that_swaps_the_scale_bytes_a_selector_picks_is_caught(faulty_device):
    """The bytes byte-id and byte-id + 1 of every lane's scale-a-data (1X: the picked byte and its neighbour, a
    decoy) exchanged before the MMA reads them: every block-scaled case fails, on D alone; the same on scale-b-data.
    The f8f6f4 cases, which read no scale register, pass."""
    for target in "AB":
        def swap(form, op, regs, target=target):
            if op != target:
                return regs
            lo = form.byte_id_a if op == "A" else form.byte_id_b
            hi = lo + 1 if form.scale_count > 1 else lo ^ 1
            b = [(regs >> (8 * i)) & 0xFF for i in range(4)]
            b[lo], b[hi] = b[hi], b[lo]
            return sum(x << (8 * i) for i, x in enumerate(b)).astype(np.uint32)
        faulty_device(scale_misread=swap)
        failed = 0
        for kernel, cases in SM120_KERNELS:
            if kernel.form.group == "ldmatrix":
                continue
            recs = run_on_sim(kernel, cases)
            for c in cases:
                r = recs[c.id]
                if not c.variant.block_scaled:
                    assert r["status"] == "pass", r
                    continue
                assert r["status"] == "fail" and r["bad_operands"] == "D" and r["unwritten_registers"] == 0, r
                failed += 1
        assert failed == 74  # mxf8f6f4 28 + mxf4 / mxf4nvf4 9, dense and sparse


def test_a_device_that_writes_past_an_x1_load_or_leaves_d_unwritten_is_caught(faulty_device):
    """The last output word of every lane zeroed by the sub-byte load (past .x1 / .x2: a register no load writes),
    left poisoned by an mma: every case fails on that register."""
    def fn(name, out):
        out["d_out"][:, :, -1] = 0 if name.endswith("ldmatrix_m8n16_b8x16") else R120.POISON
        return out
    faulty_device(misread=fn)
    for kernel, cases in SM120_KERNELS:
        recs = run_on_sim(kernel, cases)
        last = KS.words(kernel.form)["D"] - 1
        for c in cases:
            r = recs[c.id]
            assert r["status"] == "fail" and r["bad_registers"] == str(last), r
            if c.key.group == "ldmatrix" and c.variant.num < 4:
                assert r["mismatches"] == 32 and "no register .x" in r["first_mismatches"][0]["expected"]
            elif c.key.group != "ldmatrix":
                assert r["unwritten_registers"] == 32


def test_a_launch_that_swaps_the_scale_registers_or_issues_variant_0_fails(monkeypatch):
    """Planted bugs in the launch packing: scale-a-data and scale-b-data handed in each other's place fails every
    block-scaled case; every case issued as variant 0 fails every case of another form."""
    real = KS.pack

    def swapped_scales(preps):
        inp = real(preps)
        inp.inputs["sf_in"] = inp.inputs["sf_in"][:, :, ::-1].copy()
        return inp

    def variant_0(preps):
        inp = real(preps)
        inp.params["variant"] = 0
        return inp
    def semantics(f):  # mxf4 and mxf4nvf4 of one scale type and size compute the same D
        return (f.atype, f.btype, f.stype, f.scale_vec, f.selectors) if f.block_scaled else (f.atype, f.btype)

    def not_variant_0(c):
        return c.key.group == "ldmatrix" and c.variant.num > 1 or c.key.group != "ldmatrix" and semantics(
            c.variant) != semantics(KS.variants(c.key)[0])
    for bug, failing in ((swapped_scales, lambda c: c.variant.block_scaled), (variant_0, not_variant_0)):
        monkeypatch.setattr(KS, "pack", bug)
        n = 0
        for kernel, cases in SM120_KERNELS:
            if kernel.form.group in ("f8f6f4", "ldmatrix") and bug is swapped_scales:
                continue
            recs = run_on_sim(kernel, cases)
            for c in cases:
                if failing(c):
                    assert recs[c.id]["status"] == "fail", (bug.__name__, c.id)
                    n += 1
        assert n > 70, bug.__name__


def test_a_sweep_on_a_simulated_sm120_gpu_runs_and_passes_the_sm120a_cases(monkeypatch, tmp_path):
    """On a (simulated) sm_120 GPU the sweep launches the sm_120a kernels instead of recording them not run: all
    180 cases pass through the real engine and workers (the simulated device runs each launch)."""
    from harness import plan as planning
    from tests.simulated import fake_gpus
    fake_gpus.install(monkeypatch, ["sm_120a"], ccs={"sm_120a": "12.0"})
    p = planning.make(planning.Selection(families=("mma_sync",)), {"mma_sync": "sm_120a"}, cache=True)
    work = [(k, cs) for k, cs in p.work if str(k.arch) == "sm_120a"]
    assert sum(len(cs) for _, cs in work) == 180
    summary, recs, _, _ = simsweep.sweep(planning.Plan(work), tmp_path / "r.jsonl", workers=1)
    assert len(recs) == 180 and {r["status"] for r in recs.values()} == {"pass"}, summary
