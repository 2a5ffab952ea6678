"""wgmma.mma_async.sp on the CPU: the sparsity model (harness/spec/sparsity.py) against values worked by hand from
the PTX ISA's text, the forms and the instruction text, the case plan's coverage, the generated kernel, and the
sweep command on a machine without a GPU."""
import json

import numpy as np
import pytest

from harness import cli, plan, registry
from harness.enums import ExitCode, FamilyName
from harness.families.wgmma_sp import FAMILY, cases, forms, kernel, reference
from harness.spec import sparsity as S
from tests.simulated import fake_gpus

ALL_KEYS = forms.all_kernel_keys()


# ---------------------------------------------------------------------------------------------------- the model

def test_one_chunks_metadata_as_the_text_defines_it():
    f16, tf32, e4m3 = S.format_of("f16"), S.format_of("tf32"), S.format_of("e4m3")
    # 2:4: the index of the first stored element in bits 1..0, of the second in bits 3..2
    assert S.nibble(f16, (0, 1)) == 0b0100 and S.nibble(f16, (2, 3)) == 0b1110 and S.nibble(f16, (1, 3)) == 0b1101
    assert S.positions(e4m3, 0b1000) == (0, 2)
    # the text: 0b0000, 0b0101, 0b1010, 0b1111 are invalid, every other value legal; tf32: 0b0100, 0b1110 only
    assert set(S.legal_nibbles(f16)) == set(range(16)) - {0b0000, 0b0101, 0b1010, 0b1111}
    assert S.legal_nibbles(f16, ordered_only=True) == (0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b1110)
    assert S.legal_nibbles(tf32) == (0b0100, 0b1110) and S.positions(tf32, 0b1110) == (1,)
    for bad in (0b0000, 0b0101, 0b1010, 0b1111):
        with pytest.raises(S.SparsityError, match="invalid"):
            S.positions(f16, bad)
    with pytest.raises(S.SparsityError, match="undefined"):
        S.positions(tf32, 0b0001)
    assert (f16.k, tf32.k, e4m3.k, S.format_of("s8").k) == (32, 16, 64, 64)
    assert f16.selectors == tf32.selectors == (0, 1) and e4m3.selectors == S.format_of("u8").selectors == (0,)


def test_decompress_places_each_stored_element_where_its_index_says():
    f16 = S.format_of("f16")
    packed = np.arange(1, 17).reshape(1, 16).repeat(64, 0)
    nib = np.array([[0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b1110, 0b0001, 0b0111]] * 64)
    row = S.decompress(f16, packed, nib)[0]
    # chunk 0 (0,1): 1 2 . .; chunk 1 (0,2): 3 . 4 .; chunk 2 (0,3): 5 . . 6; chunk 3 (1,2): . 7 8 .;
    # chunk 4 (1,3): . 9 . 10; chunk 5 (2,3): . . 11 12; chunk 6 reversed (1,0): 14 13 . .; 7 (3,1): . 16 . 15
    assert row.tolist() == [1, 2, 0, 0, 3, 0, 4, 0, 5, 0, 0, 6, 0, 7, 8, 0,
                            0, 9, 0, 10, 0, 0, 11, 12, 14, 13, 0, 0, 0, 16, 0, 15]
    tf32 = S.format_of("tf32")
    out = S.decompress(tf32, np.arange(1, 9).reshape(1, 8).repeat(64, 0), np.array([[4, 14] * 4] * 64))
    assert out[5].tolist() == [1, 0, 0, 2, 3, 0, 0, 4, 5, 0, 0, 6, 7, 0, 0, 8]


def test_metadata_of_the_wrong_shape_is_refused_not_read_across_rows():
    """metadata_registers reads the nibbles flat (row * chunks + chunk): nibbles of another shape must be refused,
    not read from the wrong rows."""
    with pytest.raises(S.SparsityError, match="64x8"):
        S.metadata_registers("f16", np.zeros((64, 4), np.int64), 0)
    with pytest.raises(S.SparsityError, match="64x16"):
        S.metadata_registers("e4m3", np.zeros((64, 8), np.int64), 0)


