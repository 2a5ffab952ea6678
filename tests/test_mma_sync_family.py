"""The mma_sync family on the CPU: its registration (in the registry, under its FamilyName), the plan (every form has
cases, ids readable and unique, facets, every ldmatrix tile and every negative control where the form allows it),
prepare -> readback on a simulated device that runs each launch from the launch alone
(tests/simulated/mma_sync_device.py), devices that misread (caught, named by operand, lane and register), and NVRTC +
SASS of every kernel through the harness's own compile path (a sample of forms alone against the per-form SASS
table)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from harness import registry
from harness.enums import ExitCode, FamilyName
from harness.families.mma_sync import FAMILY, cases as C, forms as F, kernel as K, readback as RB
from harness.records import results
from harness.run import compile as nvrtc, gpu, sass, toolchain
from tests import cli_in_process
from tests.run import simsweep
from tests.simulated import mma_sync_device

KERNELS = FAMILY.kernels("sm_90a")
BY_NAME = {k.name: (k, cs) for k, cs in KERNELS}


def run_on_sim(kernel, cases):
    return {r["id"]: r for r in simsweep.in_process(kernel, cases, mma_sync_device.run)}


# ---------------------------------------------------------------------------------------------------- registry

def test_the_family_is_in_the_registry_under_its_name():
    assert registry.REGISTRY[str(FamilyName.MMA_SYNC)] == "harness.families.mma_sync"
    assert registry.get("mma_sync") is FAMILY and FAMILY.name is FamilyName.MMA_SYNC
    assert FAMILY.archs == ("sm_90a", "sm_120a", "sm_121a")
    assert FAMILY.kernels("sm_100a") == [] and len(KERNELS) == len(F.all_kernel_keys()) == 37


# ---------------------------------------------------------------------------------------------------- the plan

def test_every_form_has_cases_and_every_id_is_readable_and_unique():
    ids = [c.id for _, cs in KERNELS for c in cs]
    assert len(ids) == len(set(ids)) == 642  # 42 of them store D with stmatrix (tests/test_mma_sync_store.py)
    assert all(re.fullmatch(r"[a-z0-9.:@+_-]+", i, re.I) for i in ids)
    covered = {(c.key, c.variant_index) for _, cs in KERNELS for c in cs if not c.control}
    assert covered == {(k, i) for k in F.all_kernel_keys() for i in range(len(F.variants(k)))}
    assert {c.form for _, cs in KERNELS for c in cs} == set(F.all_forms())
    for k, cs in KERNELS:
        assert k.name.startswith("mmasync_") and all(c.key == k.form for c in cs)
    c = BY_NAME["mmasync_m16n8k16_f16_f32_dense"][1][-1]
    assert c.id == "m16n8k16-f32.f16.f16.f32-A:ld-cols-sw128-B:regs-neg:trans-dropped@A"


def test_facets_are_the_kernels_and_say_which_cases_are_controls():
    every_arch = [kc for arch in FAMILY.archs for kc in FAMILY.kernels(arch)]
    assert set(FAMILY.facet_values()["kind"]) == {k.form.kind for k, _ in every_arch}
    for k, cs in KERNELS:
        for c in cs:
            f = FAMILY.facets_of(c)
            assert f == {"kind": k.form.kind, "n": 8, "dtype": k.form.dtype, "data": "exact",
                         "control": bool(c.control)}


def test_every_16_bit_form_loads_through_every_tile_with_and_without_trans():
    for k, cs in KERNELS:
        if k.form.kind != "f16" or k.form.shape is F.Shape.M8N8K4:
            continue
        for op in ("A", "B"):
            seen = {getattr(c, op.lower()).tag for c in cs if not c.control}
            want = {f"ld-{s}-{'pad16' if rb == 16 else f'sw{rb}'}" for s in ("rows", "cols") for rb in C.ROW_BYTES
                    if rb == 16 or C.block_bytes(k.form, op, s) <= rb}
            assert want <= seen and len({w.split("-")[1] for w in want}) == 2, (k.name, op, want - seen)


def test_each_kernel_has_the_controls_its_forms_allow():
    for k, cs in KERNELS:
        got = {c.control for c in cs if c.control}
        paths = C.ldmatrix_paths(k.form)
        want = set()
        if paths["A"] or paths["B"]:
            want |= {"rows+16", "wrong-swizzle"}
        if any(p == C.LD_PATH["ldmatrix.trans"] for p in paths["A"]):
            want.add("trans-dropped")
        f = F.variants(k.form)[0]
        if f.sparse and len(F.selectors(f.shape, f.atype)) > 1:
            want.add("wrong-selector")
        assert got == want, k.name


@pytest.mark.parametrize("bad, says", [
    (dict(variant_index=99), "variants, not index 99"),
    (dict(control="wrong-desc"), "is not one of"),
    (dict(a=C.Load("ldmatrix", "cols", 64), key=F.KernelKey("m16n8k32", "i8", "s32", "s32", False)),
     "no ldmatrix loads A from cols"),
])
def test_a_case_the_harness_cannot_build_is_refused_in_one_sentence(bad, says):
    base = dict(key=F.KernelKey("m16n8k16", "f16", "f32", "f32", False), variant_index=0)
    with pytest.raises(ValueError, match=re.escape(says)):
        C.Case(**{**base, **bad})
    with pytest.raises(ValueError, match="no mma form"):
        F.KernelKey("m16n8k16", "tf32", "f32", "f32", False)


# ---------------------------------------------------------------------------------------------------- simulated GPU

def test_every_case_passes_and_every_control_is_caught_as_predicted_on_the_simulated_device():
    controls = 0
    for kernel, cases in KERNELS:
        recs = run_on_sim(kernel, cases)
        assert set(recs) == {c.id for c in cases}
        for c in cases:
            r = recs[c.id]
            assert r["status"] == "pass" and r["mismatches"] == 0 and r["unwritten_registers"] == 0, r
            if c.control:
                controls += 1
                assert r["caught"] and r["matches_model_prediction"], r
    assert controls == 74  # 6 of them the stmatrix kernels' wrong-swizzle stores


def test_the_sat_cases_saturate_and_wrap():
    kernel, cases = BY_NAME["mmasync_m16n8k32_i8_s32_dense"]
    from harness.families.mma_sync import reference as R
    hit = {False: 0, True: 0}
    for c in (c for c in cases if c.extra == "sat"):
        d = R.unpack(C.operand_maps(c.key)["D"], R.prepare(c).expected["D"]).astype(np.int64)
        d = np.where(d >= 1 << 31, d - (1 << 32), d)
        limits = np.isin(d, [-(1 << 31), (1 << 31) - 1]).sum()
        hit[c.form.satfinite] += int(limits)
        if not c.form.satfinite:  # wrapped: the sum left the s32 range, so some signs flipped
            assert limits == 0
    assert hit[True] > 0


@pytest.fixture
def faulty_device(monkeypatch):
    def use(fn):
        monkeypatch.setattr(mma_sync_device, "misread", fn)
    return use


def _swap_lanes(lane_a, lane_b, output="d_out"):
    def fn(name, out):
        o = out[output]
        o[:, [lane_a, lane_b]] = o[:, [lane_b, lane_a]]
        return out
    return fn


def test_a_device_that_swaps_two_lanes_d_registers_is_caught_and_named(faulty_device):
    kernel, cases = BY_NAME["mmasync_m16n8k16_f16_f32_dense"]
    plain = [c for c in cases if not c.control]
    faulty_device(_swap_lanes(5, 6))
    recs = run_on_sim(kernel, plain)
    for c in plain:
        r = recs[c.id]
        assert r["status"] == "fail" and r["bad_operands"] == "D" and r["bad_lanes"] == "5-6", r
        first = r["first_mismatches"][0]
        assert first["operand"] == "D" and first["lane"] in (5, 6) and {"register", "sub", "row", "col",
                                                                         "expected", "got"} <= set(first)
        # lane 5 (group 1, thread 1) holds D rows 1 and 9, columns 2 and 3: the element named is one of them
        assert first["row"] in (1, 9) and first["col"] in (2, 3, 4, 5)
    # the same swap on a control: its misread is not the predicted one
    ctrl = [c for c in cases if c.control]
    recs = run_on_sim(kernel, ctrl)
    assert all(recs[c.id]["status"] == "fail" and recs[c.id]["caught"] and not recs[c.id]["matches_model_prediction"]
               for c in ctrl)


def test_a_device_whose_ldmatrix_misloads_b_is_named_on_b_not_on_d_alone(faulty_device):
    kernel, cases = BY_NAME["mmasync_m16n8k32_f16_f16_sp"]
    faulty_device(_swap_lanes(0, 31, "b_out"))  # B as written back differs from B as loaded
    recs = run_on_sim(kernel, [c for c in cases if not c.control])
    assert all(r["status"] == "fail" and r["bad_operands"] == "B" and r["bad_lanes"] == "0,31"
               for r in recs.values())


def test_a_device_that_leaves_d_unwritten_is_caught(faulty_device):
    kernel, cases = BY_NAME["mmasync_m16n8k8_f64_f64_dense"]

    def unwritten(name, out):
        out["d_out"][:, :, 2:] = RB.POISON
        return out
    faulty_device(unwritten)
    recs = run_on_sim(kernel, cases)
    assert all(r["status"] == "fail" and r["unwritten_registers"] == 6 * 32 for r in recs.values())  # words 2-7 of 8


def test_a_launch_that_issues_the_wrong_variant_fails_the_cases_it_touches(monkeypatch):
    """A planted bug in the launch packing (every case issues variant 0, s8.s8 selector 0 without .satfinite): the
    cases of other types or another selector fail, and the wrong-selector controls, launched with their own selector,
    are recorded as not caught. (.sp and .sp::ordered_metadata, and .satfinite where nothing overflows, compute the
    same sums from ascending metadata: those cases pass either way.)"""
    kernel, cases = BY_NAME["mmasync_m16n8k32_i8_s32_sp"]
    real = K.pack

    def pack(preps):
        inp = real(preps)
        inp.params["variant"] = 0
        return inp
    monkeypatch.setattr(K, "pack", pack)
    recs = run_on_sim(kernel, cases)
    first = F.variants(kernel.form)[0]
    touched = [c for c in cases if c.control == "wrong-selector" or (not c.control and (
        c.form.atype, c.form.btype, c.form.selector) != (first.atype, first.btype, first.selector))]
    assert len(touched) > len(cases) // 2
    assert all(recs[c.id]["status"] == "fail" for c in touched)


# ---------------------------------------------------------------------------------------------------- NVRTC + SASS

SAMPLE_FORMS = [  # one per SASS kind: HMMA (f16, bf16, tf32, f8 twice), DMMA, IMMA, BMMA, the sparse ones, and each
    # emulation call (m8n8k4 .f16, sub-byte, sparse sub-byte with its selector, .xor.popc)
    F.MmaForm("m16n8k16", "f32", "bf16", "bf16", "f32"), F.MmaForm("m16n8k8", "f32", "tf32", "tf32", "f32"),
    F.MmaForm("m16n8k32", "f16", "e4m3", "e5m2", "f16"), F.MmaForm("m16n8k16", "f64", "f64", "f64", "f64"),
    F.MmaForm("m8n8k16", "s32", "u8", "s8", "s32", satfinite=True), F.MmaForm("m16n8k256", "s32", "b1", "b1", "s32",
                                                                           bitop="and.popc"),
    F.MmaForm("m16n8k128", "s32", "b1", "b1", "s32", bitop="xor.popc"),
    F.MmaForm("m8n8k4", "f32", "f16", "f16", "f16", alayout="col", blayout="row"),
    F.MmaForm("m16n8k64", "s32", "s4", "u4", "s32", satfinite=True),
    F.MmaForm("m16n8k64", "s32", "u4", "s4", "s32", "sp::ordered_metadata", selector=1),
    F.MmaForm("m16n8k32", "f32", "f16", "f16", "f32", "sp", selector=1),
    F.MmaForm("m16n8k64", "s32", "s8", "u8", "s32", "sp", True, selector=0),
    F.MmaForm("m16n8k64", "f32", "e5m2", "e4m3", "f32", "sp", selector=0),
]


def test_a_sample_of_forms_compiled_alone_shows_the_sass_the_table_says():
    """Each form alone in a kernel (source(key, only_variant)), all in one NVRTC program: its tensor-core opcodes
    and emulation calls are exactly kernel.sass_expected's."""
    tc = toolchain.default()
    jobs = []
    for n, f in enumerate(SAMPLE_FORMS):
        key = F.key_of(f)
        jobs.append((f"probe_{n}", K.source(key, F.variants(key).index(f), f"probe_{n}"), f))
    src = "".join(f"namespace p{n} {{\n{s}\n}}\n" for n, (_, s, _) in enumerate(jobs))
    cubin, log = tc.compile(src, "mma_sync_probe", "sm_90a", nvrtc.DEFAULT_OPTIONS + tc.fast_compile_options)
    assert cubin is not None, log
    listings = sass.function_listings(sass.disassembly(cubin))
    for name, _, f in jobs:
        ins = sass.instructions(listings[name])
        got = sorted([("op", i.opcode) for i in ins if re.fullmatch(K.TENSOR_OPCODE, i.opcode)]
                     + [("call", re.search(r"(__cuda_\w+)", i.operands).group(1)) for i in ins
                        if i.opcode.startswith("CALL")])
        assert got == sorted(K.sass_expected(f)), f.describe()


