"""tcgen05 without a Blackwell GPU: every form compiles for sm_100a and sm_103a (and NVRTC's refusals are
the compiler's own words), the SASS holds the tensor-core instructions each form must issue, and every
case's reference is computed and consistent with the data-path model it will be diffed through."""
import dataclasses
import os
import re
from functools import lru_cache

import numpy as np
import pytest

from harness.run import compile as C, cores, sass
from tests.sass_gmma import function_text
from harness.families.tcgen05 import (cases as T, datapaths as DP, forms as tcgen05, kernel as tcgen05_launch,
                                      readback as RB, reference as R)
from harness.families.tcgen05.forms import Form
from harness.spec import desc_tcgen05, idesc

FORMS = tcgen05.all_forms()


# The compiling and the SASS tests are an xdist group of their own, apart from this module's CPU-only tests, and
# compile and SASS-check with at least this many processes, more than an xdist worker's share of the cores: on a
# cold cache they were the longest chain of the README's test command on an H100 node (62 s on one worker,
# 23 s of it compiling on one core; benchmarks/pytest_timeline.py). No more than the machine's cores: on the CI-sized
# machine (2 cores, TC_HARNESS_WORKERS=1 under -n 2) four processes made more modules, each a disassembler start and
# an NVRTC program, and took 21 CPU s and 12.1 s against 14 CPU s and 8.8 s with two (the CPU note
# 2026-11-28 ci-rehearsal.txt in docs/performance.md).
COMPILING_PROCESSES = min(4, os.cpu_count() or 1)
SASS_GROUP = pytest.mark.xdist_group("test_tcgen05-sass")


@pytest.fixture(scope="module")
def cubins():
    # the compiling processes judge each cubin's SASS (the tests read the cached verdicts; a cached cubin is
    # judged by the verify_many below)
    jobs = [C.CompileJob(f.name, tcgen05_launch.source(f), arch, sass_check=tcgen05_launch.sass_check(f, arch))
            for arch in tcgen05.ARCHS for f in FORMS]
    workers = max(cores.default_workers(), COMPILING_PROCESSES)
    # the forms the sweep compiles apart from those NVRTC is expected to refuse (i8 on sm_103a): a module NVRTC
    # rejects is compiled again kernel by kernel, and dealt among the others' modules the refused forms made 5 of
    # the 8 sm_103a modules so, 15 of the fixture's 28.7 s of compiling (the CPU note 2026-11-27 tcgen05-modules.txt in
    # docs/performance.md)
    legal = {(arch, f.name) for arch in tcgen05.ARCHS for f in T.forms_for(arch)}
    apart = [[j for j in jobs if ((j.arch, j.name) in legal) == kept] for kept in (True, False)]
    built = {(j.arch, j.name): c for part in apart
             for j, c in zip(part, C.compile_many(part, workers=workers, raise_on_error=False))}
    sass.verify_many([(c.cubin_path, j.sass_check) for j in jobs if (c := built[(j.arch, j.name)]).error is None],
                     workers=workers)
    return built


@SASS_GROUP
def test_every_form_compiles_for_both_blackwell_arches_but_i8_on_sm_103a(cubins):
    for (arch, name), comp in cubins.items():
        if arch == "sm_103a" and "_i8_" in name:
            assert comp.error is not None and "'.kind::i8' not supported on .target 'sm_103a'" in comp.error.log
        else:
            assert comp.error is None, comp.error
    assert [f.name for f in T.forms_for("sm_103a") if not (f.tmem_check or f.variant or f.k96_block)] == \
        [f.name for f in FORMS if f.kind != "i8"]


@SASS_GROUP
@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.name)
def test_sass_has_the_forms_tensor_core_instructions(form, cubins):
    for arch in tcgen05.ARCHS:
        if (arch, form.name) in cubins and cubins[(arch, form.name)].error is None:
            verdict = sass.verify(cubins[(arch, form.name)].cubin_path, tcgen05_launch.sass_check(form, arch))
            assert verdict.ok, verdict.broken
    # tcgen05.mma.sp has no SASS opcode of its own: the MMA's 64-bit instruction-descriptor pair carries the
    # metadata's TMEM address in its low register (tmem[URx], idesc[URx+1]); a dense MMA zeroes that register
    meta = metadata_register_source(function_text(sass.disassembly(cubins[("sm_100a", form.name)].cubin_path.read_bytes()), form.name))
    assert (meta != "URZ") == form.sparse, (form.name, meta)


