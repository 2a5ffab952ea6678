"""Other NVRTC libraries, loaded with ctypes (README, "Toolchain axis"): the 12.8 and 12.9 wheels compile every
wgmma kernel of the sweep for sm_90a with the SASS each variant needs, and build the archs listed below.

They are looked up as `--nvrtc 12.8` looks them up (harness.run.toolchain.library_roots: $TC_HARNESS_NVRTC_DIR,
else ~/.cache/tc-harness/nvrtc); where one is absent its tests skip, saying how to install it, and under CI (the CI
variable set) a version of harness.environments.NVRTC_VERSIONS that is absent fails them (.ci/run installs them):

    pip install --target ~/.cache/tc-harness/nvrtc/12.8 'nvidia-cuda-nvrtc-cu12==12.8.*'
    pip install --target ~/.cache/tc-harness/nvrtc/12.9 'nvidia-cuda-nvrtc-cu12==12.9.*'
    pip install --target ~/.cache/tc-harness/nvrtc/13.0 'nvidia-cuda-nvrtc==13.0.*'
"""
import dataclasses
import json
import os

import pytest

from harness import environments, plan, registry
from harness.enums import Arch, ToolchainKind
from harness.families.wgmma import forms as wgmma
from harness.families.wgmma import kernel as wgmma_kernel
from harness.run import compile as C, sass, toolchain as T
from harness.cache import cache_dir, write_atomically
from harness.sweep import plan_kernels
from tests.sass_gmma import function_text
from tests.test_environments import SAMPLES

# what each version builds of the harness's archs (a trivial kernel for the arch; NVRTC 12.8 does not know sm_103a:
# "invalid value for --gpu-architecture")
BUILDS = {"12.8": ("sm_90a", "sm_100a"), "12.9": ("sm_90a", "sm_100a", "sm_103a")}


def toolchain_or_skip(version: str, kind=ToolchainKind.NVRTC) -> T.Toolchain:
    """The NVRTC of `version`; where it is not installed a skip, and under CI a failure for one of
    environments.NVRTC_VERSIONS (every one CI declares it covers must be there: .ci/run installs them)."""
    try:
        return T.resolve(kind, version)
    except T.ToolchainError as e:
        must = os.environ.get("CI") and version in environments.NVRTC_VERSIONS
        (pytest.fail if must else pytest.skip)(f"NVRTC {version} is not installed here: {e}")


def test_the_versions_tested_here_are_the_declared_ones():
    assert set(BUILDS) | {"13.0"} == set(environments.NVRTC_VERSIONS)


def test_a_declared_version_that_is_missing_fails_under_ci_and_skips_elsewhere(monkeypatch, tmp_path):
    monkeypatch.setenv("TC_HARNESS_NVRTC_DIR", str(tmp_path))  # nothing installed there
    version = environments.NVRTC_VERSIONS[0]

    def outcome(v):  # a skip caught as such, not ending this test as skipped
        with pytest.raises((pytest.skip.Exception, pytest.fail.Exception)) as e:
            toolchain_or_skip(v)
        assert f"NVRTC {v} is not installed here" in str(e.value)
        return e.type

    monkeypatch.delenv("CI", raising=False)
    assert outcome(version) is pytest.skip.Exception
    monkeypatch.setenv("CI", "true")
    assert outcome(version) is pytest.fail.Exception
    assert outcome("11.8") is pytest.skip.Exception  # not one CI declares


def sample_kernels():
    return [k for sel in SAMPLES for k in plan_kernels(plan.make(sel, {}, None))]