def test_thread_38_worked_by_hand_from_the_spec():
    """Thread 38 is lane 6 of warp 1: g = 1, q = 2. Warp 1 describes rows 16-31 (9.7.15.6.2's table).
    f16, selector 1 (threads T2, T3): q = 2 is the pair's first thread, so its nibbles 0-3 are chunks 0-3
    (columns 0-15) of row 16 + 1 = 17 and nibbles 4-7 the same chunks of row 17 + 8 = 25 (Figure 176 with
    i = 1). With selector 0 it supplies nothing. 8-bit, selector 0: q = 2 is row 17, chunks 8-15 (columns
    32-63, Figure 181)."""
    row, chunk = S.metadata_map("f16", 1)
    assert row[38].tolist() == [17] * 4 + [25] * 4 and chunk[38].tolist() == [0, 1, 2, 3] * 2
    assert row[39].tolist() == [17] * 4 + [25] * 4 and chunk[39].tolist() == [4, 5, 6, 7] * 2
    assert (S.metadata_map("f16", 0)[0][38] == -1).all()
    row, chunk = S.metadata_map("s8", 0)
    assert row[38].tolist() == [17] * 8 and chunk[38].tolist() == list(range(8, 16))
    assert row[37].tolist() == [25] * 8 and chunk[37].tolist() == list(range(0, 8))
    # registers by hand (every other thread 0x44444444: every chunk (0,1)), read with selector 1
    regs = np.full(128, 0x44444444, np.uint32)
    regs[38] = 0xEDC9_9C84  # nibbles low to high: 4 8 C 9 | 9 C D E
    regs[39] = 0x4444_E8DC  # C D 8 E | 4 4 4 4
    nib = S.metadata_read("f16", regs, 1)
    assert nib[17].tolist() == [0x4, 0x8, 0xC, 0x9, 0xC, 0xD, 0x8, 0xE]
    assert nib[25].tolist() == [0x9, 0xC, 0xD, 0xE, 0x4, 0x4, 0x4, 0x4]


@pytest.mark.parametrize("atype", sorted(S.FORMATS))
def test_every_chunk_is_described_by_exactly_one_read_thread(atype):
    fmt = S.format_of(atype)
    for sel in fmt.selectors:
        row, chunk = S.metadata_map(atype, sel)
        ok = row >= 0
        seen = np.zeros((64, fmt.chunks), int)
        np.add.at(seen, (row[ok], chunk[ok]), 1)
        assert (seen == 1).all()
        assert set(np.flatnonzero(ok.any(axis=1)) % 4) == ({2 * sel, 2 * sel + 1} if fmt.chunks == 8 else {0, 1, 2, 3})
        # warp w describes rows 16w .. 16w + 15
        assert all(set(row[32 * w:32 * w + 32][ok[32 * w:32 * w + 32]]) <= set(range(16 * w, 16 * w + 16))
                   for w in range(4))
        rng = np.random.default_rng(0)
        nib = rng.choice(S.legal_nibbles(fmt), size=(64, fmt.chunks))
        others = rng.integers(0, 1 << 32, 128, dtype=np.uint64).astype(np.uint32)
        regs = S.metadata_registers(atype, nib, sel, others)
        assert np.array_equal(S.metadata_read(atype, regs, sel), nib)
        assert np.array_equal(regs[~ok.any(axis=1)], others[~ok.any(axis=1)])


def test_an_undefined_selector_is_refused():
    with pytest.raises(S.SparsityError, match="selector 1 is undefined for e4m3"):
        S.metadata_map("e4m3", 1)
    with pytest.raises(S.SparsityError, match="selector 2"):
        S.metadata_map("f16", 2)


# ---------------------------------------------------------------------------------------------------- forms