def test_the_sweep_compiles_and_sass_checks_every_kernel_and_runs_nothing_without_a_gpu(tmp_path):
    """Without an sm_90a GPU every case is recorded not run (exit 3); on an H100 the sm_90a cases run and pass
    (tests/test_mma_sync_gpu.py holds them to every case and control) and sm_120a's are recorded not run."""
    out = tmp_path / "r.jsonl"
    r = cli_in_process.run("sweep", "--family", "mma_sync", "--jobs", "2", "--out", out)
    ran = gpu.skip_reason("sm_90a") is None
    assert r.returncode == (ExitCode.OK if ran else ExitCode.NOTHING_RAN), r.stderr
    assert "55 kernels checked, 0 lack what they test" in r.stderr  # sm_90a's 37, sm_120a's and sm_121a's 9 each
    _, recs, summary = results.load(out)
    statuses = {(x["arch"], x["status"]) for x in recs.values()}
    assert len(recs) == 642 + 180 and statuses == {("sm_90a", "pass" if ran else "not-run"), ("sm_120a", "not-run")}
    assert {x["family"] for x in recs.values()} == {"mma_sync"}


def test_a_wrong_sass_rule_is_a_broken_kernel():
    """The check can fail: the listing of a kernel judged against another kernel's rules."""
    tc = toolchain.default()
    key = F.KernelKey("m16n8k16", "f16", "f32", "f32", False)
    cubin, log = tc.compile(K.source(key), key.name, "sm_90a", nvrtc.DEFAULT_OPTIONS + tc.fast_compile_options)
    listing = sass.instructions(sass.function_listings(sass.disassembly(cubin))[key.name])
    assert [b for b in (r.broken(listing) for r in K.sass_check(key).rules) if b] == []
    other = K.sass_check(F.KernelKey("m16n8k16", "f16", "f16", "f16", False))
    broken = [b for b in (r.broken(listing) for r in other.rules) if b]
    assert any("HMMA.16816.F16 " in b for b in broken)
