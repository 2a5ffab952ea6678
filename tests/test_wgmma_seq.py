"""wgmma_seq (sequences of wgmma in one kernel) on the CPU: the family's registration, its sub-tile and
descriptor-advance model (against values worked by hand and against CuTe DSL's tile_to_shape), the negative
controls, every case and control on the simulated GPU (tests/simulated/wgmma_seq_device.py, its own
descriptor decoding), planted bugs that must fail there, and NVRTC + SASS of the kernels (wgmma count, the
descriptor step compiled as an add or an or, no register of an in-flight wgmma touched before its wait)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from harness import cli, plan, registry
from harness.enums import Arch, DescStep, ExitCode, FamilyName, SeqPattern
from harness.families.wgmma import forms as wgmma_forms
from harness.families.wgmma_seq import FAMILY, cases as C, forms as F, kernel as K, reference as R
from harness.run import compile as nvrtc, sass as sass_rules
from harness.spec import layouts
from tests import sass_gmma
from tests.run import simsweep
from tests.simulated import fake_gpus, wgmma_seq_device

KERNELS = FAMILY.kernels(Arch.SM_90A)
BY_NAME = {k.name: (k, cs) for k, cs in KERNELS}
N_8_MOD_16 = tuple(range(24, 257, 16))  # N = 8 (mod 16) with more than one 8-column group


def kernel_of(pattern: SeqPattern, op: DescStep, kind: str):
    return next((k, cs) for k, cs in KERNELS
                if k.form.pattern == pattern and k.form.step_op == op and k.form.inst.kind == kind)


# ---------------------------------------------------------------------------------------------------- registry

def test_the_family_is_registered_and_its_kernel_names_parse_back():
    assert str(FamilyName.WGMMA_SEQ) == "wgmma_seq" and registry.get("wgmma_seq") is FAMILY
    names = [k.name for k, _ in KERNELS]
    assert len(names) == len(set(names)) == len(F.all_keys()) == 14
    for k, cases in KERNELS:
        assert k.name.startswith("wgmmaseq_") and wgmma_seq_device.key_of(k.name) == k.form
        ids = [c.id for c in cases]
        assert len(ids) == len(set(ids)) and all(c.key == k.form for c in cases)
    kinds = {k.form.inst.kind for k, _ in KERNELS if k.form.pattern == SeqPattern.K_LOOP}
    assert kinds == {"f16", "tf32", "f8", "s8"}  # several dtypes: f16 and bf16 variants, tf32, e4m3/e5m2, s8/u8


def test_every_swizzle_and_major_ness_the_form_allows_is_in_every_k_loop():
    for op in DescStep:
        for kind in ("f16", "tf32", "f8", "s8"):
            _, cases = kernel_of(SeqPattern.K_LOOP, op, kind)
            seen = {(c.a.tag, c.b.tag) for c in cases if c.control is None}
            majors = ("K", "MN") if kind == "f16" else ("K",)
            for m in majors:
                for sw in layouts.SWIZZLES:
                    assert any(a == f"{m}/{sw}" for a, _ in seen) and any(b == f"{m}/{sw}" for _, b in seen)


@pytest.mark.parametrize("bad, says", [
    (dict(pattern=SeqPattern.RS_PIPELINE, inst=wgmma_forms.KernelKey("f16", 64, "f32", "SS")), "registers (RS)"),
    (dict(pattern=SeqPattern.K_LOOP, inst=wgmma_forms.KernelKey("f16", 64, "f32", "RS")), "shared memory (SS)"),
    (dict(step_op=DescStep.OR, pattern=SeqPattern.TWO_WARPGROUPS), "advance by add"),
    (dict(steps=5), "1..4 steps"),
    (dict(inst=wgmma_forms.KernelKey("b1", 64, "s32", "SS")), "b1"),
    (dict(inst=wgmma_forms.KernelKey("f16", 12, "f32", "SS")), "N = 12 is not legal"),
])
def test_a_sequence_key_the_harness_cannot_build_is_refused_in_one_sentence(bad, says):
    base = dict(pattern=SeqPattern.K_LOOP, inst=wgmma_forms.KernelKey("f16", 64, "f32", "SS"), step_op=DescStep.ADD,
                steps=4)
    with pytest.raises(ValueError, match=re.escape(says)):
        F.SeqKey(**{**base, **bad})


def test_a_selection_no_sequence_case_has_is_refused_before_anything_compiles(capsys):
    assert cli.main(["sweep", "--family", "wgmma_seq", "--n", "8"]) == ExitCode.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--n 8: no case of the selected families has it" in err[0]


# ---------------------------------------------------------------------------------------------------- the model

# Advances (bytes from the tile's start to each K-step's sub-tile), worked by hand from the canonical layouts of
# PTX ISA 9.7.15.5.1.2 with atoms laid down MN first: 32-byte K-steps; K-major W-byte swizzle atoms of 8 rows
# x W bytes, rows/8 of them down MN before the next along K (rows * W bytes later); no swizzle: core matrices
# of 8 rows x 16 B, LBO = 16 * rows between K-chunks; MN-major: K-groups of 8 rows SBO apart, two per step.
HAND_ADVANCES = {
    ("K", "128B", "f16", 64): (0, 32, 64, 96),  # triton#6220: the K = 64 sub-tiles inside one 128B atom
    ("K", "64B", "f16", 64): (0, 32, 4096, 4128),
    ("K", "32B", "f16", 64): (0, 2048, 4096, 6144),
    ("K", "none", "f16", 64): (0, 2048, 4096, 6144),
    ("K", "64B", "e4m3", 32): (0, 32, 2048, 2080),
    ("K", "128B", "tf32", 32): (0, 32, 64, 96),
    ("MN", "128B", "f16", 64): (0, 2048, 4096, 6144),  # SBO = 1024: one atom per 8 K-rows
    ("MN", "32B", "f16", 32): (0, 1024, 2048, 3072),  # two 256-byte atoms along N: SBO = 512, two K-groups a step
    ("MN", "none", "bf16", 32): (0, 1024, 2048, 3072),  # LBO = 128 x 4 MN chunks = 512, two K-groups a step
}


@pytest.mark.parametrize("spec, want", HAND_ADVANCES.items(), ids=lambda x: str(x))
def test_k_step_advances_are_the_ones_worked_by_hand(spec, want):
    major, sw, t, rows = spec
    from harness.spec.fragments import WGMMA_K
    tile = C.SeqTile(major, sw, t, rows, WGMMA_K[t], 4)
    assert tuple(tile.offset(j) for j in range(4)) == want


@pytest.mark.parametrize("major, sw", [(m, s) for m in ("K", "MN") for s in layouts.SWIZZLES])
def test_the_sub_tiles_partition_the_tile_and_are_slices_of_one_layout_where_there_is_one(major, sw):
    """Each step's (and each warpgroup's) sub-tile is exactly the corresponding slice of the whole tile: where the
    tile is one canonical layout (K-major 128B or no swizzle, MN-major always) the slice of that layout, with the
    swizzle anchored on the address; and the sub-tiles never share a byte."""
    tile = C.SeqTile(major, sw, "f16", 128, 16, 4)
    addr = [layouts.element_bit_addresses(tile.sub(j)) for j in range(4)]
    flat = np.concatenate([a.ravel() for a in addr])
    assert np.unique(flat).size == flat.size
    for j in range(4):
        top = layouts.element_bit_addresses(tile.sub(j, 0, 64))
        bottom = layouts.element_bit_addresses(tile.sub(j, 64, 64))
        assert (np.vstack([top, bottom]) == addr[j]).all()
    if major == "MN" or sw in ("128B", "none"):
        full = tile.full() if major == "MN" else (
            layouts.SmemLayout("K", sw, "f16", 128, 64, 16, 1024) if sw == "128B"
            else layouts.SmemLayout("K", "none", "f16", 128, 64, 16 * 128, 128))
        whole = layouts.element_bit_addresses(full)
        assert all((whole[:, 16 * j:16 * j + 16] == addr[j]).all() for j in range(4))


@pytest.mark.cute
def test_the_sub_tiles_and_advances_are_cutlass_tiles_and_descriptor_offsets():
    """Against CuTe DSL: the tile is CUTLASS's tile_to_shape of the wgmma smem atom (MN first), every element of
    every step's sub-tile sits where CuTe's swizzled layout puts it, and each advance is the unswizzled offset of
    the sub-tile's first element (what CUTLASS adds to a descriptor's start for a K-block)."""
    cute_oracle = pytest.importorskip("cute_oracle", reason="nvidia-cutlass-dsl is not installed")
    from harness.spec.fragments import WGMMA_K
    specs = [(m, s, t, rows) for m in ("K", "MN") for s in layouts.SWIZZLES for t, rows in (("f16", 64), ("bf16", 32))]
    specs += [("K", s, t, 32) for s in layouts.SWIZZLES for t in ("tf32", "e4m3", "s8")]
    answers = cute_oracle.smem_tiles([(m, s, t, rows, 4 * WGMMA_K[t]) for m, s, t, rows in specs])
    for (major, sw, t, rows), ans in zip(specs, answers):
        k = WGMMA_K[t]
        tile = C.SeqTile(major, sw, t, rows, k, 4)
        for j in range(4):
            sub = layouts.element_bit_addresses(tile.sub(j)) >> 3
            assert (sub == ans["address"][:, j * k:(j + 1) * k]).all(), (major, sw, t, j)
            assert tile.offset(j) == int(ans["offsets"][0, j * k]) * ans["elem_bytes"], (major, sw, t, j)


def test_or_is_add_for_every_ordinary_case_and_the_controls_read_something_else():
    for k, cases in KERNELS:
        for c in cases:
            h = C.handed(c)
            if c.control is None:
                assert C.reads_as_intended(c), c.id
                if k.form.step_op == DescStep.OR:
                    for t, steps in ((c.a, h.steps_a), (c.b, h.steps_b)):
                        base_field = (t.sub(0).start >> 4) % (F.WINDOW_ALIGN >> 4)
                        assert all(s < F.WINDOW_ALIGN >> 4 and not base_field & s for s in steps), c.id
            else:
                assert not C.reads_as_intended(c), c.id


def test_each_pattern_has_its_controls():
    for k, cases in KERNELS:
        got = {(str(c.control), c.control_operand) for c in cases if c.control is not None}
        want = {(str(c), o) for c, o in C.CONTROLS[k.form.pattern]
                if c != C.SeqControl.OR_BASE or k.form.step_op == DescStep.OR}
        assert got == want, k.name


def test_the_reference_of_a_control_is_the_predicted_misread_not_the_product():
    for name in ("wgmmaseq_f16_m64n32k16x4_kloop_or_f32_SS", "wgmmaseq_s8_m64n128k32x4_rspipe_add_s32_RS",
                 "wgmmaseq_f16_m128n64k16x2_twowg_add_f32_RS"):
        for c in (c for c in BY_NAME[name][1] if c.control is not None):
            p = R.prepare(c)
            assert not np.array_equal(p.expected, p.intended), c.id
    swapped = next(c for c in BY_NAME["wgmmaseq_f16_m128n64k16x2_twowg_add_f32_SS"][1]
                   if c.control == C.SeqControl.SWAPPED_WG)
    p = R.prepare(swapped)
    # the two warpgroups' 64-row blocks of D come out exchanged (tilelang#2522's symptom); the inputs are drawn
    # as prepare draws them (A, then B, from the case's seed; scale-d 0: no C)
    from harness.families.wgmma.reference import draw_values
    from harness.spec import dtypes
    rng = np.random.default_rng(swapped.seed)
    a = draw_values(rng, dtypes.get("f16"), (128, 32), "exact")
    b = draw_values(rng, dtypes.get("f16"), (64, 32), "exact")
    assert swapped.scale_d == 0
    assert np.array_equal(p.expected, a[np.r_[64:128, 0:64]] @ b.T) and np.array_equal(p.intended, a @ b.T)


# ---------------------------------------------------------------------------------------------------- simulated GPU

def _run_on_sim(kernel, cases):
    return {r["id"]: r for r in simsweep.in_process(kernel, cases, wgmma_seq_device.run)}


def _sample(cases, every: int):
    return [c for i, c in enumerate(cases) if c.control is not None or i % every == 0]


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
@pytest.mark.parametrize("name", list(BY_NAME))
def test_the_simulated_gpu_passes_the_cases_and_gives_each_control_its_predicted_misread(name):
    kernel, cases = BY_NAME[name]
    recs = _run_on_sim(kernel, _sample(cases, 9))
    for c in _sample(cases, 9):
        r = recs[c.id]
        assert r["status"] == "pass", r
        if c.control is not None:
            assert r["caught"] and r["matches_model_prediction"] and r["mismatches"] == 0, r


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_every_case_of_every_kernel_on_the_simulated_gpu():
    for kernel, cases in KERNELS:
        recs = _run_on_sim(kernel, cases)
        assert {r["status"] for r in recs.values()} == {"pass"}, kernel.name


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_a_sweep_on_a_simulated_gpu_records_the_family(monkeypatch, tmp_path):
    p = plan.make(plan.Selection(families=("wgmma_seq",), kinds=("tf32",)), {"wgmma_seq": "sm_90a"})
    fake_gpus.install(monkeypatch, ["sm_90a"])
    summary, recs, _, _ = simsweep.sweep(p, tmp_path / "r.jsonl")
    assert summary["pass"] == len(recs) == sum(len(cs) for _, cs in p.work) > 0
    assert {r["family"] for r in recs.values()} == {"wgmma_seq"}
    assert any(r.get("control") for r in recs.values())


@pytest.fixture
def fresh_model():
    """The model's caches emptied before a plant and after it (a planted function must not leave its answers)."""
    def clear():
        for f in (C.place, C.handed, C.read_layouts):
            f.cache_clear()
    clear()
    yield
    clear()


