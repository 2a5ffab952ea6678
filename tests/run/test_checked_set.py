"""A list of kernels compiled and SASS-checked, remembered (harness/run/checked_set.py): a warm sweep of the same
source, toolchain and kernels takes their cubins on a stat; anything else checks the whole way."""
import os

import pytest

from harness import plan, registry, sweep
from harness.run import checked_set, compile as C, sass

pytestmark = pytest.mark.spread


def small_kernels():
    p = plan.make(plan.Selection(families=("wgmma",), kinds=("b1",), n_values=(8,), data_modes=("exact",)))
    return sweep.plan_kernels(p)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def compile_kernels(kernels):
    return sweep.compile_kernels(kernels, sweep.SweepConfig(workers=1), log=lambda m: None)


def whole_way_refused(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("went the whole way")
    monkeypatch.setattr(C, "compile_many", refuse)
    monkeypatch.setattr(sass, "verify_many", refuse)


def test_a_checked_list_is_taken_again_without_compiling_or_checking(cache, monkeypatch):
    kernels = small_kernels()
    first = compile_kernels(kernels)
    assert all(c.error is None for c in first.values()) and len(list((cache / checked_set.FOLDER).glob("*.json"))) == 1
    whole_way_refused(monkeypatch)
    again = compile_kernels(kernels)
    assert {k: c.cubin_path for k, c in again.items()} == {k: c.cubin_path for k, c in first.items()}
    assert all(c.cached and c.error is None for c in again.values())


@pytest.mark.parametrize("change", ["rewritten", "removed"])
def test_a_cubin_changed_since_its_check_sends_the_list_the_whole_way(cache, monkeypatch, change):
    kernels = small_kernels()
    first = compile_kernels(kernels)
    cubin = first[kernels[0]].cubin_path
    if change == "rewritten":  # the same bytes, written anew: another ctime
        cubin.write_bytes(cubin.read_bytes())
    else:
        cubin.unlink()
    whole_way_refused(monkeypatch)
    with pytest.raises(AssertionError, match="went the whole way"):
        compile_kernels(kernels)


def test_another_toolchain_disassembler_or_kernel_list_has_another_key():
    kernels = small_kernels()
    base = checked_set.key(kernels, ("nvrtc", "13.0", "b1"), "d1")
    assert base is not None and base == checked_set.key(kernels, ("nvrtc", "13.0", "b1"), "d1")
    assert base != checked_set.key(kernels, ("nvrtc", "13.0", "b2"), "d1")
    assert base != checked_set.key(kernels, ("nvrtc", "13.0", "b1"), "d2")
    assert base != checked_set.key(kernels[:1], ("nvrtc", "13.0", "b1"), "d1")
    assert base != checked_set.key(kernels[::-1], ("nvrtc", "13.0", "b1"), "d1")


def test_a_family_from_outside_the_package_is_never_remembered(monkeypatch):
    kernels = small_kernels()
    assert checked_set.key(kernels, ("nvrtc",), "d") is not None
    monkeypatch.setenv(registry.EXTRA, "wgmma=elsewhere.wgmma")  # TC_HARNESS_FAMILIES puts another module there
    assert checked_set.key(kernels, ("nvrtc",), "d") is None


def test_a_list_with_a_kernel_whose_sass_lacks_its_instruction_is_not_remembered(cache, monkeypatch):
    from harness.families.wgmma import kernel as wgmma_kernel
    real = wgmma_kernel.sass_opcode
    monkeypatch.setattr(wgmma_kernel, "sass_opcode", lambda key, v: real(key, v).replace("64x8x", "64x16x"))
    compiled = compile_kernels(small_kernels())
    assert all(isinstance(c.error, sass.SassMismatch) for c in compiled.values())
    assert not list((cache / checked_set.FOLDER).glob("*.json"))


def test_a_damaged_record_is_not_trusted(cache, monkeypatch):
    kernels = small_kernels()
    compile_kernels(kernels)
    (record,) = (cache / checked_set.FOLDER).glob("*.json")
    record.write_text(record.read_text()[:40])
    whole_way_refused(monkeypatch)
    with pytest.raises(AssertionError, match="went the whole way"):
        compile_kernels(kernels)


def test_only_the_newest_lists_are_kept(tmp_path):
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(b"x")
    for i in range(checked_set.KEEP + 3):
        checked_set.record(tmp_path, f"list{i:02d}", [cubin])
        os.utime(tmp_path / checked_set.FOLDER / f"list{i:02d}.json", ns=(i * 10**9, i * 10**9))
    checked_set.record(tmp_path, "list99", [cubin])
    kept = sorted(p.stem for p in (tmp_path / checked_set.FOLDER).glob("*.json"))
    assert len(kept) == checked_set.KEEP and "list99" in kept and "list00" not in kept
    assert checked_set.recorded(tmp_path, "list99", 1) == [cubin]
    assert checked_set.recorded(tmp_path, "list99", 2) is None


def test_the_sweep_takes_the_verdicts_its_compile_made_and_judges_only_cached_cubins(cache, monkeypatch):
    """A cubin compiled now comes with the verdict of the process that built it (Compiled.verdict): the SASS check
    after the compile reads no module again for it; a cubin taken from the cache (its list not remembered) is judged."""
    kernels = small_kernels()
    judged = []
    real = sass.verify_many
    monkeypatch.setattr(sass, "verify_many",
                        lambda items, workers=None: judged.append(len(items)) or real(items, workers))
    compiled = compile_kernels(kernels)
    assert all(c.verdict is not None and c.verdict.ok and c.error is None for c in compiled.values())
    for record in (cache / checked_set.FOLDER).glob("*.json"):
        record.unlink()
    again = compile_kernels(kernels)
    assert judged == [0, len(kernels)] and all(c.cached and c.verdict is None and c.error is None
                                               for c in again.values())