@SASS_GROUP
def test_a_forms_check_rejects_the_sass_of_every_form_the_hardware_tells_apart(cubins):
    """The checks discriminate: a form's rules fail on the cubin of any form with another MMA mnemonic, CTA
    group, .ws, A source or scale-factor copy (forms equal in all of those, f16 and tf32, compile alike: their
    kind is in the runtime instruction descriptor; a sparse form differs from its dense one only in the metadata
    register, which test_sass_has_the_forms_tensor_core_instructions traces)."""
    def visible(f):
        return (tcgen05_launch.MNEMONIC[f.kind], f.cta_group, f.ws, f.a_src, f.block_scaled, f.kind == "mxf4nvf4")
    for f in FORMS:
        check = tcgen05_launch.sass_check(f, "sm_100a")
        for g in FORMS:
            v = sass.verify(cubins[("sm_100a", g.name)].cubin_path, dataclasses.replace(check, function=g.name))
            assert v.ok == (visible(f) == visible(g)), (f.name, g.name, v.broken)


def metadata_register_source(sass: str) -> str:
    """Where the MMA's metadata operand (the tmem[...] just before idesc[...]) comes from: 'URZ' when it is a copy
    of zero (UMOV URx, URZ; R2UR of a register set by IMAD.MOV.U32 r, RZ, RZ, RZ or MOV r, RZ), else the first
    instruction on the way that is not such a copy."""
    lines = [ln.split("*/", 1)[1].split(";")[0].strip() for ln in sass.splitlines()
             if re.match(r"\s*/\*[0-9a-f]{4}\*/", ln)]
    at = next(i for i, ln in enumerate(lines) if re.search(r"\bUTC[A-Z]MMA", ln))
    reg = re.search(r"tmem\[(UR\d+)\],\s*idesc\[(UR\d+)\]", lines[at])
    assert reg and int(reg[2][2:]) == int(reg[1][2:]) + 1, lines[at]
    want, i = reg[1], at
    while want not in ("RZ", "URZ"):
        i = next((k for k in range(i - 1, -1, -1)
                  if re.split(r"[\s,]+", re.sub(r"^@!?U?P\w+\s+", "", lines[k]))[1:2] == [want]), None)
        if i is None:
            return "unset"
        op = re.split(r"[\s,]+", re.sub(r"^@!?U?P\w+\s+", "", lines[i]))
        if op[0] in ("UMOV", "MOV", "R2UR"):
            want = op[2]
        elif op[0] == "IMAD.MOV.U32" and op[2:4] == ["RZ", "RZ"]:
            want = op[4]
        else:
            return lines[i]
    return "URZ"


def test_tcgen05_is_refused_for_hopper_with_the_compilers_message():
    cubin, log = C.nvrtc_compile(tcgen05_launch.source(Form("f16")), "t", "sm_90a", C.DEFAULT_OPTIONS)
    assert cubin is None and "tcgen05" in log and "not supported on .target 'sm_90a'" in log


CASES = [c for _, cs in T.all_cases() for c in cs]


def test_the_cases_cover_every_form_shape_and_type_pairing():
    forms = {c.form for c in CASES}
    assert forms == {f for f in FORMS if not f.sparse or T.sparse_swept(f)} | {Form("f16", tmem_check=True)} | \
        {f for f in tcgen05.variant_forms() if f.variant not in T.VARIANT_OPEN}
    assert {f.kind for f in forms if f.sparse} == set(idesc.KINDS)
    assert {(c.form.kind, c.k) for c in CASES if c.form.sparse} == {("tf32", 16), ("f16", 32), ("f8f6f4", 64),
                                                                      ("i8", 64), ("mxf8f6f4", 64), ("mxf4", 128),
                                                                      ("mxf4nvf4", 128)}
    assert any(c.sp_selector for c in CASES) and all(c.idesc().sparse == c.form.sparse for c in CASES)
    pairs = {(c.atype, c.btype) for c in CASES if c.form.kind == "f8f6f4"}
    assert len(pairs) == 25
    assert {c.m for c in CASES if c.form.cta_group == 2} == {128, 256}
    assert {c.m for c in CASES if c.form.ws} == {32, 64, 128}
    assert any(c.zero_mask for c in CASES) and any(c.scale_d for c in CASES)
    mn = {(c.form.kind, c.swizzle_b) for c in CASES if c.major_b == "MN"}
    assert ("tf32", "128B_base32b") in mn and {sw for k, sw in mn if k == "f16"} == {"none", "32B", "64B", "128B"}
    assert all(c.idesc().transpose_b for c in CASES if c.major_b == "MN")