def _plant_or_as_add(monkeypatch):
    monkeypatch.setattr(F, "advance", lambda d, s, op: (d + s) & F.U64)


def _plant_advance_handed_twice(monkeypatch):
    real = K.pack

    def pack(preps):  # the kernel is handed the control's extra 16 bytes twice; the reference modelled it once
        inp = real(preps)
        for i, p in enumerate(preps):
            if p.case.control == C.SeqControl.STEP_PLUS_16:
                for j in range(1, p.case.key.steps):
                    inp.params[i][f"step_{p.case.control_operand.lower()}{j}"] += 1
        return inp
    monkeypatch.setattr(K, "pack", pack)


def _plant_warpgroup_rows_swapped(monkeypatch):
    real = R.prepare

    def prepare(case):  # a model in which warpgroup 0 owns rows 64-127 and warpgroup 1 rows 0-63
        p = real(case)
        if case.key.warpgroups == 2:
            p.expected, p.expected_regs = np.roll(p.expected, 64, axis=0), np.roll(p.expected_regs, 128, axis=0)
        return p
    monkeypatch.setattr(R, "prepare", prepare)


@pytest.mark.parametrize("plant, kernel, which", [
    (_plant_or_as_add, "wgmmaseq_f16_m64n32k16x4_kloop_or_f32_SS", "or-base"),
    (_plant_advance_handed_twice, "wgmmaseq_f8_m64n128k32x4_rspipe_add_f32_RS", "step+16"),
    (_plant_warpgroup_rows_swapped, "wgmmaseq_f16_m128n64k16x2_twowg_add_f32_RS", ""),
], ids=["model-or-is-add", "kernel-handed-another-advance", "warpgroup-rows-swapped"])
@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_a_planted_bug_fails_on_the_simulated_gpu(plant, kernel, which, monkeypatch, fresh_model):
    k, cases = BY_NAME[kernel]
    chosen = [c for c in cases if (which and str(c.control) == which) or (not which and c.control is None)][:6]
    plant(monkeypatch)
    recs = _run_on_sim(k, chosen)
    assert chosen and all(recs[c.id]["status"] == "fail" for c in chosen), [recs[c.id] for c in chosen]


