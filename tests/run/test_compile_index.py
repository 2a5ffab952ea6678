"""harness/run/compile_index.py: a warm sweep finds every kernel's module in one file, and only when each compiled
and showed what it tests, with the same package, toolchain and disassembler, and its cubin untouched since."""
import os

import pytest

from harness import families, plan, sweep
from harness.families.wgmma import kernel as wgmma_kernel
from harness.run import compile_index, toolchain as toolchains


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    p = plan.make(plan.Selection(families=("wgmma",), kinds=("b1",), n_values=(8, 16), data_modes=("exact",)))
    return sweep.plan_kernels(p)


def compile_all(kernels):
    lines = []
    return sweep.compile_kernels(kernels, sweep.SweepConfig(workers=1), lines.append), lines


def no_source(monkeypatch):
    def refuse(self, kernel):
        raise AssertionError(f"{kernel.name}: its source was written, the index not used")
    monkeypatch.setattr(type(families.get("wgmma")), "source", refuse)


def test_a_warm_compile_reads_the_index_and_finds_the_same_modules(kernels, monkeypatch):
    cold, _ = compile_all(kernels)
    assert all(c.error is None for c in cold.values())
    no_source(monkeypatch)
    warm, lines = compile_all(kernels)
    assert {k: c.cubin_path for k, c in warm.items()} == {k: c.cubin_path for k, c in cold.items()}
    assert all(c.cached and c.error is None for c in warm.values())
    assert "compile index" in lines[0] and len(lines) == 1  # and no SASS line: nothing was verified again


def test_a_cubin_touched_since_is_looked_up_the_long_way(kernels, monkeypatch):
    cold, _ = compile_all(kernels)
    path = next(iter(cold.values())).cubin_path
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert compile_index.load(kernels, toolchains.default(), True) is None
    _, lines = compile_all(kernels)  # the long way: the verdicts are read again
    assert "compile index" not in lines[0] and lines[1].startswith("SASS:")


def test_a_kernel_that_fails_its_sass_check_leaves_no_index(kernels, monkeypatch):
    real = wgmma_kernel.sass_opcode
    monkeypatch.setattr(wgmma_kernel, "sass_opcode", lambda key, v: real(key, v).replace("64x8x", "64x16x"))
    planted, _ = compile_all(kernels)
    assert any(c.error is not None for c in planted.values())
    assert compile_index.load(kernels, toolchains.default(), True) is None
    assert not compile_index.index_path(kernels, toolchains.default(), True).exists()


class OtherNvrtc:
    """A toolchain whose modules differ (another NVRTC build): only its cache key is asked."""

    @staticmethod
    def cache_key():
        return ("nvrtc", "0.0", "0.0.0")


def test_the_index_is_of_one_toolchain_one_check_and_these_kernels(kernels):
    tc = toolchains.default()
    compile_all(kernels)
    assert compile_index.load(kernels, tc, True) is not None
    assert compile_index.load(kernels, OtherNvrtc(), True) is None
    assert compile_index.load(kernels, tc, False) is None  # not SASS-checked is another index
    assert compile_index.load(kernels[:-1], tc, True) is None


def test_a_family_from_outside_the_package_is_never_indexed(kernels, monkeypatch):
    monkeypatch.setattr(families, "registry", lambda: {"wgmma": "elsewhere.wgmma"})
    assert compile_index.index_path(kernels, toolchains.default(), True) is None
