"""The project's tcgen05 models diffed against NVIDIA's own code (CUTLASS's C++ headers, built for the host).

- tests/oracles/cutlass_tcgen05_desc.cpp prints instruction descriptors (UMMA::make_instr_desc*, the raw
  InstrDescriptor bitfields), shared-memory descriptors from UMMA::make_umma_desc over tiles of every UMMA layout
  atom with each tile's element -> bit-address map, and UMMA::make_column_zero_mask values;
- tests/oracles/cutlass_legality.py compiles every (MMA atom, M, N, majors) candidate against the static_asserts of
  CUTLASS's SM100/SM103 UMMA atoms.

Where CUTLASS and the PTX ISA disagree, the model follows neither blindly: each such place is listed below with
both sources, the test checks that the model differs from CUTLASS exactly there (so a list entry that no longer
applies fails too).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from dataclasses import dataclass

import numpy as np
import pytest

from harness.spec import desc_tcgen05, descriptors, idesc, layouts as L, zero_mask
from harness.spec.descriptors import DescriptorError
from tests.oracles import cutlass_cpp

pytestmark = [pytest.mark.cutlass,
              pytest.mark.skipif(cutlass_cpp.skip_reason() is not None, reason=str(cutlass_cpp.skip_reason()))]


@pytest.fixture(scope="module")
def _built():
    """Build both oracles at once (two g++ processes; each is cached by its source text)."""
    from concurrent.futures import ThreadPoolExecutor
    from tests.oracles import cutlass_legality
    with ThreadPoolExecutor(2) as pool:
        rej = pool.submit(cutlass_legality.rejections)
        out = pool.submit(cutlass_cpp.run_json, "cutlass_tcgen05_desc.cpp")
        rej.result()
        return out.result(), cutlass_legality


@pytest.fixture(scope="module")
def oracle(_built):
    return _built[0]


@pytest.fixture(scope="module")
def legality(_built):
    return _built[1]


# ---------------------------------------------------------------------------------------------------- idesc

def _idesc_of(row) -> idesc.InstrDescriptor:
    src, kind, a, b, c, m, n, ta, tb, na, nb, sat, ms, sf, asf, bsf, k96, _ = row
    kw = dict(transpose_a=bool(ta), transpose_b=bool(tb), negate_a=bool(na), negate_b=bool(nb), saturate=bool(sat),
              max_shift=ms, a_sf_id=asf, b_sf_id=bsf, k96=bool(k96))
    if sf:
        kw["scale_type"] = sf
    return idesc.InstrDescriptor(kind, a, b, c, m, n, **kw)


def test_every_cutlass_instruction_descriptor_has_the_models_bits(oracle):
    rows = oracle["idesc"]
    assert len(rows) > 20000 and {r[1] for r in rows} == set(idesc.KINDS)
    bad = []
    for r in rows:
        got = idesc.pack_idesc(_idesc_of(r))
        if got != r[-1]:
            bad.append(f"{r[:-1]}: CUTLASS 0x{r[-1]:08x}, model 0x{got:08x} (differ 0x{got ^ r[-1]:08x})")
    assert not bad, f"{len(bad)} descriptors differ, e.g.\n" + "\n".join(bad[:10])


def test_every_legal_cutlass_descriptor_encodes_and_decodes_the_same(oracle):
    """Where the model calls the inputs legal, encode_idesc gives CUTLASS's value and decode_idesc gives them back."""
    checked = 0
    for r in oracle["idesc"]:
        d = _idesc_of(r)
        cg = 2 if d.m == 256 else 1
        ws = d.max_shift > 0 or d.m == 32
        d = idesc.InstrDescriptor(**{**descriptors.as_dict(d), "cta_group": cg, "ws": ws and d.n in (64, 128, 256)})
        try:
            v = idesc.encode_idesc(d)
        except DescriptorError:
            continue
        assert v == r[-1], r
        info = idesc.decode_idesc(v, d.kind, d.cta_group, d.ws)
        assert info["problems"] == [], (r, info)
        f = info["fields"]
        assert (f["atype"], f["btype"], f["m"], f["n"], f["transpose_a"], f["transpose_b"]) == \
            (d.atype, d.btype, d.m, d.n, d.transpose_a, d.transpose_b), r
        checked += 1
    assert checked > 5000


# ---------------------------------------------------------------------------------------------------- legality

