"""NVRTC on the CPU: cubins for sm_90a, sm_100a and sm_103a, the cache, and the SASS of every wgmma form."""
import re

import pytest

from harness.run import compile as C, toolchain
from harness import kernels
from harness.families.wgmma import kernel as wgmma_kernel
from harness.families.wgmma import forms as wgmma


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("arch", C.ARCHS)
def test_smoke_kernel_compiles_to_a_cubin_for_each_arch(arch):
    out = C.compile_one(C.CompileJob("smoke", kernels.smoke_source(), arch))
    data = out.cubin_path.read_bytes()
    assert data[:4] == b"\x7fELF"
    assert f"code for {arch}" in C.sass(out.cubin_path)


def test_cache_hit_and_key():
    job = C.CompileJob("smoke", kernels.smoke_source(), "sm_90a")
    first, second = C.compile_one(job), C.compile_one(job)
    assert not first.cached and second.cached and first.cubin_path == second.cubin_path
    other = C.CompileJob("smoke", kernels.smoke_source(), "sm_90a", C.DEFAULT_OPTIONS + ("-G",))
    tc = toolchain.default()
    assert other.key(tc) != job.key(tc)


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_wgmma_is_refused_for_blackwell_with_the_compilers_message(arch):
    key = wgmma.KernelKey("f16", 8, "f32", "SS")
    with pytest.raises(C.CompileError) as e:
        C.compile_one(C.CompileJob(key.name, wgmma_kernel.source(key), arch))
    assert f"not supported on .target '{arch}'" in e.value.log
    assert e.value.source_path.exists() and (e.value.source_path.parent / "nvrtc.log").exists()


def expected_sass(key: wgmma.KernelKey) -> set[str]:
    """The tensor-core SASS opcode each variant of a kernel must produce."""
    n, out = key.n, set()
    for v in wgmma.variants(key):
        if key.kind in ("f16", "tf32"):
            t = {"f16": "", "bf16": ".BF16", "tf32": ".TF32"}[v.atype]
            out.add(f"HGMMA.64x{n}x{key.k}.{key.dtype.upper()}{t}")
        elif key.kind == "f8":
            out.add(f"QGMMA.64x{n}x32.{key.dtype.upper()}.{v.atype.upper()}.{v.btype.upper()}")
        elif key.kind == "s8":
            out.add(f"IGMMA.64x{n}x32.{v.atype.upper()}.{v.btype.upper()}" + (".SAT" if v.satfinite else ""))
        else:
            out.add(f"BGMMA.64x{n}x256.AND.POPC")
    return out


def sass_gmma_ops(sass: str) -> set[str]:
    return set(re.findall(r"\b([HQIB]GMMA\.[0-9]+x[0-9]+x[0-9]+[.A-Z0-9]*)", sass))


def _check_kernel(key):
    out = C.compile_one(C.CompileJob(key.name, wgmma_kernel.source(key), "sm_90a"))
    ops = sass_gmma_ops(C.sass(out.cubin_path))
    missing = expected_sass(key) - ops
    assert not missing, f"{key.name}: SASS lacks {sorted(missing)}; has {sorted(ops)}"


SMALL_KEYS = [k for k in wgmma.all_kernel_keys(n_values=(8, 64))]


@pytest.mark.parametrize("key", SMALL_KEYS, ids=lambda k: k.name)
def test_wgmma_kernel_sass_has_every_variants_instruction(key):
    _check_kernel(key)


@pytest.mark.slow
def test_every_wgmma_kernel_of_the_sweep_compiles_with_its_sass(tmp_path):
    """All kernel keys of the full sweep, compiled in parallel as the sweep does."""
    keys = wgmma.all_kernel_keys()
    jobs = [C.CompileJob(k.name, wgmma_kernel.source(k), "sm_90a") for k in keys]
    for key, out in zip(keys, C.compile_many(jobs)):
        ops = sass_gmma_ops(C.sass(out.cubin_path))
        assert expected_sass(key) <= ops, key.name


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
