"""tcgen05 rules settled by NVIDIA's code and the PTX ISA (issue 54), each with a test that can fail:
the MN-major tf32 swizzle rule, where an e2m1 A sits in its Tensor Memory byte, Tensor Memory poisoned before an
MMA that does not accumulate, the controls the ISA leaves undefined recorded as observations, the qualifier forms'
models (the shifts' undefined rows excluded by name), sm_103a's K = 96, and the A collector with A in Tensor
Memory."""
import dataclasses
import json

import numpy as np
import pytest

from harness.families.tcgen05 import cases as T, reference as R
from harness.families.tcgen05.forms import Form
from harness.spec import desc_tcgen05
from harness.spec.descriptors import DescriptorError
from tests.cli_in_process import run

ALL = {arch: [c for _, cs in T.all_cases(arch) for c in cs] for arch in ("sm_100a", "sm_103a")}


# ---------------------------------------------------------------------------------------------------- MN-major tf32

@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_mn_major_tf32_operands_use_128b_base32b_only(arch):
    """PTX ISA 9.7.16.10.3 / CUTLASS sm100_common.inl:92: an MN-major tf32 operand is 128B_base32b, nothing else;
    the cases still sweep it (A and B, SS and TS, one CTA and a pair; A in Tensor Memory is one CTA only) and f16's MN-major swizzles all four."""
    mn = [(c, op, sw) for c in ALL[arch] for op, major, sw in (("A", c.major_a, c.swizzle_a), ("B", c.major_b, c.swizzle_b))
          if major == "MN" and (op == "B" or c.form.a_src == "SS")]
    tf32 = [(c, op, sw) for c, op, sw in mn if c.form.kind == "tf32"]
    assert tf32 and {sw for _, _, sw in tf32} == {"128B_base32b"}
    assert {(c.form.cta_group, c.form.a_src, op) for c, op, _ in tf32} == \
        {(1, "SS", "A"), (1, "SS", "B"), (1, "TS", "B"), (2, "SS", "A"), (2, "SS", "B")}
    assert {sw for c, _, sw in mn if c.form.kind == "f16"} == {"none", "32B", "64B", "128B"}


@pytest.mark.parametrize("sw", ["none", "32B", "64B", "128B"])
def test_a_case_with_an_mn_major_tf32_operand_of_another_swizzle_cannot_be_built(sw):
    f = Form("tf32")
    with pytest.raises(DescriptorError, match=r"9\.7\.16\.10\.3.*sm100_common\.inl:92"):
        T.TcCase(f, 128, 64, "tf32", "tf32", "f32", "128B", sw, major_b="MN")
    with pytest.raises(DescriptorError, match="operand A needs swizzle 128B_base32b"):
        T.TcCase(f, 128, 64, "tf32", "tf32", "f32", sw, "128B_base32b", major_a="MN", major_b="MN")
    T.TcCase(f, 128, 64, "tf32", "tf32", "f32", sw, sw)  # K-major: any swizzle
    T.TcCase(Form("f16"), 128, 64, "f16", "f16", "f32", sw, sw, major_a="MN", major_b="MN")  # 16-bit: any


IDESC_TF32 = ["idesc", "--kind", "tf32", "--atype", "tf32", "--btype", "tf32", "--m", "128", "--n", "64", "--json"]


def test_idesc_and_desc_flag_an_mn_major_tf32_operand_of_another_swizzle():
    bad = run(*IDESC_TF32, "--transpose-b", "--swizzle-b", "64B")
    assert bad.returncode == 1 and any("operand B needs swizzle 128B_base32b, not 64B" in p
                                       for p in json.loads(bad.stdout)["problems"])
    assert run(*IDESC_TF32, "--transpose-b", "--swizzle-b", "128B_base32b", "--swizzle-a", "64B").returncode == 0
    assert run(*IDESC_TF32, "--swizzle-b", "64B").returncode == 0  # K-major B
    value = json.loads(run(*IDESC_TF32, "--transpose-a").stdout)["value"]
    dec = run("idesc", "--kind", "tf32", "--decode", value, "--swizzle-a", "32B")  # the rule holds when decoding too
    assert dec.returncode == 1 and "operand A needs swizzle 128B_base32b, not 32B" in dec.stdout
    desc = ["desc", "--arch", "sm_100a", "--start", "0", "--lbo", "512", "--sbo", "1024", "--kind", "tf32"]
    assert run(*desc, "--swizzle", "128B", "--major", "MN").returncode == 1
    assert run(*desc, "--swizzle", "128B_base32b", "--major", "MN").returncode == 0
    assert run(*desc, "--swizzle", "128B").returncode == 0  # K-major by default
    v = json.loads(run(*desc, "--swizzle", "64B", "--json").stdout)["value"]
    out = run("desc", "--arch", "sm_103a", "--decode", v, "--kind", "tf32", "--major", "MN")
    assert out.returncode == 1 and "needs swizzle 128B_base32b, not 64B" in out.stdout
    assert run("desc", "--arch", "sm_100a", "--decode", v, "--major", "MN").returncode == 2  # --major needs --kind
    assert desc_tcgen05.operand_swizzle_problem("f16", "MN", "64B") is None