@dataclass(frozen=True)
class Disagreement:
    """A CUTLASS static_assert that the model deliberately does not follow for the candidates `applies` selects."""
    name: str
    asserts: tuple  # header:line suffixes of the static_asserts excused
    applies: object  # Candidate -> bool
    why: str


H_UMMA, H_TRAITS = "cute/arch/mma_sm100_umma.hpp", "cute/atom/mma_traits_sm100.hpp"
DISAGREEMENTS = [
    Disagreement("i8 N = 24", (f"{H_UMMA}:716", f"{H_UMMA}:756"),
                 lambda c: c.kind == "i8" and c.cta_group == 1 and c.n == 24 and c.major_b == "K",
                 "PTX ISA 9.7.16.2.1 Table 'Various combinations of .kind and shapes': .kind::i8, cta_group 1: "
                 "N = {8, 16, 24, 32, 48, ... 256}; CUTLASS: N == 8 || N % 16 == 0 (with an MN-major B both "
                 "refuse N = 24: the 8-bit 'steps of 16' of a transposed B)"),
    Disagreement("A from Tensor Memory, one CTA, M = 128, N % 16 = 8",
                 (f"{H_UMMA}:130", f"{H_UMMA}:174", f"{H_UMMA}:1035"),
                 lambda c: c.a_src == "TS" and c.cta_group == 1 and c.m == 128 and c.n % 16 == 8 <= c.n <= 256,
                 "PTX: no shape rule specific to A in Tensor Memory (N steps of 8 for M = 128); CUTLASS's "
                 "SM100_MMA_{TF32,F16BF16,F8F6F4}_TS: N % 16 == 0 for M = 128"),
    Disagreement("A from Tensor Memory, CTA pair, N % 32 = 16",
                 (f"{H_UMMA}:466", f"{H_UMMA}:508", f"{H_UMMA}:1079"),
                 lambda c: c.a_src == "TS" and c.cta_group == 2 and c.n % 32 == 16 <= c.n <= 256
                 and not (c.kind == "f8f6f4" and c.major_b == "MN"),  # there the ISA's 8-bit MN-major B rule agrees
                 "PTX: N steps of 16 for cta_group 2; CUTLASS's *_2x1SM_TS: N % 32 == 0"),
    Disagreement("A from Tensor Memory with the transpose-A bit",
                 (f"{H_UMMA}:134", f"{H_UMMA}:178", f"{H_UMMA}:467", f"{H_UMMA}:509", f"{H_UMMA}:757",
                  f"{H_UMMA}:879", f"{H_UMMA}:1039", f"{H_UMMA}:1080"),
                 lambda c: c.a_src == "TS" and c.major_a == "MN",
                 "CUTLASS: 'A from TMEM can't be transposed'; the model has no A source (the descriptor is the same)"),
]
# Candidates CUTLASS accepts and the model refuses (the atom does not check what the ISA forbids).
MODEL_STRICTER = [
    ("mxf4 kinds transposed", lambda c: c.kind in ("mxf4", "mxf4nvf4") and not c.k96 and "MN" in (c.major_a, c.major_b),
     "PTX Table 44 (.kind::mxf4/mxf4nvf4): Transpose A/B 'No Transpose = 0' only; SM100_MMA_MXF4_SS has no "
     "major-ness static_assert"),
    ("f8f6f4 A in Tensor Memory, MN-major B, N % 16 = 8",
     lambda c: c.kind == "f8f6f4" and c.a_src == "TS" and c.cta_group == 1 and c.major_b == "MN" and c.n % 16 == 8,
     "CUTLASS ties 'N steps of 16' to an MN-major B in SM100_MMA_F8F6F4_SS's traits (mma_traits_sm100.hpp:2642) "
     "but SM100_MMA_F8F6F4_TS (mma_sm100_umma.hpp:1035) does not check B's major-ness; the model applies it to both"),
]


def _model_accepts(c, arch: str | None = None) -> bool:
    arch = arch or ("sm_103a" if c.k96 else None)
    try:
        idesc.validate_idesc(idesc.InstrDescriptor(
            c.kind, *{"tf32": ("tf32", "tf32", "f32"), "f16": ("f16", "f16", "f32"), "i8": ("s8", "s8", "s32"),
                      "f8f6f4": ("e4m3", "e4m3", "f32"), "mxf8f6f4": ("e4m3", "e4m3", "f32"),
                      "mxf4": ("e2m1", "e2m1", "f32"), "mxf4nvf4": ("e2m1", "e2m1", "f32")}[c.kind],
            c.m, c.n, transpose_a=c.major_a == "MN", transpose_b=c.major_b == "MN", cta_group=c.cta_group,
            k96=c.k96, scale_type=c.scale or "ue8m0"), arch)
        return True
    except DescriptorError:
        return False