def test_the_instruction_text_of_each_form():
    sel = lambda key, **kw: forms.Variant(**{**vars(forms.variants(key)[0]), **kw})
    k = forms.KernelKey("f16", 8, "f32", "SS")
    assert forms.instruction(k, sel(k, atype="bf16", btype="bf16", trans_a=1, selector=1), "{d}", "%4", "%5", "%6",
                             "p") == ("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.bf16.bf16 {d}, %4, %5, %6, 1, p, "
                                      "1, 1, 1, 0;")
    k = forms.KernelKey("f16", 16, "f16", "RS")
    assert forms.instruction(k, sel(k, scale_b=-1), "{d}", "{a}", "%9", "%11", "p") == \
        "wgmma.mma_async.sp.sync.aligned.m64n16k32.f16.f16.f16 {d}, {a}, %9, %11, 0, p, 1, -1, 0;"
    k = forms.KernelKey("tf32", 24, "f32", "SS")
    assert forms.instruction(k, sel(k, selector=1), "{d}", "%12", "%13", "%15", "p") == \
        "wgmma.mma_async.sp.sync.aligned.m64n24k16.f32.tf32.tf32 {d}, %12, %13, %15, 1, p, 1, 1;"
    k = forms.KernelKey("f8", 256, "f16", "RS")
    assert forms.instruction(k, sel(k, atype="e5m2", btype="e4m3"), "{d}", "{a}", "%68", "%70", "p") == \
        "wgmma.mma_async.sp.sync.aligned.m64n256k64.f16.e5m2.e4m3 {d}, {a}, %68, %70, 0, p, 1, 1;"
    k = forms.KernelKey("s8", 48, "s32", "SS")
    assert forms.instruction(k, sel(k, atype="u8", satfinite=True), "{d}", "%24", "%25", "%27", "p") == \
        "wgmma.mma_async.sp.sync.aligned.m64n48k64.satfinite.s32.u8.s8 {d}, %24, %25, %27, 0, p;"


def test_forms_and_variants_cover_the_ptx_isa_list():
    by_kind = {}
    for k in ALL_KEYS:
        by_kind.setdefault((k.kind, k.dtype), set()).add(k.n)
    assert by_kind == {("f16", "f16"): set(range(8, 257, 8)), ("f16", "f32"): set(range(8, 257, 8)),
                       ("tf32", "f32"): set(range(8, 257, 8)), ("f8", "f16"): set(range(8, 257, 8)),
                       ("f8", "f32"): set(range(8, 257, 8)),
                       ("s8", "s32"): {8, 16, 24, 32} | set(range(48, 257, 16))}
    assert len(ALL_KEYS) == 356 and {k.a_src for k in ALL_KEYS} == {"SS", "RS"}
    vs = forms.variants(forms.KernelKey("f16", 8, "f32", "SS"))
    assert {(v.atype, v.trans_a, v.trans_b, v.selector) for v in vs} == {
        (t, ta, tb, s) for t in ("f16", "bf16") for ta in (0, 1) for tb in (0, 1) for s in (0, 1)}
    s8 = forms.variants(forms.KernelKey("s8", 8, "s32", "RS"))
    assert {(v.atype, v.btype, v.satfinite, v.selector) for v in s8} == {
        (a, b, s, 0) for a in ("s8", "u8") for b in ("s8", "u8") for s in (False, True)}
    assert {v.selector for v in forms.variants(forms.KernelKey("tf32", 8, "f32", "RS"))} == {0, 1}
    assert {v.selector for v in forms.variants(forms.KernelKey("f8", 8, "f16", "SS"))} == {0}
    with pytest.raises(ValueError, match="no b1|unknown"):
        forms.validate_key(forms.KernelKey("b1", 8, "s32", "SS"))
    with pytest.raises(ValueError, match="selector 0, not 1"):
        forms.validate_variant(forms.KernelKey("s8", 8, "s32", "SS"), forms.Variant("s8", "s8", selector=1))
    with pytest.raises(ValueError, match="N = 40"):
        forms.validate_key(forms.KernelKey("s8", 40, "s32", "SS"))


# ---------------------------------------------------------------------------------------------------- cases