def _row_col_of_cell(m: int, n: int, cta_group: int, ws: bool, cta: int, lane: int, col: int):
    """The D element a correct device writes to TMEM (cta, lane, column), or None: the data-path layouts of PTX ISA
    9.7.16.x (A-G) read the other way round, lane first, and written from the spec's pictures, not from
    harness/families/tcgen05/datapaths.py (CuTe checks that one: tests/test_cute_oracle.py)."""
    if cta_group == 2 and m == 256:  # layout A: each CTA holds 128 rows, lane = row
        return (128 * cta + lane, col) if col < n else None
    if cta_group == 2:  # layout B: each CTA 64 rows; lanes 64-127 hold the right half of the columns
        half = n // 2
        return (64 * cta + lane % 64, col + half * (lane // 64)) if col < half else None
    if ws and m == 64:  # layout E: lanes 64-127 hold the right half of the columns
        half = n // 2
        return (lane % 64, col + half * (lane // 64)) if col < half else None
    if ws and m == 32:  # layout G: each 32-lane quarter holds one quarter of the columns
        q = n // 4
        return (lane % 32, col + q * (lane // 32)) if col < q else None
    if m == 64:  # layout F: lanes 0-15 of each warp's 32-lane quarter
        return (16 * (lane // 32) + lane % 32, col) if lane % 32 < 16 and col < n else None
    return (lane, col) if col < n else None  # layout D


@lru_cache(maxsize=None)  # 26 shapes among the cases checked: each cell asked once a shape, not once a case
def _placement(m: int, n: int, cta_group: int, ws: bool, read_cols: int) -> tuple[np.ndarray, ...]:
    """(cta, lane, column, row, col) index arrays: every cell the data-path layouts (above) give an element of D."""
    cells = [(cta, lane, c, *rc) for cta in range(cta_group) for lane in range(128) for c in range(read_cols)
             if (rc := _row_col_of_cell(m, n, cta_group, ws, cta, lane, c)) is not None and rc[0] < m]
    return tuple(np.array(x, dtype=np.int64) for x in zip(*cells))


def device_tmem(case, prep, values, keep=None):
    """Tensor Memory as a correct device leaves it: what the kernel stored before the MMA (prep.tmem_in: C, or the
    poison), then `values` [m, n] placed by the data-path layouts (above), each in the low bits of its 32-bit cell
    (an f16 accumulator takes a whole column), by numpy's own encodings; elements of `keep` [m, n] (a prediction's
    keeps_poison: the MMA does not write them) keep what was stored."""
    out = np.array(prep.tmem_in, np.uint32)
    v = np.asarray(values)
    raw = {"f16": lambda: v.astype(np.float16).view(np.uint16).astype(np.uint32),
           "f32": lambda: v.astype(np.float32).view(np.uint32),
           "s32": lambda: (v.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)}[case.dtype]()
    cta, lane, col, row, c = _placement(case.m, case.n, case.form.cta_group, case.form.ws, prep.read_cols)
    assert len(row) == case.m * case.n, "the data-path layouts must place every element once"
    keep = keep[row, c] if keep is not None else np.zeros(len(row), bool)
    out[cta[~keep], lane[~keep], col[~keep]] = raw[row[~keep], c[~keep]]
    return out


@pytest.mark.parametrize("case", CASES[::7], ids=lambda c: c.id)
def test_reference_is_consistent_with_the_data_path(case):
    if case.control:
        pytest.skip("negative controls: test_negative_controls_are_caught_only_as_predicted")
    prep = R.prepare(case)
    cta, lane, col, half = DP.d_position(case.m, case.n, case.form.cta_group, case.form.ws, case.dtype)
    assert lane.max() < 128 and cta.max() < case.form.cta_group
    assert col.max() < 512 and half.max() < 2  # Tensor Memory's 512 columns; a column's two 16-bit halves
    # one integer per (CTA, lane, column, half), numpy refusing any out of those bounds: a 1-D unique, not
    # np.unique(axis=1)'s row sort (4.5 of this test's 7 CPU s over its cases in CI)
    cells = np.ravel_multi_index((cta, lane, col, half), (case.form.cta_group, 128, 512, 2))
    assert np.unique(cells).size == case.m * case.n  # no two elements share a cell
    # a device that wrote the expected D where the data path says decodes back to it exactly
    out = device_tmem(case, prep, prep.expected, prep.keeps_poison)
    assert RB.diff(prep, out, [0] * case.form.cta_group)["status"] == "pass"
    # the first element compared (a shift form's undefined row is not: prep.unchecked)
    r0, c0 = np.argwhere(~prep.unchecked)[0] if prep.unchecked is not None else (0, 0)
    out[cta[r0, c0], lane[r0, c0], col[r0, c0]] ^= np.uint32(1 << 10)  # inside every accumulator type's bits
    rec = RB.diff(prep, out, [0] * case.form.cta_group)
    assert rec["status"] == "fail" and rec["first_mismatches"][0]["lane"] == int(lane[r0, c0])
    assert RB.diff(prep, out, [1] * case.form.cta_group)["status"] == "timeout"


def test_every_launch_fits_shared_memory_and_tensor_memory():
    for form, cs in T.all_cases():
        if not cs:  # a sparse form compiled and SASS-checked only (cases.sparse_swept)
            continue
        packed = tcgen05_launch.pack([R.prepare(c) for c in cs])
        assert packed.smem <= 227 * 1024
        assert packed.params["alloc_cols"].max() <= 512
        assert packed.params.size == len(cs) * form.cta_group


CONTROLS = [c for _, cs in T.all_cases() for c in cs if c.control]


def test_every_control_kind_is_planned_for_every_eligible_form():
    by_form = {}
    for c in CONTROLS:
        if c.form.kind == "mxf4nvf4":  # the M = 64 collision only (below)
            continue
        if c.form.tmem_check:  # the column beyond the allocation, alone (below)
            continue
        by_form.setdefault(c.form.name, set()).add(c.control.split("@")[0])
    eligible = [f.name for f in tcgen05.all_forms() if f.kind in ("f16", "tf32") and f.cta_group == 1 and not f.sparse]
    assert sorted(by_form) == sorted(eligible)
    for name, kinds in by_form.items():
        assert set(T.CONTROLS) <= kinds <= set(T.CONTROLS) | set(T.BUG_CONTROLS), name
    bugs = {c.control: c.form.name for c in CONTROLS if c.control in T.BUG_CONTROLS}
    assert bugs == {"n-above-256": "tcgen05_f16_cg1_SS", "tmem-beyond-alloc": "tcgen05_f16_cg1_tmemcheck_SS",
                    "m64-collision": "tcgen05_mxf4nvf4_cg1_SS"}
    alone = [c for _, cs in T.all_cases() for c in cs if c.form.tmem_check]
    assert [c.control for c in alone] == ["tmem-beyond-alloc"]  # its launch holds nothing else
    assert any(c.control.endswith("@A") for c in CONTROLS) and any(c.control.endswith("@B") for c in CONTROLS)


@pytest.mark.parametrize("case", CONTROLS, ids=lambda c: c.id)
def test_negative_controls_are_caught_only_as_predicted(case):
    prep = R.prepare(case)
    name, _, target = case.control.partition("@")
    positive = R.prepare(dataclasses.replace(case, control=""))
    # the control changes exactly the descriptor it names
    changed = {k for k in prep.params[0] if prep.params[0][k] != positive.params[0][k]}
    if name == "tmem-beyond-alloc":  # nothing in the descriptors: fewer columns allocated than D and read-back use
        assert not changed and prep.alloc_cols == 128 < prep.read_cols
        assert tcgen05_launch.pack([prep]).params["alloc_cols"][0] == 128
    else:
        assert changed == ({f"desc_{target.lower()}"} if target else {"idesc"}), changed
    ok = [0] * case.form.cta_group
    intended = RB.diff(prep, device_tmem(case, prep, prep.intended), ok)
    if name not in T.OBSERVATIONS:  # a device that ignored the change is caught
        assert intended["status"] == "fail" and not intended["caught"]
    if prep.prediction == "exact":
        assert RB.diff(prep, device_tmem(case, prep, prep.expected, prep.keeps_poison), ok)["status"] == "pass"
        other = prep.expected.copy()
        other[0, 0] += 1  # a misread other than the predicted one is not a pass
        rec = RB.diff(prep, device_tmem(case, prep, other, prep.keeps_poison), ok)
        assert rec["status"] == "fail" and rec["caught"] and rec["matches_model_prediction"] is False
    elif name in T.OBSERVATIONS:  # recorded, never a pass or a fail, whatever the device does
        assert prep.prediction == "observation"
        for values, says in ((prep.intended, "the intended product"), (prep.intended + 1, "not the intended")):
            rec = RB.diff(prep, device_tmem(case, prep, values), ok)
            assert rec["status"] == "observed" and rec["observation"].startswith(says) and "caught" not in rec
        assert RB.diff(prep, device_tmem(case, prep, prep.intended), [1] * case.form.cta_group)["status"] == "observed"
        faulted = RB.settle_failed_launch(case, {"id": case.id, "status": "fault", "error": "illegal address"})
        assert faulted["status"] == "observed" and "faulted" in faulted["observation"]
        shared = RB.settle_failed_launch(case, {"id": case.id, "status": "fault", "isolated": False, "error": "..."})
        assert shared["status"] == "fault"
    else:
        assert name in T.BUG_CONTROLS and prep.prediction == "undefined"
        rec = RB.diff(prep, device_tmem(case, prep, prep.intended + 1), ok)
        assert rec["status"] == "pass" and rec["matches_model_prediction"] is None
        assert rec["models_bug"] == T.MODELS_BUG[name]
        hung = RB.diff(prep, device_tmem(case, prep, prep.intended), [1] * case.form.cta_group)
        assert hung["status"] == "pass" and hung["caught_by"] == "hang"  # the bounded wait catches a hang
        faulted = RB.settle_failed_launch(case, {"id": case.id, "status": "fault", "error": "illegal instruction"})
        assert faulted["status"] == "pass" and faulted["caught_by"] == "fault" and faulted["models_bug"]
        # a launch of several cases that faulted as a whole, never bisected down to this one: not its catch
        shared = RB.settle_failed_launch(case, {"id": case.id, "status": "fault", "isolated": False, "error": "..."})
        assert shared["status"] == "fault" and "caught_by" not in shared


@pytest.mark.parametrize("case", [c for c in CONTROLS if c.control.partition("@")[0] in T.MODELS_BUG],
                         ids=lambda c: c.id)
def test_each_public_bug_encoding_is_named_by_the_descriptor_tools(case):
    """An encoding the ISA forbids: `desc` / `idesc --decode` name the broken rule (exit 1 on the command line);
    the column beyond the allocation breaks no descriptor rule, so its record names the bug instead."""
    prep = R.prepare(case)
    name, _, target = case.control.partition("@")
    p = tcgen05_launch.pack([prep]).params[0]
    if name == "version-cleared":
        probs = desc_tcgen05.decode_tcgen05_smem_desc(int(p[f"desc_{target.lower()}"]))["problems"]
        assert any("bits 46-48 are 0b000" in x for x in probs), probs
    elif name in ("n-above-256", "m64-collision"):
        probs = idesc.decode_idesc(int(p["idesc"]), case.form.kind, 1)["problems"]
        want = {"n-above-256": ("reserved bits set: 0x00800000", "N = 0 is not legal"),
                "m64-collision": ("reserved bits set: 0x04000000", "M = 0 is not legal")}[name]
        assert all(any(w in x for x in probs) for w in want), probs
    else:
        assert p["read_cols"] > p["alloc_cols"]


def test_a_commit_whose_cta_group_differs_from_the_mma_is_refused_by_nvrtc():
    """tile-ai/tilelang#2287: an MMA issued with .cta_group::1 in a kernel whose alloc and commit use
    .cta_group::2 (the bug: CUDA_ERROR_ILLEGAL_INSTRUCTION at run time). The ISA: 'All tcgen05 instructions within a
    kernel must specify the same value for the .cta_group qualifier'. NVRTC 13 refuses such a kernel, naming the
    rule, so the control is caught when it is built (never launched: it is checked here, not swept)."""
    src = tcgen05_launch.source(Form("f16", 2))
    bad = src.replace("tcgen05.mma.cta_group::2.kind::f16", "tcgen05.mma.cta_group::1.kind::f16")
    assert bad != src and "tcgen05.commit.cta_group::2" in bad
    for arch in tcgen05.ARCHS:
        cubin, log = C.nvrtc_compile(bad, "tcgen05_f16_cg2_mixed_SS", arch, C.DEFAULT_OPTIONS)
        assert cubin is None and "uses single CTA(.cta_group::1) and CTA pair granularity(.cta_group::2)" in log