def _expected_verdict(c, rej) -> tuple[bool, list[str], list[str]]:
    """(what the model should say, the disagreements used, CUTLASS's fired asserts): CUTLASS's verdict with the
    listed disagreements' asserts excused for the candidates they name, and the model-stricter cases refused."""
    fired = [w for w, _ in rej.get(c, [])]
    used, left = [], []
    for w in fired:
        ex = [d.name for d in DISAGREEMENTS if d.applies(c) and any(w.endswith(a) for a in d.asserts)]
        (used.append(ex[0]) if ex else left.append(w))
    expect = not left
    for name, applies, _ in MODEL_STRICTER:
        if expect and applies(c):
            used.append(name)
            expect = False
    return expect, used, fired


def test_legality_matches_cutlass_static_asserts(legality):
    rej = legality.rejections()
    cands = legality.candidates()
    assert len(cands) > 10000 and len(rej) > 5000
    used = {d.name: 0 for d in DISAGREEMENTS} | {name: 0 for name, _, _ in MODEL_STRICTER}
    bad = []
    for c in cands:
        expect, names, fired = _expected_verdict(c, rej)
        for nm in names:
            used[nm] += 1
        if _model_accepts(c) != expect:
            bad.append(f"{c}: CUTLASS {'refuses (' + ', '.join(fired) + ')' if fired else 'accepts'}, "
                       f"model {'accepts' if not expect else 'refuses'}")
    assert not bad, f"{len(bad)} shape verdicts differ, e.g.\n" + "\n".join(bad[:15])
    assert all(used.values()), f"a listed disagreement no longer applies: {used}"


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_legality_per_arch_matches_cutlass_atoms_and_arch_config(arch, legality):
    """The whole grid (kind x M x N x cta_group x A source x majors x K = 96) once per arch: the model's verdict
    with the arch given is CUTLASS's atoms' verdict (up to the listed disagreements) and'ed with whether CUTLASS's
    cute/arch/config.hpp compiles that kind's MMA for the arch (kind::i8 is not an sm_103a kind; K = 96 is)."""
    rej = legality.rejections()
    assert "S8_MMA" in legality.enabled_mma("sm_100a") and "S8_MMA" not in legality.enabled_mma("sm_103a")
    bad, n = [], 0
    for c in legality.candidates():
        expect = _expected_verdict(c, rej)[0] and legality.arch_builds(c, arch)
        n += 1
        if _model_accepts(c, arch) != expect:
            bad.append(f"{c}: CUTLASS {'builds' if expect else 'does not build'} it for {arch}")
    assert n > 10000 and not bad, f"{len(bad)} verdicts differ, e.g.\n" + "\n".join(bad[:15])


@pytest.mark.parametrize("kind,cg", [(k, g) for k in idesc.KINDS for g in (1, 2)])
def test_legal_shapes_is_cutlass_up_to_the_listed_disagreements(kind, cg, legality):
    """legal_shapes itself (what the case generator reads), for K-major SS operands."""
    rej = legality.rejections()
    model = idesc.legal_shapes(kind, cg)
    n = 0
    for c in legality.candidates():
        if (c.kind, c.cta_group, c.a_src, c.major_a, c.major_b, c.k96) != (kind, cg, "SS", "K", "K", False):
            continue
        if c.scale == "ue4m3":
            continue
        n += 1
        assert (c.n in model.get(c.m, [])) == _expected_verdict(c, rej)[0], (c, rej.get(c))
    assert n >= len(legality.MS) * len(legality.NS)


def test_ws_shapes_match_cutlass_ws_data_path():
    # CUTLASS has no .ws MMA atom; its .ws Tensor Memory data path (mma_traits_sm100.hpp:914-917) takes
    # M in {32, 64, 128} and N in {64, 128, 256}, as the PTX table does
    for kind in ("tf32", "f16", "f8f6f4", "i8"):
        assert idesc.legal_shapes(kind, 1, ws=True) == {m: [64, 128, 256] for m in (32, 64, 128)}