# ---------------------------------------------------------------------------------------------------- NVRTC + SASS

@pytest.fixture(scope="module")
def cubins():
    """Every sequence kernel compiled as a sweep compiles them (NVRTC programs of several kernels, one disassembly a
    program), at the first demand: kernel name -> its SASS. One program a kernel cost 14 NVRTC front ends and 14
    disassemblies. In the session's compile cache, as a sweep's: a cached cubin is keyed by its kernel's source and
    the toolchain, so it is what NVRTC makes of that source; a private cache compiled them again in CI, where the
    early-compile test's sweep of the family had compiled them already (7-8 s of CI)."""
    done = {}

    def sass(name):
        if not done:
            jobs = [nvrtc.compile_job(BY_NAME[n][0]) for n in BY_NAME]  # as the sweep compiles them
            for job, out in zip(jobs, nvrtc.compile_many(jobs)):  # a shared program's listing is read from the cache
                done[job.name] = sass_gmma.function_text(sass_rules.disassembly(out.cubin_path.read_bytes()), job.name)
        return done[name]
    return sass


def _expected_gmma(key: F.SeqKey) -> list[str]:
    i, out = key.inst, []
    for v in F.variants(key):
        if i.kind in ("f16", "tf32"):
            op = f"HGMMA.64x{i.n}x{i.k}.{i.dtype.upper()}" + {"f16": "", "bf16": ".BF16", "tf32": ".TF32"}[v.atype]
        elif i.kind == "f8":
            op = f"QGMMA.64x{i.n}x32.{i.dtype.upper()}.{v.atype.upper()}.{v.btype.upper()}"
        else:
            op = f"IGMMA.64x{i.n}x32.{v.atype.upper()}.{v.btype.upper()}"
        out += [op] * key.steps
    return sorted(out)