@pytest.mark.parametrize("version", environments.NVRTC_VERSIONS)
def test_a_sample_of_every_family_compiles_with_the_sass_it_needs(version):
    """Each family's sample (tests/test_environments.py's SAMPLES: each of the family's archs) for every arch the
    version builds, each cubin's SASS checked by its family's check, as a sweep checks it."""
    tc = toolchain_or_skip(version)
    cannot = tc.cannot_build(Arch.values())
    kernels = [k for k in sample_kernels() if str(k.arch) not in cannot]
    assert {k.family for k in kernels} == set(registry.REGISTRY), f"NVRTC {version} builds no sample of some family"
    assert {str(k.arch) for k in kernels} == set(Arch.values()) - set(cannot)
    checks = [registry.get(k.family).sass_check(k) for k in kernels]
    outs = C.compile_many([C.compile_job(k) for k in kernels], toolchain=tc, raise_on_error=False)
    for k, out, check in zip(kernels, outs, checks):
        assert out.error is None and out.cubin_path.suffix == ".cubin", f"NVRTC {version}: {k.name}: {out.error}"
        verdict = sass.verify(out.cubin_path, check)
        assert verdict.ok, f"NVRTC {version}: {k.name} for {k.arch}: {verdict.broken}"
    # the check can fail: the dense wgmma kernel's function lacks what the sparse kernel's check asks for (the
    # kernels of one arch may share a module: the check names its function)
    dense = next(i for i, k in enumerate(kernels) if k.family == "wgmma")
    sparse = next(i for i, k in enumerate(kernels) if k.family == "wgmma_sp")
    planted = dataclasses.replace(checks[sparse], function=checks[dense].function)
    assert not sass.verify(outs[dense].cubin_path, planted).ok


@pytest.mark.parametrize("version", BUILDS)
def test_each_version_builds_the_archs_it_should(version):
    tc = toolchain_or_skip(version)
    assert tc.library.version == version and tc.library.build.startswith(version + ".") and not tc.bindings
    assert tc.ptx_isa == {"12.8": "8.7", "12.9": "8.8"}[version]  # the PTX ISA of CUDA 12.8 and 12.9
    cannot = tc.cannot_build(Arch.values())
    assert tuple(a for a in Arch.values() if a not in cannot) == BUILDS[version], cannot


@pytest.mark.parametrize("version", BUILDS)
def test_the_fast_compile_level_is_asked_only_of_a_version_that_has_it(version):
    """12.8 refuses --Ofast-compile=min, which is why its kernels compile without it (Toolchain.fast_compile_options)."""
    tc = toolchain_or_skip(version)
    asked = C.DEFAULT_OPTIONS + ("--Ofast-compile=min",)
    data, log = tc.compile(T.PROBE_SOURCE, T.PROBE_NAME, "sm_90a", asked)
    assert (data is not None) == (version != "12.8"), log[:300]
    job = C.CompileJob(T.PROBE_NAME, T.PROBE_SOURCE, "sm_90a")
    assert job.options_for(tc) == (asked if data is not None else C.DEFAULT_OPTIONS)


@pytest.mark.slow
@pytest.mark.parametrize("version", BUILDS)
def test_every_wgmma_kernel_compiles_for_sm_90a_with_its_sass(version):
    tc = toolchain_or_skip(version)
    keys = wgmma.all_kernel_keys()
    jobs = [C.CompileJob(k.name, wgmma_kernel.source(k), "sm_90a") for k in keys]
    for key, out in zip(keys, C.compile_many(jobs, toolchain=tc)):
        assert out.error is None and out.cubin_path.suffix == ".cubin", key.name
        verdict = sass.verify(out.cubin_path, wgmma_kernel.sass_check(key))
        assert verdict.ok, f"NVRTC {version}: {key.name}: {verdict.broken}"