# ---------------------------------------------------------------------------------------------------- generated cases

# Generated cases CUTLASS's atoms refuse although the model (with the PTX ISA) allows them; see DISAGREEMENTS.
def _cutlass_candidate(case, legality):
    f = case.form
    scale = f.scale_type if f.block_scaled else ""
    return legality.Candidate(f.kind, f.cta_group, f.a_src, case.m, case.n, case.major_a, case.major_b,
                              bool(f.k96_block), scale)


# Generated forms CUTLASS has no MMA atom for, so its static_asserts cannot judge them: the ISA's alone.
NO_CUTLASS_ATOM = {("mxf4", True): "kind::mxf4 at K = 96 (.block32): PTX ISA Table 54 lists it (scale_A M x 3); "
                                   "CUTLASS's SM103 atoms issue kind::mxf4nvf4 for VS = 32 instead"}


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_every_generated_case_is_legal_by_nvidias_rules(arch, legality):
    from harness.families.tcgen05 import cases as TC
    rej = legality.rejections()
    grid = set(legality.candidates())
    unexpected, excused, no_atom = [], {}, set()
    n = 0
    for form, cases in TC.all_cases(arch):
        for case in cases:
            n += 1
            idesc.validate_idesc(case.idesc(), arch)  # the model's own rules, per arch
            if form.ws:  # no CUTLASS .ws atom: its .ws data path (mma_traits_sm100.hpp:914-917)
                assert case.m in (32, 64, 128) and case.n in (64, 128, 256), case.id
                continue
            c = _cutlass_candidate(case, legality)
            if (c.kind, c.k96) in NO_CUTLASS_ATOM:
                no_atom.add((c.kind, c.k96))
                continue
            assert c in grid, f"{case.id}: not in the legality grid, so CUTLASS's verdict on it is unknown"
            assert legality.arch_builds(c, arch), f"{case.id}: CUTLASS does not compile its atom for {arch}"
            fired = [w for w, _ in rej.get(c, [])]
            if not fired:
                continue
            names = {d.name for d in DISAGREEMENTS if d.applies(c) and any(w.endswith(a) for w in fired
                                                                          for a in d.asserts)}
            if names:
                for nm in names:
                    excused.setdefault(nm, []).append(case.id)
            else:
                unexpected.append(f"{case.id}: {rej[c]}")
    assert n > 100
    assert not unexpected, "cases CUTLASS refuses for a reason the model does not know:\n" + "\n".join(unexpected)
    # the known ones (CUTLASS stricter than the ISA): counted so a report can name them
    assert set(excused) <= {"A from Tensor Memory, one CTA, M = 128, N % 16 = 8"}, excused
    # K = 96 is swept on sm_103a only, and CUTLASS's SM103 atoms judge every K = 96 form but kind::mxf4's
    assert no_atom == ({("mxf4", True)} if arch == "sm_103a" else set()), no_atom
    assert any(c.k == 96 for _, cs in TC.all_cases(arch) for c in cs) == (arch == "sm_103a")


# ---------------------------------------------------------------------------------------------------- smem descriptors

DT = {32: "f32", 16: "f16", 8: "u8", 4: "e2m1"}
# CUTLASS's 128B swizzle with 32-byte atoms (UMMA::Layout_MN_SW128_32B_Atom, make_umma_desc's SwizzleAtomKSize = 4
# in mma_traits_sm100.hpp) strides SBO between groups of 4 K-rows; layouts.py reads 128B_base32b so too
# (MN_KROWS_PER_ATOM). No tile may differ.
LAYOUT_DISAGREEMENTS: set = set()


def _tile_layout(t) -> L.SmemLayout:
    f = t["fields"]
    return L.SmemLayout(t["major"], desc_tcgen05.TCGEN05_SWIZZLE_NAME[f["layout_type"]], DT[t["bits"]], t["rows"], t["cols"],
                        f["leading_byte_offset"] << 4, f["stride_byte_offset"] << 4, t["start"])


