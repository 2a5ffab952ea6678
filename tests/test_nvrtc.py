"""NVRTC on the CPU: cubins for sm_90a, sm_100a and sm_103a, the cache, and the SASS of every wgmma form, dense and
sparse (each form at a few N here; the sweep checks every kernel it compiles)."""
import dataclasses
import os
import re

import pytest

from harness.run import compile as C, sass, toolchain
from harness import contract, kernels, registry
from harness.families.wgmma import kernel as wgmma_kernel
from harness.families.wgmma import forms as wgmma
from harness.families.wgmma_sp import forms as sparse_forms, kernel as sparse_kernel
from tests.sass_gmma import function_text


RUN_CACHE = os.environ.get("TC_HARNESS_CACHE")  # the run's compile cache, before any test's own


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Each test compiles into an empty cache of its own: what it says of NVRTC, the cache or a rejected kernel is
    about a compile it made, unless it asks for run_cache."""
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def run_cache(monkeypatch):
    """The run's compile cache instead (the harness's own, as a sweep compiles into it): for a test that judges the
    SASS of a kernel, which is the same from a cubin kept for its source, options and NVRTC build as from a fresh
    compile. On a warm cache (CI's machine) its kernels are not compiled and disassembled again on every run: in CI
    the tests that use it spent ~11 of the module's 15 CPU s compiling into their empty caches."""
    if RUN_CACHE is None:
        monkeypatch.delenv("TC_HARNESS_CACHE")
    else:
        monkeypatch.setenv("TC_HARNESS_CACHE", RUN_CACHE)


@pytest.mark.parametrize("arch", C.ARCHS)
def test_smoke_kernel_compiles_to_a_cubin_for_each_arch(arch):
    out = C.compile_one(C.CompileJob("smoke", kernels.smoke_source(), arch))
    data = out.cubin_path.read_bytes()
    assert data[:4] == b"\x7fELF"
    assert sass.listing_arch(sass.disassembly(out.cubin_path.read_bytes())) == arch


def test_cache_hit_and_key():
    job = C.CompileJob("smoke", kernels.smoke_source(), "sm_90a")
    first, second = C.compile_one(job), C.compile_one(job)
    assert not first.cached and second.cached and first.cubin_path == second.cubin_path
    other = C.CompileJob("smoke", kernels.smoke_source(), "sm_90a", C.DEFAULT_OPTIONS + ("-G",))
    tc = toolchain.default()
    assert other.key(tc) != job.key(tc)


def as_version(tc: toolchain.Toolchain, version: str) -> toolchain.Toolchain:
    """`tc` as if its NVRTC were of `version` (to see which options that version gets, not to compile)."""
    return dataclasses.replace(tc, library=dataclasses.replace(tc.library, version=version))


FAST = ("--Ofast-compile=min",)


def test_a_job_compiles_at_the_fast_compile_level_where_nvrtc_has_it_unless_it_asks_for_full_optimization():
    tc = toolchain.default()
    job = C.CompileJob("smoke", kernels.smoke_source(), "sm_90a")
    assert job.options_for(as_version(tc, "12.8")) == C.DEFAULT_OPTIONS  # 12.8 knows only max and 0
    for version in ("12.9", "13.0", "13.5"):
        assert job.options_for(as_version(tc, version)) == C.DEFAULT_OPTIONS + FAST
    full = dataclasses.replace(job, fast_compile=False)
    assert full.options_for(tc) == C.DEFAULT_OPTIONS
    assert full.key(tc) != job.key(tc)  # a cubin of one level is never taken from the cache for the other


def test_each_family_compiles_at_the_level_it_declares_and_the_timing_bench_at_full_optimization(monkeypatch):
    tc = toolchain.default()
    level = {}
    for name in registry.registry():
        kernel = next(iter(registry.get(name).kernel_list(registry.get(name).archs[0])))
        level[name] = C.compile_job(kernel).options_for(tc)[len(C.DEFAULT_OPTIONS):]
    # the sequences' RS pipeline is a schedule ptxas makes: at full optimization
    assert level == {"wgmma": FAST, "wgmma_sp": FAST, "wgmma_seq": (), "tcgen05": FAST, "mma_sync": FAST}
    from harness.timing import bench, forms as timing_forms
    asked = []
    monkeypatch.setattr(C, "compile_many", lambda jobs, **kw: asked.extend(jobs) or [])
    bench.compile_modules(timing_forms.all_default())
    assert asked and all(j.options_for(tc) == C.DEFAULT_OPTIONS for j in asked)


def test_the_fast_compile_level_reaches_nvrtc():
    """A kernel's cached cubin is NVRTC's at the fast-compile level, byte for byte, not the one at full optimization
    (they differ for this kernel)."""
    tc = toolchain.default()
    key = wgmma.KernelKey("f16", 64, "f32", "SS")
    src = wgmma_kernel.source(key)
    (built,) = C.compile_many([C.CompileJob(key.name, src, "sm_90a")], workers=1)
    fast, _ = tc.compile(src, key.name, "sm_90a", C.DEFAULT_OPTIONS + FAST)
    full, _ = tc.compile(src, key.name, "sm_90a", C.DEFAULT_OPTIONS)
    assert fast != full and built.cubin_path.read_bytes() == fast


# a group of its own under pytest -n: a compile of the costliest sequence kernel (it compiled it twice then, 7.4 s of the
# module's 16 on an H100 node, where the module's group ended the README run: bench25 in docs/performance.md;
# on an empty cache it still takes ~3 s), beside the module's
@pytest.mark.xdist_group("test_nvrtc-rspipe")
def test_a_serialised_rs_pipeline_fails_the_sequence_familys_sass_check(run_cache):
    """The fast-compile level makes every wait_group 1 of an RS pipeline a wait_group 0 (why the sequences compile at
    full optimization): the family's own check, the one every sweep applies, says so. At full optimization it holds:
    test_wgmma_seq.py's test_every_sequence_kernel_compiles_with_its_sass applies it to every sequence kernel as the
    sweep compiles them (compiling the kernel here again at full optimization took ~3.4 s of NVRTC)."""
    from harness.families.wgmma_seq import FAMILY as SEQ, forms as seq_forms
    kernel = next(k for k in SEQ.kernel_list("sm_90a") if k.form.pattern == seq_forms.SeqPattern.RS_PIPELINE)
    job = C.compile_job(kernel, SEQ.sass_check(kernel))
    assert not job.fast_compile  # the sweep's job: full optimization
    # compiled without the check, so the cubin is kept (one a check rejects is not), then judged by the check
    (fast,) = C.compile_many([dataclasses.replace(job, fast_compile=True, sass_check=None)], workers=1)
    verdict = sass.verify(fast.cubin_path, job.sass_check)
    want = len(seq_forms.variants(kernel.form)) * (kernel.form.steps - 1)
    opcode, operands = r"WARPGROUP\.DEPBAR\.LE", r"\bgsb0, 0x1$"
    assert tuple(verdict.broken) == (f"wait_group 1 between the {kernel.form.steps} steps of each variant (the "
                                     f"pipeline kept): want exactly {want} instruction matching {opcode!r} with "
                                     f"operands ~ {operands!r}, found 0",), verdict.broken


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_wgmma_is_refused_for_blackwell_with_the_compilers_message(arch):
    key = wgmma.KernelKey("f16", 8, "f32", "SS")
    with pytest.raises(C.CompileError) as e:
        C.compile_one(C.CompileJob(key.name, wgmma_kernel.source(key), arch))
    assert f"not supported on .target '{arch}'" in e.value.log
    assert e.value.source_path.exists() and (e.value.source_path.parent / "nvrtc.log").exists()


# the opcode of each kind of variant, written out by hand from sm_90a listings (not from sass_opcode, which it checks)
HAND_WRITTEN = {
    wgmma.KernelKey("f16", 64, "f32", "SS"): {"HGMMA.64x64x16.F32", "HGMMA.64x64x16.F32.BF16"},
    wgmma.KernelKey("f16", 8, "f16", "RS"): {"HGMMA.64x8x16.F16"},
    wgmma.KernelKey("tf32", 24, "f32", "SS"): {"HGMMA.64x24x8.F32.TF32"},
    wgmma.KernelKey("f8", 256, "f16", "RS"): {f"QGMMA.64x256x32.F16.{a}.{b}" for a in ("E4M3", "E5M2")
                                              for b in ("E4M3", "E5M2")},
    wgmma.KernelKey("s8", 8, "s32", "SS"): {f"IGMMA.64x8x32.{a}.{b}{s}" for a in ("S8", "U8") for b in ("S8", "U8")
                                            for s in ("", ".SAT")},
    wgmma.KernelKey("b1", 64, "s32", "SS"): {"BGMMA.64x64x256.AND.POPC"},
}


@pytest.mark.parametrize("key", HAND_WRITTEN, ids=lambda k: k.name)
def test_each_variants_sass_opcode_is_the_one_written_by_hand(key):
    assert {wgmma_kernel.sass_opcode(key, v) for v in wgmma.variants(key)} == HAND_WRITTEN[key]


# Every form at two N (the sweep itself checks every kernel it compiles: on a GPU node that is all of them)
SMALL_KEYS = [k for k in wgmma.all_kernel_keys(n_values=(8, 64))]


@pytest.fixture(scope="module")
def small_cubins():
    """The kernels compiled into the run's cache (see run_cache): a module-scoped fixture is set up before the
    autouse private cache of the test that first asks for it."""
    outs = C.compile_many([C.CompileJob(k.name, wgmma_kernel.source(k), "sm_90a") for k in SMALL_KEYS])
    return dict(zip(SMALL_KEYS, outs))


@pytest.mark.parametrize("key", SMALL_KEYS, ids=lambda k: k.name)
def test_wgmma_kernel_sass_has_every_variants_instruction(key, small_cubins):
    verdict = sass.verify(small_cubins[key].cubin_path, wgmma_kernel.sass_check(key))
    assert verdict.ok, verdict.broken


def test_a_kernels_check_rejects_its_siblings_sass(small_cubins):
    """The checks discriminate: each kernel's rules fail on the cubin of a kernel differing only in N, in where A
    comes from, or in the accumulator type."""
    by_name = {k.name: k for k in small_cubins}
    for key in SMALL_KEYS:
        for other in (wgmma.KernelKey(key.kind, 72 - key.n, key.dtype, key.a_src),
                      wgmma.KernelKey(key.kind, key.n, key.dtype, "RS" if key.a_src == "SS" else "SS"),
                      wgmma.KernelKey(key.kind, key.n, {"f16": "f32", "f32": "f16"}.get(key.dtype, ""), key.a_src)):
            if other.name in by_name:
                check = dataclasses.replace(wgmma_kernel.sass_check(key), function=other.name)  # its rules there
                v = sass.verify(small_cubins[by_name[other.name]].cubin_path, check)
                assert not v.ok, f"{key.name}'s check passes {other.name}'s SASS"


def test_a_rejected_kernel_keeps_its_source_and_log_next_to_the_results(tmp_path, monkeypatch):
    from harness import plan, sweep
    work = plan.make(plan.Selection(kinds=("b1",), n_values=(8,), data_modes=("exact",))).work
    broken = work[0][0].form
    real = wgmma_kernel.source
    monkeypatch.setattr(wgmma_kernel, "source",
                        lambda k: real(k).replace("wgmma.fence.sync.aligned", "wgmma.bogus") if k == broken else real(k))
    summary = sweep.execute(plan.Plan(work), sweep.SweepConfig(out_path=tmp_path / "run.jsonl", workers=1),
                            log=lambda m: None)
    (err,) = summary["compile_errors"]
    assert err["kernel"] == broken.name and err["cases"] == len(work[0][1])
    assert summary["compile-error"] == len(work[0][1])
    saved = tmp_path / "run-compile-errors" / f"{broken.name}-sm_90a"
    assert (saved / f"{broken.name}.cu").read_text().count("wgmma.bogus") >= 1
    assert "error" in (saved / "nvrtc.log").read_text().lower()


# ---------------------------------------------------------------------------------------------------- sparse wgmma

def expected_sparse_sass(key) -> set[tuple[str, str, str]]:
    """(opcode, A operand, selector) each variant of a wgmma.mma_async.sp kernel must produce: HGMMA.SP (f16, bf16,
    tf32), QGMMA.SP (fp8), IGMMA.SP (s8/u8); A a descriptor (gdesc) or a register (R); the selector as HGMMA.SP's
    last immediate (QGMMA.SP and IGMMA.SP print none: theirs is always 0)."""
    n, out = key.n, set()
    a = "gdesc" if key.a_src == "SS" else "R"
    for v in sparse_forms.variants(key):
        if key.kind in ("f16", "tf32"):
            t = {"f16": "", "bf16": ".BF16", "tf32": ".TF32"}[v.atype]
            out.add((f"HGMMA.SP.64x{n}x{key.k}.{key.dtype.upper()}{t}", a, f"0x{v.selector}"))
        elif key.kind == "f8":
            out.add((f"QGMMA.SP.64x{n}x64.{key.dtype.upper()}.{v.atype.upper()}.{v.btype.upper()}", a, ""))
        else:
            out.add((f"IGMMA.SP.64x{n}x64.{v.atype.upper()}.{v.btype.upper()}" + (".SAT" if v.satfinite else ""),
                     a, ""))
    return out


SPARSE_OP = re.compile(r"\b([HQI]GMMA\.SP\.[0-9]+x[0-9]+x[0-9]+[.A-Z0-9]*) R\d+, (gdesc|R)[^;]*?, R\d+"
                       r"(?:, (0x[0-9a-f]+))?\s*(?:, gsb0)?\s*;")


def sass_sparse_ops(sass: str) -> set[tuple[str, str, str]]:
    return {(op, a, sel or "") for op, a, sel in SPARSE_OP.findall(sass)}


def _check_sparse(keys):
    """One batched (parallel, cached) compile of the kernels, then each one's SASS."""
    jobs = [C.CompileJob(k.name, sparse_kernel.source(k), "sm_90a") for k in keys]
    for key, out in zip(keys, C.compile_many(jobs)):
        ops, want = sass_sparse_ops(function_text(sass.disassembly(out.cubin_path.read_bytes()), key.name)), expected_sparse_sass(key)
        assert ops == want, f"{key.name}: SASS lacks {sorted(want - ops)}, has extra {sorted(ops - want)}"
        verdict = sass.verify(out.cubin_path, sparse_kernel.sass_check(key))  # the check every sweep applies
        assert verdict.ok, verdict.broken


def test_sparse_kernels_of_every_form_compile_with_their_sass(run_cache):
    """Every kind, accumulator and A source at N = 8 (12 kernels, every variant, both selectors)."""
    _check_sparse(sparse_forms.all_kernel_keys(n_values=(8,)))


def test_a_sparse_kernels_check_rejects_the_other_selectors_sass(run_cache):
    """HGMMA.SP prints its selector: a check wanting selector 1 of a kernel compiled with selector 0 only fails."""
    key = sparse_forms.all_kernel_keys(n_values=(8,))[0]
    out = C.compile_one(C.CompileJob(key.name, sparse_kernel.source(key), "sm_90a"))
    check = sparse_kernel.sass_check(key)
    flipped = dataclasses.replace(check, rules=tuple(
        contract.SassRule(r.opcode, r.what, r.count, r.operands.replace("0x0", "0x9").replace("0x1", "0x0"))
        if r.operands else r for r in check.rules))
    assert sass.verify(out.cubin_path, check).ok and not sass.verify(out.cubin_path, flipped).ok


def test_the_naive_baselines_one_variant_kernel_issues_only_that_variant(run_cache):
    """benchmarks/bench_naive.py compiles one kernel per case holding only its variant: its SASS has that variant's
    opcode once and no other tensor-core instruction."""
    key = next(k for k in wgmma.all_kernel_keys() if k.kind == "f16" and k.n == 64 and k.a_src == "SS"
               and k.dtype == "f32")
    idx = 5
    v = wgmma.variants(key)[idx]
    (out,) = C.compile_many([C.CompileJob(f"{key.name}", wgmma_kernel.source(key, idx), "sm_90a")], workers=1)
    instrs = sass.functions(out.cubin_path)[key.name]
    assert [i.opcode for i in instrs if "GMMA" in i.opcode] == [wgmma_kernel.sass_opcode(key, v)]


@pytest.mark.parametrize("family", ["wgmma", "wgmma_sp"])
def test_a_commit_no_variant_carries_gets_ptxas_own_gmma_and_the_check_rejects_it(family, run_cache):
    """The dispatch commits in each variant's block. One commit where the blocks meet instead (where the path of an
    unknown variant, no GMMA on it, comes too) makes ptxas add a GMMA of its own (HGMMA.64x8x16.F16 RZ,
    gdesc[URZ]) that every case would run: the kernel's check wants its variants' tensor-core instructions and no
    other, so it fails that kernel and passes the real one."""
    if family == "wgmma":
        key = next(k for k in wgmma.all_kernel_keys() if k.kind == "tf32" and k.n == 16 and k.a_src == "SS")
        kernel, variants = wgmma_kernel, wgmma.variants(key)
    else:
        key = next(k for k in sparse_forms.all_kernel_keys(n_values=(16,)) if k.dense.a_src == "SS")
        kernel, variants = sparse_kernel, sparse_forms.variants(key)
    real = kernel.source(key)
    commit = '"wgmma.commit_group.sync.aligned;\\n"'
    assert real.count(commit) == len(variants)
    one_commit = re.sub(r"\n *" + re.escape(commit), "", real).replace(
        '"TC_DONE:\\n"', '"TC_DONE:\\n"\n        ' + commit)
    assert one_commit.count(commit) == 1
    outs = C.compile_many([C.CompileJob(key.name, real, "sm_90a"), C.CompileJob(key.name, one_commit, "sm_90a")],
                          workers=1)
    check = kernel.sass_check(key)
    assert sass.verify(outs[0].cubin_path, check).ok
    verdict = sass.verify(outs[1].cubin_path, check)
    assert not verdict.ok and "and no other" in str(verdict)
    assert "RZ, gdesc[URZ]" in sass.disassembly(outs[1].cubin_path.read_bytes())  # the listing the check read


def test_the_template_takes_no_odd_accumulator_count():
    """The sweep statement moves C and D as vectors of 4 or 2 words: a key with an odd register count is refused by name
    before any source is made (every real form has an even count: N / 4 or N / 2, N a multiple of 8)."""
    assert all(k.acc_regs % 2 == 0 for k in wgmma.all_kernel_keys())
    odd = dataclasses.make_dataclass("OddKey", [("dtype", str), ("acc_regs", int)])("f32", 3)
    with pytest.raises(ValueError, match="3 accumulator registers"):
        wgmma_kernel.fill_template("odd_kernel", odd, "", "")


@pytest.mark.parametrize("key", [wgmma.KernelKey("f16", 24, "f16", "SS"), wgmma.KernelKey("tf32", 24, "f32", "RS"),
                                 wgmma.KernelKey("s8", 256, "s32", "SS"), wgmma.KernelKey("f16", 8, "f32", "SS")],
                         ids=lambda k: k.name)
def test_the_sweep_statement_loads_c_and_stores_d_every_accumulator_once_at_its_own_word(key):
    """The sweep kernel's statement moves C in and D out itself (AsmOperands.accumulator_moves): %0 holds this thread's
    C and %1 its D (the template's c_at, d_at); register i is loaded from word i of C, before any variant's block, and
    stored to word i of D, after the wait, each once, as vectors of 4 (2 where the count is not a multiple of 4), in
    registers of the accumulator's type; every variant's instruction names all of them in order. C and D swapped, an
    offset or a register wrong would put values in other words than the reference expects: here it fails before any GPU
    sees it."""
    src = wgmma_kernel.source(key)
    lines = re.findall(r'^ *"(.*)\\n"$', src, re.M)  # the PTX lines of the kernel's asm statements
    n, width = key.acc_regs, (4 if key.acc_regs % 4 == 0 else 2)
    reg, rtype = wgmma_kernel.ACC_REGISTER, (".f32" if key.dtype == "f32" else ".b32")
    assert f".reg {rtype} {reg}<{n}>;" in lines
    assert "cvta.to.global.u64 tc_c_at, %0;" in lines and "cvta.to.global.u64 tc_d_at, %1;" in lines
    assert re.search(r':\s*\n\s*: "l"\(c_at\), "l"\(d_at\), ', src)  # no outputs; %0 = c_at, %1 = d_at
    loads = [(i, m) for i, ln in enumerate(lines)
             if (m := re.fullmatch(rf"ld\.global\.v{width}\{rtype} \{{([^}}]*)\}}, \[tc_c_at\+(\d+)\];", ln))]
    stores = [(i, m) for i, ln in enumerate(lines)
              if (m := re.fullmatch(rf"st\.global\.v{width}\{rtype} \[tc_d_at\+(\d+)\], \{{([^}}]*)\}};", ln))]
    assert sum(1 for ln in lines if ln.startswith(("ld.", "st."))) == len(loads) + len(stores)  # no other move
    expected = sorted((f"{reg}{i}", 4 * i) for i in range(n))
    assert sorted((r, int(m.group(2)) + 4 * j) for _, m in loads for j, r in enumerate(m.group(1).split(", "))) == expected
    assert sorted((r, int(m.group(1)) + 4 * j) for _, m in stores for j, r in enumerate(m.group(2).split(", "))) == expected
    first_fence = lines.index("wgmma.fence.sync.aligned;")
    wait = lines.index("wgmma.wait_group.sync.aligned 0;")
    assert max(i for i, _ in loads) < first_fence and min(i for i, _ in stores) > wait
    d_ops = "{" + ", ".join(f"{reg}{i}" for i in range(n)) + "}"
    issued = [ln for ln in lines if ln.startswith("wgmma.mma_async")]
    assert len(issued) == len(wgmma.variants(key)) and all(f" {d_ops}, " in ln for ln in issued)