def check_sass(key: F.SeqKey, sass: str) -> None:
    assert sorted(sass_gmma.gmma_ops(sass)) == _expected_gmma(key), key.name  # one per variant and step
    listing = sass_rules.instructions(sass)  # and the family's own check, the one every sweep applies
    assert [b for b in (r.broken(listing) for r in K.sass_check(key).rules) if b] == [], key.name
    descs = key.steps * (2 if key.inst.a_src == "SS" else 1)  # step descriptors the kernel derives
    adds, ors = sass_gmma.descriptor_adds(sass), sass_gmma.descriptor_ors(sass)
    if key.step_op == DescStep.ADD:
        assert adds >= descs and ors == 0, (key.name, adds, ors)
    else:  # the steps are ors (two 32-bit halves each); only the window's own additions remain adds
        assert ors >= 2 * descs and adds < descs, (key.name, adds, ors)
    assert sass_gmma.async_register_hazards(sass) == [], key.name
    if key.pattern == SeqPattern.RS_PIPELINE:  # really pipelined: wait_group 1 between the steps
        assert sass_gmma.waits(sass).count(1) >= key.steps - 1, key.name


CI_KERNELS = ["wgmmaseq_tf32_m64n32k8x4_kloop_add_f32_SS", "wgmmaseq_tf32_m64n32k8x4_kloop_or_f32_SS",
              "wgmmaseq_tf32_m64n64k8x4_rspipe_add_f32_RS", "wgmmaseq_f16_m128n64k16x2_twowg_add_f32_RS"]