def test_smem_descriptors_match_make_umma_desc(oracle):
    tiles = oracle["smem"]
    atoms = {t["atom"] for t in tiles}
    assert atoms == {"K_INTER", "K_SW32", "K_SW64", "K_SW128", "MN_INTER", "MN_SW32", "MN_SW64", "MN_SW128",
                     "MN_SW128_32B"}
    swz_of_atom = {"INTER": "none", "SW32": "32B", "SW64": "64B", "SW128": "128B", "SW128_32B": "128B_base32b"}
    bms = {"none": (0, 4, 3), "32B": (1, 4, 3), "64B": (2, 4, 3), "128B": (3, 4, 3), "128B_base32b": (2, 5, 2)}
    for t in tiles:
        lay = _tile_layout(t)
        assert lay.swizzle == swz_of_atom[t["atom"].split("_", 1)[1]], t["atom"]
        assert tuple(t["swizzle_bms"]) == bms[lay.swizzle] == L.SWIZZLE_BMS[lay.swizzle], t["atom"]
        value = int(t["value"], 16)
        assert desc_tcgen05.encode_tcgen05_smem_desc(lay.start, lay.lbo, lay.sbo, lay.swizzle) == value, t["atom"]
        info = desc_tcgen05.decode_tcgen05_smem_desc(value)
        assert info["problems"] == [], (t["atom"], info)
        f = info["fields"]
        assert (f["start_address"], f["leading_byte_offset"], f["stride_byte_offset"], f["swizzle"]) == \
            (lay.start, lay.lbo, lay.sbo, lay.swizzle)
        assert t["fields"]["version"] == desc_tcgen05.TCGEN05_VERSION and f["version"] == desc_tcgen05.TCGEN05_VERSION
        assert t["fields"]["base_offset"] == 0 and t["fields"]["lbo_mode"] == 0


def test_smem_tile_addresses_match_cute(oracle):
    mismatched = {}
    for t in oracle["smem"]:
        lay = _tile_layout(t)
        want = np.asarray(t["bit_address"], np.int64).reshape(t["rows"], t["cols"])
        got = L.element_bit_addresses(lay)
        if not np.array_equal(got, want):
            r, k = np.argwhere(got != want)[0]
            mismatched[(t["atom"], t["type"], t["rows"], t["cols"])] = \
                f"{L.describe_tile(lay)}: element ({r}, {k}) at bit {got[r, k]}, CuTe {want[r, k]}"
    assert set(mismatched) == LAYOUT_DISAGREEMENTS, "\n".join(mismatched.values())
    assert sum(t["atom"] == "MN_SW128_32B" for t in oracle["smem"]) >= 2


def test_layout_command_reads_128b_base32b_as_cute(oracle):
    """`layout --json` (what a user reads) gives CuTe's address for every element of every SW128_32B tile."""
    from tests.cli_in_process import run
    import json
    tiles = [t for t in oracle["smem"] if t["atom"] == "MN_SW128_32B"]
    for t in tiles:
        lay = _tile_layout(t)
        out = run("layout", "--major", "MN", "--swizzle", "128B_base32b", "--dtype", lay.dtype, "--rows", lay.rows,
                  "--cols", lay.cols, "--lbo", lay.lbo, "--sbo", lay.sbo, "--start", lay.start, "--json")
        assert out.returncode == 0, out.stderr
        got = np.asarray(json.loads(out.stdout)["address"])
        want = np.asarray(t["bit_address"], np.int64).reshape(t["rows"], t["cols"]) >> 3
        assert np.array_equal(got, want), L.describe_tile(lay)


# ---------------------------------------------------------------------------------------------------- zero-column mask

def _zmask_of(r) -> zero_mask.ZeroColumnMask:
    return zero_mask.ZeroColumnMask(tuple(r["start_count"]), tuple((r["first_span"] >> i) & 1 for i in range(4)),
                            bool(r["nzm"]), r["skip_span"], r["use_span"], r["shift"])


def test_zero_column_mask_fields_match_cutlass(oracle):
    rows = oracle["zero_mask"]
    assert len(rows) > 1000
    for r in rows:
        z = _zmask_of(r)
        v = int(r["value"], 16)
        assert zero_mask.encode_zero_column_mask(z) == v, r
        assert zero_mask.decode_zero_column_mask(v) == z, r