def test_the_plan_covers_every_layout_pattern_and_control():
    all_cases = [c for _, cs in FAMILY.kernels("sm_90a") for c in cs]
    assert len({c.id for c in all_cases}) == len(all_cases)
    for kind in forms.KINDS:
        ks = [c for c in all_cases if c.key.kind == kind]
        b = {(c.b.layout.major, c.b.layout.swizzle) for c in ks if not c.control}
        a = {(c.a.layout.major, c.a.layout.swizzle) for c in ks if c.a is not None and not c.control}
        majors = ("K", "MN") if kind == "f16" else ("K",)
        # B is 64 bytes of K: a K-major B has no 32-byte swizzle; the packed A (32 bytes) has every swizzle
        assert b == {(m, s) for m in majors for s in ("none", "32B", "64B", "128B")} - {("K", "32B")}
        assert a == {(m, s) for m in majors for s in ("none", "32B", "64B", "128B")}
        assert {c.key.a_src for c in ks} == {"SS", "RS"}
        assert {c.pattern for c in ks} == set(cases.patterns_for(cases.forms.KIND_TYPES[kind][0]))
        controls = {c.control for c in ks}
        want = {"wrong-swizzle", "swapped-lbo-sbo", "start+16", "wrong-swizzle@A", *cases.META_CONTROLS}
        assert want <= controls and ((cases.SELECTOR_CONTROL in controls) == (kind in ("f16", "tf32")))
    # every legal index pair of every type appears in the metadata of some case
    for atype in S.FORMATS:
        fmt = S.format_of(atype)
        seen = set()
        for pattern in cases.patterns_for(atype):
            seen |= set(np.unique(reference.pattern_nibbles(fmt, pattern, np.random.default_rng(1))).tolist())
        assert seen == set(S.legal_nibbles(fmt))
    assert all(c.unsettled for c in all_cases if c.pattern == "reversed")
    assert not any(c.unsettled for c in all_cases if c.pattern != "reversed")


def test_the_cycle_pattern_differs_wherever_a_control_or_a_misread_would_look():
    for atype in ("f16", "tf32", "s8"):
        fmt = S.format_of(atype)
        nib = reference.pattern_nibbles(fmt, "cycle", None)
        assert set(np.unique(nib).tolist()) == set(S.legal_nibbles(fmt, ordered_only=True))
        within = [c for c in range(fmt.chunks - 1) if c % 4 != 3]
        assert (nib[:, within] != nib[:, [c + 1 for c in within]]).all()  # neighbouring chunks of a nibble group
        assert (nib[:-8] != nib[8:]).all()  # rows r and r + 8 (8-bit: T0 and T1)
        half = fmt.chunks // 2  # f16/tf32: the two threads of a pair; 8-bit: T0 and T2
        assert (nib[:, :-half] != nib[:, half:]).all()
        if atype != "tf32":  # two values cannot make three neighbours differ pairwise
            assert (nib[:-8, 4:8] != nib[8:, 0:4]).all()  # chunk c + 4 of row r against chunk c of row r + 8


@pytest.mark.parametrize("control", cases.META_CONTROLS + (cases.SELECTOR_CONTROL,))
def test_a_metadata_or_selector_control_predicts_a_misread(control):
    key = forms.KernelKey("f16", 16, "f32", "RS")
    case = next(c for c in cases.cases_for_key(key) if c.control == control)
    prep = reference.prepare(case)
    assert not np.array_equal(prep.expected, prep.intended)
    truth = reference.pattern_nibbles(S.format_of("f16"), "cycle", None)
    assert not np.array_equal(prep.nibbles, truth)  # the tensor core is predicted to read other metadata
    if control == cases.SELECTOR_CONTROL:  # it reads the other thread pair, which holds the decoy
        assert np.array_equal(prep.nibbles, reference.other_pattern(S.format_of("f16"), truth))


def test_sparse_kernel_source_has_every_variant_and_the_metadata_operand():
    key = forms.KernelKey("f16", 8, "f32", "RS")
    src = kernel.source(key)
    assert "const unsigned int* __restrict__ e_regs," in src and "const unsigned int meta = e_regs[slot];" in src
    assert src.count("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.") == len(forms.variants(key))
    # %0, %1 C's and D's addresses, %2..%5 A's registers, %6 B's descriptor, %7 scale-d, %8 the metadata
    assert '"r"(p.scale_d), "r"(meta), "r"(p.variant)' in src
    assert "{tc_d0, tc_d1, tc_d2, tc_d3}, {%2, %3, %4, %5}, %6, %8, 1, p, 1, 1, 1;" in src
    dense = registry.get("wgmma").source(registry.get("wgmma").kernel_of(key.dense))
    assert "e_regs" not in dense and "{{" not in dense


def test_the_family_is_registered_and_its_launch_carries_the_metadata():
    assert registry.get(FamilyName.WGMMA_SP) is FAMILY and str(FAMILY.name) == "wgmma_sp"
    key = forms.KernelKey("s8", 8, "s32", "SS")
    inp, exp = FAMILY.prepare(FAMILY.kernel_of(key), cases.cases_for_key(key)[:3])
    assert list(inp.inputs) == ["a_regs", "c_regs", "e_regs"] and inp.inputs["e_regs"].shape == (3, 128)
    assert all(p.e_regs is None and p.image is None for p in exp)  # slimmed for the trip back