# ---------------------------------------------------------------------------------------------------- e2m1 A in TMEM

@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_a_4_and_6_bit_a_in_tensor_memory_sits_where_the_mma_reads_it(arch):
    """Every TS case of a 4/6-bit A: the byte of element (row, k) in A's Tensor Memory columns holds an e2m1 value
    in bits 5-2 (PTX ISA: 'the central 4 bits of the 8-bit container'; CUTLASS's fp4_shift_A), an e2m3 / e3m2
    value in bits 5-0, and nothing else; no case is `unsettled` for it any more."""
    from harness.families.tcgen05.datapaths import a_lane
    from harness.spec import dtypes
    cases = [c for c in ALL[arch] if c.form.a_src == "TS" and c.form.kind == "f8f6f4" and not c.control
             and dtypes.get(c.atype).bits < 8]
    assert {c.atype for c in cases} == {"e2m1", "e2m3", "e3m2"} and any(c.form.sparse for c in cases)
    for c in cases:
        prep = R.prepare(c, arch)
        a, col0 = prep.operands["a_stored"], prep.params[0]["a_tmem_col"]
        k = a.shape[1]
        words = prep.tmem_in[0][a_lane(c.m, np.arange(c.m))][:, col0:col0 + k // 4]
        got = words.view(np.uint8).reshape(c.m, -1)[:, :k]  # little-endian: byte j of column i is element 4i + j
        shift, width = (2, 4) if c.atype == "e2m1" else (0, 6)
        want = dtypes.get(c.atype).to_bits(a).astype(np.uint8)
        assert np.array_equal((got >> shift) & ((1 << width) - 1), want), c.id
        assert not np.any(got & ~np.uint8(((1 << width) - 1) << shift)), c.id
        assert "container" not in (T.unsettled_reason(c) or ""), c.id


# ---------------------------------------------------------------------------------------------------- shape legality

@pytest.mark.parametrize("argv,rule", [
    (["--kind", "f8f6f4", "--atype", "e4m3", "--btype", "e4m3", "--m", "128", "--n", "48", "--cta-group", "2",
      "--transpose-b"], "N = 48 is not legal for .kind::f8f6f4 cta_group::2 M = 128 (B is MN-major)"),
    (["--kind", "i8", "--atype", "s8", "--btype", "s8", "--m", "64", "--n", "24", "--transpose-b"],
     "N = 24 is not legal for .kind::i8 cta_group::1 M = 64 (B is MN-major)"),
    (["--kind", "i8", "--atype", "s8", "--btype", "s8", "--m", "128", "--n", "64", "--arch", "sm_103a"],
     ".kind::i8 is not supported on sm_103a"),
])
def test_idesc_refuses_the_encodings_cutlass_does_not_build(argv, rule):
    out = run("idesc", *argv, "--json")
    assert out.returncode == 1 and any(rule in p for p in json.loads(out.stdout)["problems"]), out.stdout
    legal = [a for a in argv if a not in ("--transpose-b", "--arch", "sm_103a")]
    assert run("idesc", *legal).returncode == 0  # the same shape with a K-major B (or on sm_100a) is legal


# ---------------------------------------------------------------------------------------------------- TMEM poison

def test_tensor_memory_is_poisoned_before_every_mma_that_does_not_accumulate():
    """Every case with enable-input-d off stores the poison into every lane of D's columns (the kernel stores
    tmem_in before every MMA, unconditionally), no case's D holds the pattern, and a read-back of the poison left
    in place fails, naming the unwritten elements; an accumulating case stores C there instead."""
    from harness.families.tcgen05 import kernel as K, readback as RB
    src = K.source(Form("f16"))
    assert "if (!skip) {" in src and "p.enable_input_d || p.a_tmem_cols" not in src  # stored before every MMA
    seen = {0: 0, 1: 0}
    for c in ALL["sm_100a"][::5]:
        if c.control or c.form.variant:  # (a masked lane keeps the poison: test_qualifier_forms_are_modelled)
            continue
        prep = R.prepare(c)
        dcols = R.d_columns(c)
        seen[c.scale_d] += 1
        if c.scale_d:
            assert not np.any(prep.tmem_in[:, :, :dcols] == R.TMEM_POISON)
            continue
        assert np.all(prep.tmem_in[:, :, :dcols] == R.TMEM_POISON), c.id
        rec = RB.diff(prep, prep.tmem_in, [0] * c.form.cta_group)  # the MMA never wrote D
        assert rec["status"] == "fail" and rec["unwritten"] == c.m * c.n == rec["mismatches"], c.id
    assert seen[0] > 10 and seen[1] > 10
    assert R.TMEM_POISON != R.POISON


@pytest.mark.cute
def test_a_skipped_mma_fails_on_the_poison_on_the_simulated_device(monkeypatch):
    """The simulated sm_100a device stores what the kernel stores (the poison) and, planted with 'skip-mma', issues
    no MMA for one case: that case fails with every element unwritten; its neighbours in the launch pass."""
    from harness import registry
    from harness.contract import Kernel
    from tests.run import simsweep
    from tests.simulated import oracle_cache, tcgen05_device
    fam = registry.get("tcgen05")
    form = Form("f16")
    kernel = Kernel(fam.name, "sm_100a", form.name, form)
    cases = [c for c in T.cases_for_form(form) if not c.control and c.major_a == c.major_b == "K"][:3]
    assert cases and not cases[0].scale_d
    inp, _ = fam.prepare(kernel, cases)
    oracle_cache.ensure_tmem(sorted({r for i in range(len(cases))
                                     for r in tcgen05_device.oracle_requests(kernel.name, inp.params[i])}))
    assert {r["status"] for r in simsweep.in_process(kernel, cases, tcgen05_device.run)} == {"pass"}
    monkeypatch.setenv("TC_SIM_FAULTS", f"{kernel.name}:#{simsweep.case_fingerprint(kernel, cases[0])}:skip-mma")
    recs = simsweep.in_process(kernel, cases, tcgen05_device.run)
    assert recs[0]["status"] == "fail" and recs[0]["unwritten"] == cases[0].m * cases[0].n
    assert [r["status"] for r in recs[1:]] == ["pass"] * (len(cases) - 1)


# ---------------------------------------------------------------------------------------------------- observations

def test_undefined_probes_are_observations_never_a_pass_or_a_fail():
    from harness.enums import Status
    from harness.families.tcgen05 import readback as RB
    assert Status("observed") is Status.OBSERVED and Status.OBSERVED.ran
    obs = [c for c in ALL["sm_100a"] if c.control.partition("@")[0] in T.OBSERVATIONS]
    assert {c.control.partition("@")[0] for c in obs} == set(T.OBSERVATIONS) == {"version-cleared",
                                                                                  "tmem-beyond-alloc"}
    beyond = [c for c in obs if c.control == "tmem-beyond-alloc"]
    assert len(beyond) == 1 and beyond[0].form.tmem_check and T.cases_for_form(beyond[0].form) == beyond
    for c in obs:
        prep = R.prepare(c)
        for st in (0, 1, 3):
            rec = RB.diff(prep, prep.tmem_in, [st] * c.form.cta_group)
            assert rec["status"] == "observed" and rec["observation"] and "caught" not in rec, rec
    # the controls that can fail as predicted stay controls
    assert {"n-above-256", "m64-collision"} <= set(T.CONTROL_PREDICTION) - set(T.OBSERVATIONS)


def test_the_tmem_checked_form_has_the_check_and_its_sm_to_itself():
    from harness import registry
    from harness.contract import Kernel
    from harness.families.tcgen05 import kernel as K
    from harness.run import compile as C
    form = Form("f16", tmem_check=True)
    kernel = Kernel(registry.get("tcgen05").name, "sm_100a", form.name, form)
    job = C.compile_job(kernel)
    assert job.options[-1] in (K.TMEM_CHECK_OPTION, "-DTC_NO_TMEM_CHECK")
    assert C.compile_job(Kernel(kernel.family, "sm_100a", "tcgen05_f16_cg1_SS", Form("f16"))).options == \
        C.DEFAULT_OPTIONS
    prep = R.prepare(T.cases_for_form(form)[0])
    assert K.pack([prep]).smem >= K.EXCLUSIVE_SMEM
    for arch in ("sm_100a", "sm_103a"):  # with the check where ptxas has it, otherwise with the define
        cubin, log = C.nvrtc_compile(K.source(form), form.name, arch, C.DEFAULT_OPTIONS + C.own_options((K.TMEM_CHECK,)))
        assert cubin is not None, log
    cubin, log = C.nvrtc_compile(K.source(form), form.name, "sm_100a", C.DEFAULT_OPTIONS + ("-Xptxas=-no-such-flag",))
    assert cubin is None  # the probe can tell a ptxas that refuses an option
    assert "skip ? 3u" in K.source(form) and K.STATUS_NOT_OBSERVED == 3


@pytest.mark.cute
def test_the_summary_counts_observations_apart(monkeypatch, tmp_path):
    """Through the real sweep on the simulated device (which faults on Tensor Memory beyond the allocation, as the
    ptxas check would): the observation is recorded `observed` with what happened, counted under `observations`
    and neither among the controls' passes nor the ordinary cases."""
    from harness import registry
    from harness.contract import Kernel
    from harness.plan import Plan
    from tests.run import simsweep
    from tests.simulated import fake_gpus
    fam = registry.get("tcgen05")
    form = Form("f16", tmem_check=True)
    kernel = Kernel(fam.name, "sm_100a", form.name, form)
    case = T.cases_for_form(form)[0]
    fake_gpus.install(monkeypatch, ["sm_100a"])
    summary, recs, _, _ = simsweep.sweep(Plan([(kernel, [case])]), tmp_path / "r.jsonl")
    r = recs[case.id]
    assert r["status"] == "observed" and "faulted" in r["observation"] and r["launch_status"] == "fault", r
    assert summary["observations"] == 1 and summary.get("observed") == 1
    assert not summary["controls"] and not summary["ordinary"] and not summary.get("pass") and not summary.get("fail")


def test_4_and_6_bit_operands_cannot_be_transposed():
    """CUTLASS's instruction descriptor (mma_sm100_desc.hpp:427-428): MN-major only for e4m3, e5m2, s8/u8, f16,
    bf16, tf32; an f8f6f4 / mxf8f6f4 4- or 6-bit operand with its transpose bit is refused, naming the rule."""
    for kind in ("f8f6f4", "mxf8f6f4"):
        for t in ("e2m1", "e2m3", "e3m2"):
            m = 128
            out = run("idesc", "--kind", kind, "--atype", t, "--btype", "e4m3", "--m", m, "--n", 64, "--transpose-a")
            assert out.returncode == 1 and f"A of type {t} cannot be MN-major" in out.stdout, out.stdout
            out = run("idesc", "--kind", kind, "--atype", "e4m3", "--btype", t, "--m", m, "--n", 64, "--transpose-b")
            assert out.returncode == 1 and f"B of type {t} cannot be MN-major" in out.stdout
            assert run("idesc", "--kind", kind, "--atype", t, "--btype", t, "--m", m, "--n", 64).returncode == 0
        assert run("idesc", "--kind", kind, "--atype", "e5m2", "--btype", "e4m3", "--m", 128, "--n", 64,
                   "--transpose-a", "--transpose-b").returncode == 0


# ---------------------------------------------------------------------------------------------------- qualifier forms

def _variant_forms():
    from harness.families.tcgen05 import forms as F
    return F.variant_forms()


@pytest.fixture(scope="module")
def variant_cubins():
    """Every qualifier form and the plain f16 / tf32 forms it varies, compiled for both archs (through the compile
    cache, in parallel processes, as the sweep compiles them)."""
    import os
    from harness.families.tcgen05 import kernel as K
    from harness.run import compile as C, cores
    plain = [Form("f16"), Form("f16", a_src="TS"), Form("f16", 2), Form("tf32")]
    keys = [(f, arch) for arch in ("sm_100a", "sm_103a") for f in _variant_forms() + plain]
    jobs = [C.CompileJob(f.name, K.source(f), arch) for f, arch in keys]
    built = C.compile_many(jobs, workers=max(cores.default_workers(), min(4, os.cpu_count() or 1)))
    return {key: comp.cubin_path for key, comp in zip(keys, built)}


def test_every_qualifier_form_compiles_for_both_archs_and_only_its_own_sass_check_passes(variant_cubins):
    """Each qualifier form (scale-input-d, disable-output-lane, both, the A collector's fill / use / lastuse /
    discard, .ashift, tcgen05.shift) compiles for sm_100a and sm_103a and its SASS shows the qualifier (the rules of
    kernel.variant_rules); its SASS fails every other form's check of the same kind, CTA group and A source,
    but collector::a::discard, whose SASS is the plain instruction's (no collector suffix)."""
    from harness.families.tcgen05 import kernel as K
    from harness.run import sass
    forms = {f for f, _ in variant_cubins}
    for (f, arch), path in variant_cubins.items():
        assert sass.verify(path, K.sass_check(f, arch)).ok, (f.name, arch)
        for g in forms:
            if g == f or (g.kind, g.cta_group, g.a_src) != (f.kind, f.cta_group, f.a_src):
                continue
            same = {f.variant, g.variant} <= {"", "ca_discard"}
            check = dataclasses.replace(K.sass_check(g, arch), function=f.name)
            assert sass.verify(path, check).ok == same, (f.name, "judged as", g.name, arch)


def test_the_scaled_form_issues_what_cutlass_issues():
    """CUTLASS's SM100_MMA_F16BF16_SS_SCALED (mma_sm100_umma.hpp) issues tcgen05.mma with the disable-output-lane
    vector and the scale-input-d immediate; the dol_sid form's statement is the same instruction, operand for
    operand (predicate name and the immediate's spelling aside)."""
    import re
    from harness.families.tcgen05 import forms as F
    from tests.oracles import cutlass_cpp
    if cutlass_cpp.include_dirs() is None:
        pytest.skip(str(cutlass_cpp.skip_reason()))
    hdr = (__import__("pathlib").Path(cutlass_cpp.include_dirs()[0]) / "cute/arch/mma_sm100_umma.hpp").read_text()
    body = hdr[hdr.index("struct SM100_MMA_F16BF16_SS_SCALED"):]
    theirs = re.search(r'"(tcgen05\.mma[^"]*?);', body[:body.index("CUTE_INVALID_CONTROL_PATH")])[1]
    ours = re.search(r"(tcgen05\.mma\S* [^;]*);", F.mma_statement(Form("f16", variant="dol_sid")))[1]
    norm = lambda t: re.sub(r",\s*[pq],", ", PRED,", t).replace(f", {F.SCALE_INPUT_D}", ", IMM").replace(", %9", ", IMM")
    assert norm(theirs) == norm(ours), (theirs, ours)


def test_qualifier_forms_are_modelled():
    """scale-input-d: D = A*B + C * 2^-2; disable-output-lane: a masked lane keeps C (or the poison); the collector
    sequences (A from shared or Tensor Memory): every MMA after the fill adds A*B again (A from the collector, or the
    same A reloaded); discard: the plain product; .ashift: D's row r is A's row r - 1 times B (+ C), row 0 not checked;
    tcgen05.shift.down: lanes 1-31 of D's first 8 columns hold the lane above's (A*B + C), lane 0 there not checked.
    The expectations are written here from the ISA's words, not from reference.py."""
    from harness.families.tcgen05 import datapaths as DP, forms as F, kernel as K
    checked = set()
    for f in _variant_forms():
        cases = T.cases_for_form(f)
        assert {c.scale_d for c in cases} == {0, 1}
        for c in cases:
            prep = R.prepare(c)
            a, b = prep.operands["a"], prep.operands["b"]
            prod = a @ b.T
            cta, lane, col, _ = DP.d_position(c.m, c.n, f.cta_group, f.ws, c.dtype)
            cm = DP.decode_d(c, prep.tmem_in) if c.scale_d else 0  # C as the kernel stores it
            unchecked = np.zeros((c.m, c.n), bool)
            if f.variant == "sid":
                want = prod + cm / 4
            elif f.variant.startswith("ca_"):
                want = f.mmas * prod + cm
            elif f.variant == "ashift":
                assert c.m == 128 and f.a_src == "TS"  # the ISA: M = 128 or 256
                want = np.vstack([np.zeros((1, c.n)), a[:-1] @ b.T]) + cm
                unchecked[0] = True
            elif f.variant == "shift_down":
                # D's rows on the lanes of layout D (M = 128: lane = row) or F (M = 64: rows 0-15 on lanes 0-15)
                want = np.array(prod + cm, dtype=np.float64)
                rows = 32 if c.m == 128 else 16
                want[1:rows, :8] = (prod + cm)[0:rows - 1, :8]
                unchecked[0, :8] = True
            else:
                bits = np.array(R.LANE_MASK, np.uint64)[4 * cta + lane // 32] >> (lane % 32).astype(np.uint64)
                masked = (bits & 1) == 1
                assert masked.any() and not masked.all()
                want = np.where(masked, cm, prod + (cm / 4 if f.variant == "dol_sid" else cm))
                if not c.scale_d:
                    assert np.array_equal(prep.keeps_poison, masked)
                    want = np.where(masked, prep.expected, want)
                assert all([p[f"lane_mask{i}"] for i in range(8)] == list(R.LANE_MASK) for p in prep.params)
                packed = K.pack([prep]).params
                assert all(list(packed[j][[f"lane_mask{i}" for i in range(8)]]) == list(R.LANE_MASK)
                           for j in range(f.cta_group))
            assert np.array_equal(prep.unchecked if prep.unchecked is not None else np.zeros_like(unchecked),
                                  unchecked), c.id
            assert np.array_equal(np.where(unchecked, 0, prep.expected), np.where(unchecked, 0, want)), c.id
            unsettled = f.variant in ("sid", "dol", "dol_sid") or (f.variant in ("ca_fill_lastuse",
                                                                                 "ca_fill_use_lastuse")
                                                                   and f.a_src == "SS")
            assert (T.unsettled_reason(c) is not None) == unsettled, c.id
            checked.add((f.variant, f.a_src))
    assert {v for v, _ in checked} == set(F.VARIANTS) and not T.VARIANT_OPEN
    assert {src for v, src in checked if v.startswith("ca_")} == {"SS", "TS"}


# ---------------------------------------------------------------------------------------------------- shifts

SHIFT_FORMS = [f for f in _variant_forms() if f.variant in ("ashift", "shift_down")]
SHIFT_CASES = [c for f in SHIFT_FORMS for c in T.cases_for_form(f)]


def _row_shift(rows: np.ndarray, how: str, fill: np.ndarray) -> np.ndarray:
    """`rows` moved down one (`fill` in the row moved in), or a plausible wrong move."""
    if how == "down":
        return np.vstack([fill[None], rows[:-1]])
    if how == "none":
        return rows
    if how == "up":
        return np.vstack([rows[1:], fill[None]])
    if how == "by-two":
        return np.vstack([fill[None], fill[None], rows[:-2]])
    if how == "per-quarter":  # within each 32-row group, as tcgen05.shift moves a warp's lanes
        return np.concatenate([np.vstack([fill[None], q[:-1]]) for q in np.split(rows, len(rows) // 32)])
    raise ValueError(how)


def _device_after_shift(case, prep, how: str, fill: str):
    """Tensor Memory as a device leaves it, computed here from the ISA's words and the case's operands, not from
    reference.py: .ashift: D = (A with its rows moved `how`) times B, plus C; tcgen05.shift.down [d_tmem]: D = A*B + C
    placed by the data-path layouts of tests/test_tcgen05.py (written from the ISA's pictures), then the 32 lanes at D's
    address moved `how` within D's first 8 columns (or 'all-columns': every column). `fill`: what the device leaves in
    the row the ISA leaves undefined ('zero', 'last': the row dropped, 'poison': the cell's old content)."""
    from tests.test_tcgen05 import device_tmem
    a, b = prep.operands["a"], prep.operands["b"]
    cm = 0
    if case.scale_d:
        from harness.families.tcgen05 import datapaths as DP
        cm = DP.decode_d(case, prep.tmem_in)
    if case.form.variant == "ashift":
        filler = {"zero": np.zeros(a.shape[1]), "last": a[-1], "poison": np.full(a.shape[1], 7.0)}[fill]
        return device_tmem(case, prep, _row_shift(a, how, filler) @ b.T + cm)
    out = device_tmem(case, prep, a @ b.T + cm)
    cols = slice(None) if how == "all-columns" else slice(0, 8)
    cells = out[0, :32, cols]
    filler = {"zero": np.zeros_like(cells[0]), "last": cells[-1], "poison": cells[0]}[fill]
    out[0, :32, cols] = _row_shift(cells, "down" if how == "all-columns" else how, filler)
    return out


@pytest.mark.parametrize("case", SHIFT_CASES, ids=lambda c: c.id)
def test_a_shift_form_checks_every_row_the_isa_defines_and_not_the_row_it_leaves_undefined(case):
    """.ashift and tcgen05.shift have a model: the rows the ISA defines are compared exactly, the row the shift brings
    in (undefined by the ISA) is excluded explicitly, counted in the record with the ISA's words; so whatever a device
    leaves there the case passes, and a wrong shift (none, up, by two rows, per 32-row quarter, or on every column)
    fails on the defined rows."""
    prep = R.prepare(case)
    ncheck = case.n if case.form.variant == "ashift" else min(case.n, 8)
    assert prep.unchecked.sum() == ncheck and not prep.unchecked[1:].any()
    section = "9.7.16.10.9.1" if case.form.variant == "ashift" else "9.7.16.9.3"
    from harness.families.tcgen05 import readback as RB
    for fill in ("zero", "last", "poison"):
        rec = RB.diff(prep, _device_after_shift(case, prep, "down", fill), [0])
        assert rec["status"] == "pass" and rec["mismatches"] == 0 and "unwritten" not in rec, (fill, rec)
        assert rec["not_checked"] == ncheck and section in rec["not_checked_why"], rec
    wrong = ("none", "up", "by-two") + (("per-quarter",) if case.form.variant == "ashift" else ("all-columns",))
    for how in wrong:
        rec = RB.diff(prep, _device_after_shift(case, prep, how, "zero"), [0])
        assert rec["status"] == "fail" and rec["mismatches"] > 0, (how, rec)
        assert all(m["row"] > 0 or m["col"] >= 8 for m in rec["first_mismatches"]), how  # defined rows only
        assert rec["not_checked"] == ncheck


def test_the_shift_forms_are_swept_where_the_isa_allows_them():
    """.ashift takes A from Tensor Memory with M = 128 or 256 (PTX ISA 9.7.16.10.9.1); the forms are one-CTA, so
    M = 128; a case of another M cannot be built."""
    assert {c.form.variant for c in SHIFT_CASES} == {"ashift", "shift_down"}
    assert {(c.m, c.form.a_src) for c in SHIFT_CASES if c.form.variant == "ashift"} == {(128, "TS")}
    assert {c.scale_d for c in SHIFT_CASES if c.form.variant == "ashift"} == {0, 1}
    with pytest.raises(ValueError, match=r"9\.7\.16\.10\.9\.1.*M = 128 or M = 256"):
        T.TcCase(Form("f16", a_src="TS", variant="ashift"), 64, 64, "f16", "f16", "f32", "128B", "128B")
    for c in SHIFT_CASES:
        assert T.unsettled_reason(c) is None  # defined rows: the ISA's words; the undefined one: not checked


@pytest.mark.cute
def test_a_wrong_shift_is_caught_on_the_simulated_device(monkeypatch):
    """Through the sweep's own prepare / read-back on the simulated sm_100a device (which shifts as the ISA says and
    fills the undefined row with A's dropped last row / leaves lane 0 as it was): the shift cases pass, saying how many
    elements were not checked; planted wrong shifts ('no-shift'; .ashift within 32-row quarters; tcgen05.shift on every
    column) fail."""
    from pathlib import Path

    from harness import registry
    from harness.contract import Kernel
    from harness.records import schema_check
    from tests.run import simsweep
    from tests.simulated import oracle_cache, tcgen05_device
    schema = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results-schema.json").read_text())
    fam = registry.get("tcgen05")
    for form in SHIFT_FORMS:
        kernel = Kernel(fam.name, "sm_100a", form.name, form)
        cases = T.cases_for_form(form)
        inp, _ = fam.prepare(kernel, cases)
        oracle_cache.ensure_tmem(sorted({r for i in range(len(cases))
                                         for r in tcgen05_device.oracle_requests(kernel.name, inp.params[i])}))
        monkeypatch.delenv("TC_SIM_FAULTS", raising=False)
        recs = simsweep.in_process(kernel, cases, tcgen05_device.run)
        assert {r["status"] for r in recs} == {"pass"} and all(r["not_checked"] > 0 for r in recs), recs
        assert not [e for r in recs for e in schema_check.errors({**r, "type": "case"}, schema)]  # fields documented
        other = "shift-per-quarter" if form.variant == "ashift" else "shift-all-columns"
        for mode in ("no-shift", other):
            monkeypatch.setenv("TC_SIM_FAULTS", ",".join(f"{kernel.name}:{i}:{mode}" for i in range(len(cases))))
            recs = simsweep.in_process(kernel, cases, tcgen05_device.run)
            assert all(r["status"] == "fail" and r["mismatches"] > 0 for r in recs), (mode, recs)


# ---------------------------------------------------------------------------------------------------- K = 96

def test_k96_is_swept_on_sm_103a_alone_with_the_blocks_the_isa_pairs_with_it():
    """sm_103a's K = 96 (PTX ISA 9.7.16.2.1.1: sm_103a only): cases of .block16 (kind::mxf4nvf4, 6 ue4m3 factors a
    row) and .block32 (kind::mxf4nvf4 and kind::mxf4, 3 ue8m0 factors a row; Table 54), one CTA and a pair, only in
    sm_103a's plan; their instruction descriptors set the K = 96 bit and are legal on sm_103a, refused on sm_100a; the
    instruction names .blockN, never the .scale_vec::NX spelling the ISA aliases only at K = 64 / 128."""
    from harness.families.tcgen05 import datapaths as DP, forms as F
    from harness.spec import idesc
    assert not [f for f in T.forms_for("sm_100a") if f.k96_block]
    k96 = [f for f in T.forms_for("sm_103a") if f.k96_block]
    assert {(f.kind, f.k96_block, f.cta_group) for f in k96} == \
        {("mxf4nvf4", 16, 1), ("mxf4nvf4", 32, 1), ("mxf4", 32, 1), ("mxf4nvf4", 16, 2), ("mxf4nvf4", 32, 2)}
    for f in k96:
        stmt = F.mma_statement(f)
        assert f".block_scale.block{f.k96_block} " in stmt and "scale_vec" not in stmt, stmt
        cases = T.cases_for_form(f)
        assert len(cases) >= 2 and {c.scale_d for c in cases} == {0, 1}
        for c in cases:
            assert c.k == 96 and c.major_a == c.major_b == "K" and "block" in c.id
            d = c.idesc()
            assert d.k96 and d.scale_type == ("ue4m3" if f.k96_block == 16 else "ue8m0")
            assert idesc.encode_idesc(d, "sm_103a") >> 31 == 1
            with pytest.raises(DescriptorError, match="sm_103a shape"):
                idesc.validate_idesc(d, "sm_100a")
            prep = R.prepare(c, "sm_103a")
            assert prep.operands["sfa"].shape == (c.m, 96 // f.k96_block) == (c.m, DP.sf_blocks(f))
            # the product scales each block of 16 / 32 elements of K by its own factor
            bk = f.k96_block
            sa = DP.scale_codes_to_values(f.scale_type, prep.operands["sfa"])
            sb = DP.scale_codes_to_values(f.scale_type, prep.operands["sfb"])
            want = sum((prep.operands["a"][:, j * bk:(j + 1) * bk] * sa[:, j:j + 1]) @
                       (prep.operands["b"][:, j * bk:(j + 1) * bk] * sb[:, j:j + 1]).T for j in range(96 // bk))
            cm = 0 if not c.scale_d else prep.expected - want
            assert np.array_equal(prep.expected, want + cm) and (not c.scale_d or np.any(cm != 0))
            assert not np.array_equal(want, prep.operands["a"] @ prep.operands["b"].T)
    ids = [c.id for _, cs in T.all_cases("sm_103a") for c in cs]
    assert len(ids) == len(set(ids))


def test_k96_forms_compiles_for_sm_103a_and_each_sass_check_tells_the_blocks_apart():
    """Each K = 96 form compiles for sm_103a and passes its own SASS check (UTCOMMA, .BLOCK16 exactly for .block16,
    four tcgen05.cp for .block16's two factor atoms, two for .block32); a .block16 cubin fails the .block32 checks and
    the K = 64 mxf4nvf4 form's (two copies), and the other way round. (K itself is a runtime idesc bit: a .block32
    cubin reads as kind::mxf4's K = 64 one.)"""
    import os
    from harness.families.tcgen05 import forms as F, kernel as K
    from harness.run import compile as C, cores, sass
    forms = F.k96_forms() + [Form("mxf4nvf4"), Form("mxf4nvf4", 2)]
    jobs = [C.CompileJob(f.name, K.source(f), "sm_103a", sass_check=K.sass_check(f, "sm_103a")) for f in forms]
    built = C.compile_many(jobs, workers=max(cores.default_workers(), min(4, os.cpu_count() or 1)))
    paths = {f: comp.cubin_path for f, comp in zip(forms, built)}
    for f in forms:
        assert sass.verify(paths[f], K.sass_check(f, "sm_103a")).ok, f.name
        for g in forms:
            if g == f or g.cta_group != f.cta_group or g.k96_block == f.k96_block == 0:
                continue
            same = (g.sf_vec, F.scale_copies(g)) == (f.sf_vec, F.scale_copies(f))
            check = dataclasses.replace(K.sass_check(g, "sm_103a"), function=f.name)
            assert sass.verify(paths[f], check).ok == same, (f.name, "judged as", g.name)


# ---------------------------------------------------------------------------------------------------- A collector, TS

def test_the_a_collector_takes_a_from_tensor_memory_but_not_fill_or_use_with_ashift():
    """PTX ISA 9.7.16.10.9.1: syntax 3 pairs .collector_usage with [a-tmem] (and 9.7.16.10.9.2's example issues
    '.collector::a:fill [taddr2], [taddr1], ...'); 'It is illegal to specify either of .collector::a::use or
    .collector::a::fill along with .ashift'. So the TS collector forms are swept (the later MMAs naming the same A:
    D = A*B per MMA whether the collector is reused or A reloaded), and the rule refuses fill / use with .ashift."""
    from harness.families.tcgen05 import forms as F
    for op in F.COLLECTOR_OPS:
        assert F.collector_allowed(op, "SS") is None and F.collector_allowed(op, "TS") is None
        why = F.collector_allowed(op, "TS", ashift=True)
        assert (why is not None) == (op in ("fill", "use")), op
        if why:
            assert "9.7.16.10.9.1" in why and "along with .ashift" in why
        assert F.collector_allowed(op, "SS", ashift=True) is not None  # .ashift takes A from Tensor Memory
    ts = [f for f in _variant_forms() if f.variant.startswith("ca_") and f.a_src == "TS"]
    assert {f.variant for f in ts} == {"ca_fill_lastuse", "ca_fill_use_lastuse", "ca_discard"}
    for f in ts:
        stmt = F.mma_statement(f)
        assert stmt.count("[%1]") == f.mmas and "desc_a" not in stmt  # every MMA names the same [a-tmem]
        for c in T.cases_for_form(f):
            assert T.unsettled_reason(c) is None
    with pytest.raises(ValueError, match="one-CTA"):
        F.validate_form(Form("f16", 2, a_src="SS", variant="ca_discard"))


def test_ptxas_compiles_each_a_collector_op_exactly_where_the_rule_allows_it():
    """The rule (forms.collector_allowed) against ptxas, for both archs: every collector::a op with A in shared and in
    Tensor Memory, and with .ashift; NVRTC builds exactly the ones the rule allows and refuses the others in ptxas's
    words."""
    from harness.families.tcgen05 import forms as F
    from harness.run import compile as C
    body = ('extern "C" __global__ void k(unsigned* o, unsigned long long da, unsigned long long db) {\n'
            '  asm volatile("{\\n.reg .pred q;\\nsetp.ne.b32 q, %3, 0;\\nINSTR\\n}\\n" :: "r"(o[0]), "r"(o[1]), '
            '"l"(db), "r"(o[2]), "l"(da) : "memory");\n}\n')
    jobs, want = [], []
    for arch in ("sm_100a", "sm_103a"):
        for op in F.COLLECTOR_OPS:
            for src, ashift in (("SS", False), ("TS", False), ("TS", True)):
                a = "[%1]" if src == "TS" else "%4"
                instr = (f"tcgen05.mma.cta_group::1.kind::f16{'.ashift' if ashift else ''}.collector::a::{op} "
                         f"[%0], {a}, %2, %3, q;")
                jobs.append(C.CompileJob(f"k_{op}_{src}_{ashift}", body.replace("INSTR", instr), arch))
                want.append(F.collector_allowed(op, src, ashift) is None)
    built = C.compile_many(jobs, raise_on_error=False)
    for job, comp, ok in zip(jobs, built, want):
        assert (comp.error is None) == ok, (job.name, job.arch, comp.error)
        if not ok:
            assert "cannot be combined with modifier '.ashift'" in comp.error.log, comp.error.log