def test_zero_column_mask_zeroes_the_padding_cutlass_skips(oracle):
    """make_column_zero_mask describes a convolution row of conv_q pixels whose first (skip_left - s) pixels are
    padding; the CTA's N columns start at pixel (cta_coord_q * N) mod conv_q. The model's mask must zero exactly
    those columns (this pins which span field counts zeros: CUTLASS's skip_span, as the model reads it)."""
    checked = 0
    for r in oracle["zero_mask"]:
        skip = r["skip_left"] - r["s"]
        if skip <= 0 or r["conv_q"] - skip <= 0:
            continue
        m, n, q = r["m"], r["n"], r["conv_q"]
        q0 = (r["cta_coord_q"] * n) % q
        expected = [int((q0 + j) % q < skip) for j in range(n)]
        assert zero_mask.zero_column_mask_bits(_zmask_of(r), m, n) == expected, r
        checked += 1
    assert checked > 300


# ---------------------------------------------------------------------------------------------------- sparse idesc

def test_sparse_instruction_descriptors_match_cutlass_bit_for_bit(oracle):
    """CUTLASS's sparse UMMA traits' descriptors (make_instr_desc<..., is_sparse = true>, the block-scaled builder,
    and the runtime form with sparse_id2 = the metadata column's low bit) against the model's: sparsity bit 2,
    selector bits 0-1; where the model calls the inputs legal (tcgen05.mma.sp shapes), encode_idesc gives the same
    value and decode_idesc reads sparsity and selector back with no problem."""
    rows = oracle["idesc_sparse"]
    assert {r[1] for r in rows} == set(idesc.KINDS) and any(r[10] == 1 for r in rows)
    legal = 0
    for src, kind, a, b, c, m, n, ta, tb, sf, id2, value in rows:
        kw = dict(transpose_a=bool(ta), transpose_b=bool(tb), sparse=True, sparsity_selector=id2)
        if sf:
            kw["scale_type"] = sf
        d = idesc.InstrDescriptor(kind, a, b, c, m, n, **kw)
        got = idesc.pack_idesc(d)
        assert got == value, f"{src} {kind} M={m} N={n} id2={id2}: CUTLASS 0x{value:08x}, model 0x{got:08x}"
        d = idesc.InstrDescriptor(**{**descriptors.as_dict(d), "cta_group": 2 if m == 256 else 1})
        try:
            v = idesc.encode_idesc(d)
        except DescriptorError:
            continue
        info = idesc.decode_idesc(v, kind, d.cta_group, False)
        assert v == value and info["problems"] == [], (src, kind, m, n, info["problems"])
        assert info["fields"]["sparse"] and info["fields"].get("sparsity_selector", 0) == id2
        legal += 1
    assert legal >= 40