def test_sweep_on_a_machine_without_a_gpu_compiles_and_records_every_case_not_run(tmp_path, monkeypatch):
    fake_gpus.hide_real_gpus(monkeypatch)
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "sp.jsonl"
    code = cli.main(["sweep", "--family", "wgmma_sp", "--kind", "s8", "--n", "8", "--out", str(out)])
    assert code == ExitCode.NOTHING_RAN
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    case_recs = [r for r in recs if r["type"] == "case"]
    planned = plan.make(plan.Selection(families=("wgmma_sp",), kinds=("s8",), n_values=(8,))).work
    assert len(case_recs) == sum(len(cs) for _, cs in planned) > 0
    assert {r["status"] for r in case_recs} == {"not-run"} and all("sm_90a" in r["reason"] for r in case_recs)
    assert {r["family"] for r in case_recs} == {"wgmma_sp"}
    assert any(r.get("unsettled") for r in case_recs)  # the reversed-index cases say what they rest on
    summary = recs[-1]
    assert summary["type"] == "summary" and not summary.get("compile_errors")


def test_one_accumulator_element_worked_by_hand():
    """D[17, 5] of an f16 RS case, selector 0, from the registers the kernel gets, by the text alone: row 17 is
    warp 1, g = 1; its chunks 0-3 are in nibbles 0-3 of lane 4 (thread 36), chunks 4-7 in nibbles 0-3 of lane 5
    (thread 37); a nibble's bits 1..0 and 3..2 place the chunk's two stored elements, which are packed columns
    2c and 2c + 1; thread 36 holds packed columns 0, 1, 8, 9 of row 17 in its registers 0 and 2 (the dense k16
    fragment: a0, a1 at columns 2(l%4), +1; a4, a5 at +8)."""
    key = forms.KernelKey("f16", 8, "f32", "RS")
    case = next(c for c in cases.cases_for_key(key) if not c.control and c.variant.selector == 0
                and c.pattern == "cycle" and c.variant.scale_a == c.variant.scale_b == 1 and c.data == "exact")
    prep = reference.prepare(case)
    regs = [int(prep.e_regs[36]), int(prep.e_regs[37])]
    nibbles = [(regs[c // 4] >> (4 * (c % 4))) & 0xF for c in range(8)]
    a_row = [0.0] * 32
    for c, nib in enumerate(nibbles):
        for p in range(2):
            a_row[4 * c + ((nib >> (2 * p)) & 3)] = prep.a_vals[17, 4 * c + ((nib >> (2 * p)) & 3)]
    assert np.array_equal(np.nonzero(a_row)[0], np.nonzero(prep.a_vals[17])[0])
    # the stored values themselves, from thread 36's A registers (f16 halves, low half first)
    half = lambda r, hi: np.frombuffer(np.uint16((int(prep.a_regs[36, r]) >> (16 * hi)) & 0xFFFF).tobytes(),
                                       np.float16)[0]
    stored = [half(0, 0), half(0, 1), half(2, 0), half(2, 1)]  # packed columns 0, 1, 8, 9 of row 17
    nz = [a_row[k] for k in range(32) if a_row[k]]
    assert [float(x) for x in stored] == [nz[0], nz[1], nz[8], nz[9]]
    d = sum(a_row[k] * prep.b_vals[5, k] for k in range(32)) + (prep.c_vals[17, 5] if case.scale_d else 0)
    assert d == prep.expected[17, 5]


def test_a_positions_planted_after_a_decompress_is_the_one_read(monkeypatch):
    """decompress reads a table of `positions` cached per format; one planted in its place must be read (a plant
    answered from the unplanted table would be a false green of the mutation checks)."""
    f16 = S.format_of("f16")
    packed, nib = np.arange(1, 17).reshape(1, 16).repeat(64, 0), np.full((64, 8), 0b0100)
    assert S.decompress(f16, packed, nib)[0, :4].tolist() == [1, 2, 0, 0]
    monkeypatch.setattr(S, "positions", lambda fmt, v: (2, 3))
    assert S.decompress(f16, packed, nib)[0, :4].tolist() == [0, 0, 1, 2]
