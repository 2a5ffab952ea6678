"""The driver-JIT toolchain (README, "Toolchain axis").

On an sm_90a GPU: the sweep hands the driver PTX, its JIT compiles it as the module loads, and every case must
give exactly what the cubin sweep gives (compare: no regression, toolchains named as different); PTX the JIT
rejects is recorded compile-error, without bisection, and the GPU worker is not taken for a faulting launch.

The PTX side of it runs on the CPU (no marker): what the GPU is handed is NVRTC's PTX for the virtual arch,
naming the target and the PTX ISA the toolchain records, and nvJitLink (the library form of the JIT linker,
ptxas inside) assembles it into the tensor-core SASS the cubin path has.
"""
import json
import subprocess
import sys

import pytest

from harness.enums import ToolchainKind
from harness.families.wgmma import forms as wgmma
from harness.families.wgmma import kernel as wgmma_kernel
from harness.run import compile as C, sass, toolchain as T

CPU_KEYS = [wgmma.KernelKey("f8", 8, "f32", "SS"), wgmma.KernelKey("s8", 8, "s32", "RS"),
            wgmma.KernelKey("b1", 8, "s32", "SS")]
GPU_SELECTION = ["--family", "wgmma", "--n", "64"]  # every kind, SS and RS, f16/f32/s32 accumulators


def jit_toolchain() -> T.Toolchain:
    return T.resolve(ToolchainKind.DRIVER_JIT)


def ptx_of(key: wgmma.KernelKey) -> bytes:
    """The module the driver-jit sweep hands the GPU for this kernel."""
    out = C.compile_one(C.CompileJob(key.name, wgmma_kernel.source(key), "sm_90a"), jit_toolchain())
    assert out.error is None and out.cubin_path.suffix == ".ptx"
    return out.cubin_path.read_bytes()


def assemble(ptx: bytes, name: str, arch: str = "sm_90a") -> bytes:
    """PTX -> cubin through nvJitLink (what the driver's JIT does as it loads a module)."""
    nvjitlink = pytest.importorskip("cuda.bindings.nvjitlink", reason="cuda.bindings has no nvjitlink here")
    try:
        h = nvjitlink.create(1, [f"-arch={arch}"])
    except Exception as e:  # no libnvJitLink: the PTX cannot be assembled here
        pytest.skip(f"nvJitLink unavailable: {type(e).__name__}: {e}")
    try:
        nvjitlink.add_data(h, nvjitlink.InputType.PTX, ptx, len(ptx), name)
        nvjitlink.complete(h)
        cubin = bytearray(nvjitlink.get_linked_cubin_size(h))
        nvjitlink.get_linked_cubin(h, cubin)
        return bytes(cubin)
    finally:
        nvjitlink.destroy(h)


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("key", CPU_KEYS, ids=lambda k: k.name)
def test_the_ptx_the_gpu_is_handed_names_its_target_and_assembles_to_the_sass(key, private_cache, tmp_path):
    jit = jit_toolchain()
    ptx = ptx_of(key)
    assert T.ptx_header(ptx) == (jit.ptx_isa, "sm_90a")
    assert f".visible .entry {key.name}(" in ptx.decode()
    cubin = tmp_path / f"{key.name}-jit.cubin"
    cubin.write_bytes(assemble(ptx, key.name))
    verdict = sass.verify(cubin, wgmma_kernel.sass_check(key))
    assert verdict.ok, (key.name, verdict.broken)


def test_ptx_with_an_error_is_refused_by_the_assembler(private_cache):
    """The negative control of the CPU side: the JIT's assembler must be able to say no."""
    key = CPU_KEYS[0]
    bad = ptx_of(key).replace(b"wgmma.mma_async", b"wgmma.mma_bogus", 1)
    with pytest.raises(Exception):
        assemble(bad, key.name)


def harness(*args):
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], capture_output=True, text=True,
                          timeout=900)


@pytest.mark.gpu("sm_90a")
def test_the_driver_jit_sweep_gives_what_the_cubin_sweep_gives(tmp_path):
    from harness.run import gpu
    jit = jit_toolchain()
    driver = gpu.device_info(0)["driver"]
    try:
        T.check_driver(jit, driver)
    except T.ToolchainError as e:
        pytest.skip(f"this NVRTC's PTX is too new for the driver here ({e})")
    cubins, ptx = tmp_path / "nvrtc.jsonl", tmp_path / "driver-jit.jsonl"
    for out, extra in ((cubins, []), (ptx, ["--toolchain", "driver-jit"])):
        r = harness("sweep", *GPU_SELECTION, *extra, "--out", out)
        assert r.returncode == 0, r.stderr[-3000:]
    env = json.loads(ptx.read_text().splitlines()[0])
    assert env["toolchain"] == "driver-jit" and env["ptx_isa"] == jit.ptx_isa and env["driver"]
    r = harness("compare", cubins, ptx, "--json")
    report = json.loads(r.stdout)
    assert r.returncode == 0 and not report["regressed"] and report["toolchains"]["differ"]
    assert report["common"] > 1000 and not report["newly_failing"]


@pytest.mark.gpu("sm_90a")
def test_ptx_the_jit_rejects_is_a_compile_error_not_a_fault(tmp_path, private_cache):
    from harness import registry
    from harness.enums import Status
    from harness.contract import LaunchFailed
    from harness.run.worker import GpuWorker
    key = CPU_KEYS[0]
    bad = tmp_path / f"{key.name}.ptx"
    bad.write_bytes(ptx_of(key).replace(b"wgmma.mma_async", b"wgmma.mma_bogus", 1))
    fam = registry.get("wgmma")
    kernel = fam.kernel_of(key)
    cases = next(cs for k, cs in fam.kernels("sm_90a") if k.name == kernel.name)[:2]
    launch, _ = fam.prepare(kernel, cases)
    worker = GpuWorker(0)
    try:
        with pytest.raises(LaunchFailed) as e:
            worker.run(str(bad), key.name, launch, timeout=60)
    finally:
        worker.close()
    assert e.value.status == Status.COMPILE_ERROR and "JIT rejected the PTX" in str(e.value)


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_tcgen05_ptx_names_its_blackwell_target_and_assembles(arch, private_cache):
    from harness import registry
    from harness.families.tcgen05 import kernel as tk
    fam = registry.get("tcgen05")
    kernel = next(k for k, _ in fam.kernels(arch) if k.form.kind == "f16")
    out = C.compile_one(C.CompileJob(kernel.name, fam.source(kernel), arch), jit_toolchain())
    ptx = out.cubin_path.read_bytes()
    assert T.ptx_header(ptx) == (jit_toolchain().ptx_isa, arch)
    assert tk.MNEMONIC["f16"] in sass.sass_of_bytes(assemble(ptx, kernel.name, arch))