def test_sparse_shapes_follow_the_isa_table():
    """PTX ISA "Various combinations of .kind and shapes", Sparse rows: K doubles; .ws sparse N = 64, 128 only;
    block-scaled sparse with a CTA pair M = 256 only; the selector must be 0 for i8 / f8f6f4."""
    assert [idesc.mma_k(k, True) for k in ("tf32", "f16", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4")] == \
        [16, 32, 64, 64, 64, 128, 128]
    assert idesc.legal_shapes("f16", 1, ws=True, sparse=True) == {m: [64, 128] for m in (32, 64, 128)}
    assert set(idesc.legal_shapes("mxf4", 2, sparse=True)) == {256}
    assert idesc.legal_shapes("f16", 2, sparse=True) == idesc.legal_shapes("f16", 2)
    with pytest.raises(DescriptorError, match="must be 0 for .kind::i8"):
        idesc.validate_idesc(idesc.InstrDescriptor("i8", "s8", "s8", "s32", 128, 64, sparse=True, sparsity_selector=1))
    with pytest.raises(DescriptorError, match="N = 256 is not legal"):
        idesc.validate_idesc(idesc.InstrDescriptor("f16", "f16", "f16", "f32", 64, 256, ws=True, sparse=True))
    info = idesc.decode_idesc(0x08900484, "mxf4", 2)  # sparse e2m1 mxf4 pair at M = 128
    assert any("M = 128 is not legal" in p for p in info["problems"])


# ---------------------------------------------------------------------------------------------------- 4/6-bit A in TMEM

def test_a_4_and_6_bit_a_container_matches_cutlass_fp4_shift():
    """CUTLASS's fp4_shift_A (mma_traits_sm120.hpp), run on the host over A registers of every f8f6f4 pairing
    (four 8-bit containers, value in the low bits as ld.matrix leaves it): the register the MMA is fed is the word
    the model stores into A's Tensor Memory column for the same four elements (datapaths.tmem_a_container)."""
    from harness.families.tcgen05 import datapaths as DP
    from harness.spec import dtypes
    rows = cutlass_cpp.run_json("cutlass_fp4_shift.cpp")["a"]
    seen = set()
    for atype, btype, word_in, word_out in rows:
        width = dtypes.get(atype).bits
        elems = [(word_in >> (8 * i)) & 0xFF for i in range(4)]
        if any(e >> width for e in elems):
            continue  # not four values of A's type
        model = sum(int(DP.tmem_a_container(atype, e)) << (8 * i) for i, e in enumerate(elems))
        assert model == word_out, f"{atype} x {btype}: in 0x{word_in:08x}, CUTLASS 0x{word_out:08x}, model 0x{model:08x}"
        seen.add(atype)
    assert seen == {"e2m1", "e2m3", "e3m2", "e4m3", "e5m2"}


# ---------------------------------------------------------------------------------------------------- block-scale product

BS_COMBO = {("mxf8f6f4", "e4m3", "e4m3"): 0, ("mxf8f6f4", "e5m2", "e2m1"): 1, ("mxf8f6f4", "e2m3", "e3m2"): 2,
            ("mxf4", "e2m1", "e2m1"): 3, ("mxf4nvf4", "e2m1", "e2m1"): 4}


# Elements of the logical K one scale factor spans. Dense: the kinds' block sizes (mxf8f6f4 block32, mxf4 block32,
# mxf4nvf4 block16 with ue4m3). Sparse (K doubles): CUTLASS's sparse atoms' VS, read from the header below
# (SM100_MMA_MXF4NVF4_SS_SPARSE issues .block16 for VS = 32 and .kind::mxf4 .block32 for VS = 64), and mxf8f6f4's one
# factor over its K = 64 (SM100_MMA_MXF8F6F4_SS_SPARSE: scale_vec::1X; Table 54: scale_A M x 1 for every K).
DENSE_VS = {"mxf8f6f4": 32, "mxf4": 32, "mxf4nvf4": 16}
SPARSE_VS = {"mxf8f6f4": 64, "mxf4": 64, "mxf4nvf4": 32}


def test_sparse_scale_vector_sizes_are_cutlass_sparse_atoms():
    import re
    hdr = (Path(cutlass_cpp.include_dirs()[0]) / "cute/arch/mma_sm100_umma.hpp").read_text()
    body = hdr[hdr.index("struct SM100_MMA_MXF4NVF4_SS_SPARSE"):]
    body = body[:body.index("struct ", 10)]
    vs32, vs64 = body.index("VS == 32"), body.index("VS == 64")
    assert re.search(r"kind::mxf4nvf4\.block_scale\.block16", body[vs32:vs64])
    assert re.search(r"kind::mxf4\.block_scale\.block32", body[vs64:])
    assert SPARSE_VS["mxf4nvf4"] == 2 * DENSE_VS["mxf4nvf4"] and SPARSE_VS["mxf4"] == 2 * DENSE_VS["mxf4"]
    body = hdr[hdr.index("struct SM100_MMA_MXF8F6F4_SS_SPARSE"):]
    body = body[:body.index("struct ", 10)]
    assert "kind::mxf8f6f4.block_scale [" in body and "scale_vec" not in body.split("asm volatile")[1][:200]


def _blockscaled_cases():
    from harness.families.tcgen05 import cases as TC
    seen, out = set(), []
    for arch in ("sm_100a", "sm_103a"):
        for form, cases in TC.all_cases(arch):
            for c in cases:
                c = dataclasses.replace(c, scale_d=0)  # the product alone (C is the accumulate path's business)
                if form.block_scaled and not c.control and c.id not in seen:
                    seen.add(c.id)
                    out.append(c)
    return out


def test_block_scaled_product_matches_cutlass_host_reference(tmp_path):
    """Every block-scaled case's expected D (reference.prepare: the drawn A, B and scale-factor codes) against
    CUTLASS's host reference GEMM (gett_mainloop, GettBlockScalingMainloopParams) over the same values, with the
    factors stored in CUTLASS's scale-factor layout (Sm1xxBlockScaledConfig: one factor per SFVec elements of a row,
    ue8m0 / ue4m3 decoded by CUTLASS's own types), element by element and exactly (the values are small dyadic
    rationals: every partial sum is exact in float)."""
    from harness.families.tcgen05 import datapaths as DP, reference as R
    cases = _blockscaled_cases()
    assert {c.form.kind for c in cases} == {"mxf8f6f4", "mxf4", "mxf4nvf4"} and {c.form.cta_group for c in cases} == {1, 2}
    assert {c.form.kind for c in cases if c.form.sparse} == {"mxf8f6f4", "mxf4", "mxf4nvf4"}
    assert {(c.form.kind, c.form.k96_block, c.form.cta_group) for c in cases if c.k == 96} == \
        {("mxf4nvf4", 16, 1), ("mxf4nvf4", 32, 1), ("mxf4", 32, 1), ("mxf4nvf4", 16, 2), ("mxf4nvf4", 32, 2)}
    lines, preps = [], []
    for c in cases:
        prep = R.prepare(c)
        op = prep.operands
        blocks = DP.sf_blocks(c.form)
        assert op["sfa"].shape == (c.m, blocks) and op["sfb"].shape == (c.n, blocks)
        # NVIDIA's vector sizes, not the model's: a K = 96 form's is its .blockN (SM103_MXF4_ULTRA_SS_VS's VS)
        vs = c.form.k96_block or (SPARSE_VS[c.form.kind] if c.form.sparse else DENSE_VS[c.form.kind])
        assert c.k // blocks == vs, c.id  # the model spans as many elements of the logical K a factor
        combo = BS_COMBO[("mxf4", c.atype, c.btype) if c.form.scale_type == "ue8m0" and c.form.kind == "mxf4nvf4"
                         else (c.form.kind, c.atype, c.btype)]  # e2m1 with ue8m0 factors: CUTLASS's mxf4 types
        lines.append(f"{combo} {vs} {c.m} {c.n} {c.k}")
        for arr in (op["a"], op["b"]):
            lines.append(" ".join(repr(float(v)) for v in np.ravel(arr)))
        for arr in (op["sfa"], op["sfb"]):
            lines.append(" ".join(str(int(v)) for v in np.ravel(arr)))
        preps.append(prep)
    path = tmp_path / "problems.txt"
    path.write_text("\n".join(lines) + "\n")
    got = cutlass_cpp.run_json("cutlass_blockscaled_gemm.cpp", str(path))
    assert len(got) == len(preps)
    for prep, d in zip(preps, got):
        c = prep.case
        d = np.asarray(d, np.float64).reshape(c.m, c.n)
        bad = np.argwhere(d != prep.expected)
        assert bad.size == 0, (f"{c.id}: D[{tuple(bad[0])}] CUTLASS {d[tuple(bad[0])]}, model "
                               f"{prep.expected[tuple(bad[0])]} ({len(bad)} differ)")
        assert np.any(prep.expected != prep.operands["a"] @ prep.operands["b"].T)  # the scales matter here


def test_zero_column_mask_applied_to_a_product_matches_cutlass(oracle):
    """Polarity, on data: for CUTLASS's make_column_zero_mask descriptors (a convolution row of conv_q pixels whose
    first skip_left - s are padding; the CTA's N columns start at pixel (cta_coord_q * N) mod conv_q), a .ws case with
    that descriptor must expect A times B with exactly CUTLASS's padding columns of B zeroed (reference.prepare,
    element by element), and not the product with the other columns zeroed."""
    from harness.families.tcgen05 import cases as TC, reference as R
    from harness.families.tcgen05.forms import Form
    form = Form("f16", 1, ws=True)
    rows = [r for r in oracle["zero_mask"] if r["m"] in (32, 64, 128) and r["n"] in (64, 128, 256)
            and 0 < r["skip_left"] - r["s"] < r["conv_q"]]
    rows = rows[::max(1, len(rows) // 40)]
    assert len(rows) >= 20
    for r in rows:
        m, n, q, skip = r["m"], r["n"], r["conv_q"], r["skip_left"] - r["s"]
        q0 = (r["cta_coord_q"] * n) % q
        padding = np.array([(q0 + j) % q < skip for j in range(n)])
        c = TC.TcCase(form, m, n, "f16", "f16", "f32", "128B", "128B", 0, _zmask_of(r))
        prep = R.prepare(c)
        a, b = prep.operands["a"], prep.operands["b"]
        want = a @ np.where(padding[:, None], 0.0, b).T
        assert np.array_equal(prep.expected, want), (r, c.id)
        if padding.any() and not padding.all():
            assert not np.array_equal(prep.expected, a @ np.where(padding[:, None], b, 0.0).T)