def compile_log(tc: T.Toolchain, job: C.CompileJob) -> tuple[bool, str]:
    """(whether NVRTC built the kernel, its log), kept in the compile cache under the compile cache's own key (the
    source, arch, options and the NVRTC's version and build): what decides the log. Compiling the sample with the
    three versions took ~10 CPU s of every CI run on the machine that has them."""
    kept = cache_dir() / "nvrtc-logs" / f"{job.name}-{job.arch}-{job.key(tc)}.json"
    try:
        was = json.loads(kept.read_text())
        return was["built"], was["log"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    data, log = tc.compile(job.source, job.name, job.arch, job.options_for(tc))
    try:
        kept.parent.mkdir(exist_ok=True)
        write_atomically(kept, json.dumps({"built": data is not None, "log": log}))
    except OSError:  # a read-only cache: compiled again next time
        pass
    return data is not None, log


def assert_no_warpgroup_arrive_injected(version: str, selection: plan.Selection, stride: int) -> None:
    tc = toolchain_or_skip(version)
    p = plan.make(selection, {}, cache=True)
    for k in [k for k, _ in p.work][::stride]:
        job = C.compile_job(k)
        assert job.arch == "sm_90a", k.name
        built, log = compile_log(tc, job)
        # C7519: a warpgroup.arrive injected; C7514/C7517: a wait injected (a register of a GMMA used before the
        # wait, as a D stored before wait_group would be): none of ptxas's GMMA remarks in a sweep kernel's log
        assert built and "(C75" not in log and "warpgroup.arrive is injected" not in log, \
            f"NVRTC {version}: {k.name}: {log[:500]}"


@pytest.mark.parametrize("version", ["12.8", "12.9", "13.0"])
def test_no_warpgroup_arrive_is_injected_into_the_sweep_kernels(version):
    """The sweep kernels issue their variant from one asm statement, each variant's block fenced, committed and
    waited for: with the fence, commit or wait outside the branches, ptxas 12.8 to 13.0 inject a warpgroup.arrive
    at the merge ("info (C7519) warpgroup.arrive is injected ... to allow use of registers in GMMA"), which the
    H100 node's NVRTC 13.0 printed for every kernel of the first version of that statement; nor a warpgroup.wait
    (C7517: a GMMA's register used before its wait, as D stored before the statement's wait_group would be). A
    sample here (every kind, both A sources, N = 8 and 256); every kernel under -m slow."""
    assert_no_warpgroup_arrive_injected(
        version, plan.Selection(families=("wgmma", "wgmma_sp"), n_values=(8, 256)), stride=3)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["12.8", "12.9", "13.0"])
def test_no_warpgroup_arrive_is_injected_into_any_sweep_kernel(version):
    assert_no_warpgroup_arrive_injected(version, plan.Selection(families=("wgmma", "wgmma_sp")), stride=1)


@pytest.mark.slow
@pytest.mark.parametrize("version", BUILDS)
def test_every_tcgen05_kernel_compiles_for_each_blackwell_arch_it_builds(version):
    from harness.families.tcgen05.kernel import MNEMONIC
    tc = toolchain_or_skip(version)
    fam = registry.get("tcgen05")
    for arch in (a for a in BUILDS[version] if a != "sm_90a"):
        kernels = [k for k, _ in fam.kernels(arch)]
        jobs = [C.compile_job(k) for k in kernels]
        for k, out in zip(kernels, C.compile_many(jobs, toolchain=tc, raise_on_error=False)):
            assert out.error is None, f"NVRTC {version} {arch}: {out.error}"
            assert MNEMONIC[k.form.kind] in function_text(sass.disassembly(out.cubin_path.read_bytes()), k.form.name), \
                f"NVRTC {version} {arch}: {k.name}"


def test_the_timing_loop_of_nvrtc_13_0_passes_the_bench_sass_check():
    """NVRTC 13.0 (the H100 node's) puts a NOP between the throughput loop's MMAs; the bench took that for
    serialized MMAs and refused to time (the 2026-11-23 bench in docs/performance.md). Install 13.0 with
    pip install --target ~/.cache/tc-harness/nvrtc/13.0 'nvidia-cuda-nvrtc==13.0.*'."""
    from harness.timing import bench, forms as F, source as S
    tc = toolchain_or_skip("13.0")
    f = F.WgmmaTiming("bf16", "bf16", "f32", 256, "SS")
    ((name, arch), mf), = S.module_forms([f]).items()
    # at full optimization, as bench.compile_modules compiles it (the fast-compile level serialises the loop's MMAs)
    (out,) = C.compile_many([C.CompileJob(name, S.source(mf), arch, fast_compile=False)], toolchain=tc)
    listing = sass.functions(str(out.cubin_path))[f"{f.module_name}_tput"]
    assert any(i.opcode == "NOP" for i in listing)  # what 13.0 does (13.5 does not): the case this test is for
    assert bench.sass_problems(f, out) == []