@pytest.mark.parametrize("name", CI_KERNELS)
def test_kernel_compiles_for_sm_90a_with_its_sass(name, cubins):
    check_sass(BY_NAME[name][0].form, cubins(name))


def test_every_sequence_kernel_compiles_with_its_sass(cubins):
    for name in BY_NAME:
        check_sass(BY_NAME[name][0].form, cubins(name))


def test_the_hazard_check_finds_an_early_register_reuse(cubins):
    """Plant, in the SASS of the RS pipeline, what triton#11781's ptxas did: an instruction that writes the A
    registers of a wgmma still in flight (and one that reads its accumulators): the check must name both."""
    sass = cubins("wgmmaseq_tf32_m64n64k8x4_rspipe_add_f32_RS")
    lines = sass.splitlines()
    at = next(i for i, ln in enumerate(lines) if re.search(r"HGMMA\.\S+ R\d+, R\d+,", ln))
    d, a = map(int, re.search(r"HGMMA\.\S+ R(\d+), R(\d+),", lines[at]).groups())
    for planted, says in ((f"LDG.E.128.CONSTANT R{a}, desc[UR4][R2.64]", f"touches R{a}"),
                          (f"FADD R2, R{d + 3}, R{d + 3}", f"touches R{d + 3}")):
        bad = "\n".join(lines[:at + 1] + [f"        /*ffff*/                   {planted} ;"] + lines[at + 1:])
        hazards = sass_gmma.async_register_hazards(bad)
        assert len(hazards) == 1 and says in hazards[0], hazards


# ---------------------------------------------------------------------------------------------------- N = 8 (mod 16)

def test_the_dense_sweep_already_covers_n_8_mod_16_mn_major_unswizzled_b():
    """tilelang#2593/#2603, triton#7830/#8378: N = 8 (mod 16) with several 8-column core-matrix groups of an
    MN-major, unswizzled B. The single-instruction wgmma cases cover it for every such N, both accumulators and
    both A sources; docs/what-is-checked.md's Bug classes table selects them with this filter."""
    p = plan.make(plan.Selection(families=("wgmma",), kinds=("f16",), n_values=N_8_MOD_16, match="B:MN/none"))
    seen = set()
    for k, cases in p.work:
        for c in cases:
            lay = c.b.layout
            assert lay.major == "MN" and lay.swizzle == "none" and lay.rows == k.form.n and lay.rows // 8 >= 3
            seen.add((k.form.n, k.form.dtype, k.form.a_src))
    assert seen == {(n, d, s) for n in N_8_MOD_16 for d in ("f16", "f32") for s in ("SS", "RS")}
