"""Several kernels per NVRTC program (harness/run/compile.py, KERNELS_PER_MODULE): each kernel's machine code is
the code it gets compiled alone, a kernel NVRTC rejects is named alone, the SASS check reads each kernel's own
function, and a kernel folder stores a shared module once."""
import dataclasses
import os

import pytest

from harness import contract, plan, registry
from harness.families.wgmma import forms as wgmma, kernel as wgmma_kernel
from harness.run import compile as C, kernel_folder, sass, toolchain
from tests import cubin_elf

pytestmark = pytest.mark.spread  # no module-scoped fixture: under pytest -n, each test on any free worker


def jobs_of(family: str, arch: str, names: int) -> list:
    fam = registry.get(family)
    # every kernel the family compiles for arch, in its order: tcgen05's kernels() also lists its compile-only forms
    # (and builds in milliseconds); the wgmma families' kernel_list names theirs without building ~27,000 cases
    listed = [k for k, _ in fam.kernels(arch)] if family == "tcgen05" else fam.kernel_list(arch)
    kernels = listed[:: max(1, len(listed) // names)][:names]
    return [C.compile_job(k) for k in kernels]


@pytest.mark.parametrize("family, arch", [("wgmma", "sm_90a"), ("wgmma_sp", "sm_90a"), ("wgmma_seq", "sm_90a"),
                                          ("tcgen05", "sm_100a")])
def test_each_kernel_of_a_shared_module_has_the_code_it_has_alone(family, arch, tmp_path, monkeypatch):
    """Bit for bit: each kernel's instruction bytes and relocations, read from the ELF (tests/cubin_elf.py; a listing
    would leave out the scheduling control bits and cost a disassembler start a cubin). The jobs go without their
    SASS checks, which other tests run: this one compares code."""
    jobs = [dataclasses.replace(j, sass_check=None) for j in jobs_of(family, arch, 4)]
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "shared"))
    shared = C.compile_many(jobs, workers=1)
    assert len({os.stat(c.cubin_path).st_ino for c in shared}) == 1  # one module, linked from each cache entry
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "alone"))
    alone = [C.compile_one(job) for job in jobs]
    for job, mod, own in zip(jobs, shared, alone):
        assert cubin_elf.function_code(mod.cubin_path, job.name) == cubin_elf.function_code(own.cubin_path, job.name), \
            job.name
    # the comparison tells kernels apart: each kernel's code differs from the next one's
    codes = [cubin_elf.function_code(c.cubin_path, j.name) for j, c in zip(jobs, alone)]
    assert all(a != b for a, b in zip(codes, codes[1:]))


def test_a_kernel_nvrtc_rejects_is_named_alone_and_its_module_mates_still_build(tmp_path, monkeypatch):
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    jobs = [dataclasses.replace(j, sass_check=None) for j in jobs_of("wgmma", "sm_90a", 4)]  # no listings needed
    bad = C.CompileJob(jobs[1].name, jobs[1].source.replace("wgmma.fence.sync.aligned", "wgmma.bogus"), "sm_90a")
    out = C.compile_many([jobs[0], bad, *jobs[2:]], workers=1, raise_on_error=False,
                         failed_dir=tmp_path / "failed")
    assert [c.error is None for c in out] == [True, False, True, True]
    assert bad.name in str(out[1].error) and (tmp_path / "failed" / f"{bad.name}-sm_90a" / "nvrtc.log").exists()
    for job, c in zip([jobs[0], *jobs[2:]], [out[0], *out[2:]]):
        assert job.name in cubin_elf.function_names(c.cubin_path)


def test_the_sass_check_reads_the_kernels_own_function(tmp_path, monkeypatch):
    """A module holding N = 8 and N = 16: each kernel's check passes on its own function and fails on the other's
    (were it read over the whole module, N = 8's rules would see N = 16's wgmma too)."""
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    keys = [wgmma.KernelKey("b1", n, "s32", "SS") for n in (8, 16)]
    out = C.compile_many([C.CompileJob(k.name, wgmma_kernel.source(k), "sm_90a") for k in keys], workers=1)
    assert out[0].cubin_path.read_bytes() == out[1].cubin_path.read_bytes()
    for k, c in zip(keys, out):
        assert sass.verify(c.cubin_path, wgmma_kernel.sass_check(k)).ok
    wrong = dataclasses.replace(wgmma_kernel.sass_check(keys[0]), function=keys[1].name)
    assert not sass.verify(out[0].cubin_path, wrong).ok


def test_modules_are_balanced_by_source_and_handed_out_heaviest_first():
    """Jobs of unequal source (a sparse kernel's is about three times a dense one's) in modules of at most
    `size`, of about equal source each, every job in exactly one; modules_to_compile hands the heaviest module out first."""
    jobs = [C.CompileJob(f"k{i}", "x" * n, "sm_90a") for i, n in enumerate([300] * 6 + [100] * 18)]
    todo = [(i, j, None) for i, j in enumerate(jobs)]
    modules = C.balanced(todo, 8)
    assert len(modules) == 3 and all(len(m) <= 8 for m in modules)
    assert sorted(t[0] for m in modules for t in m) == list(range(24))
    assert {sum(len(t[1].source) for t in m) for m in modules} == {1200}  # in plan order: 2000, 800, 800
    ordered = C.modules_to_compile(todo, toolchain.default(), workers=2)
    loads = [sum(len(t[1].source) for t in m) for m in ordered]
    assert loads == sorted(loads, reverse=True) and sum(map(len, ordered)) == 24


def test_a_small_group_goes_out_in_modules_of_at_least_the_floor():
    """240 kernels of one arch and 12 of another on 16 workers: two modules a worker give the large group modules of
    ceil(240 / 32) = 8, and the small one modules of MIN_KERNELS_PER_MODULE = 4, not 12 single-kernel modules (each
    module's SASS check starts a disassembler); on 4 workers 44 kernels of one arch go out in modules of
    ceil(44 / 8) = 6 and 6 of another in two of 3, not six of 1; 1,000 kernels on 16 workers in modules of at most
    KERNELS_PER_MODULE."""
    jobs = [C.CompileJob(f"k{i}", "x" * 100, "sm_90a") for i in range(240)]
    jobs += [C.CompileJob(f"t{i}", "y" * 100, "sm_100a") for i in range(12)]
    modules = C.modules_to_compile([(i, j, None) for i, j in enumerate(jobs)], toolchain.default(), workers=16)
    sizes = {arch: sorted({len(m) for m in modules if m[0][1].arch == arch}) for arch in ("sm_90a", "sm_100a")}
    assert sizes == {"sm_90a": [8], "sm_100a": [C.MIN_KERNELS_PER_MODULE]} and len(modules) == 30 + 3
    assert all(len({t[1].arch for t in m}) == 1 for m in modules)
    few = C.modules_to_compile([(i, j, None) for i, j in enumerate(jobs[:44] + jobs[240:246])], toolchain.default(),
                               workers=4)
    assert sorted(len(m) for m in few if m[0][1].arch == "sm_90a") == [5] * 4 + [6] * 4
    assert sorted(len(m) for m in few if m[0][1].arch == "sm_100a") == [3, 3]
    many = [C.CompileJob(f"k{i}", "x" * 100, "sm_90a") for i in range(1000)]
    capped = C.modules_to_compile([(i, j, None) for i, j in enumerate(many)], toolchain.default(), workers=16)
    assert max(map(len, capped)) == C.KERNELS_PER_MODULE and len(capped) == -(-1000 // C.KERNELS_PER_MODULE)


def test_modules_are_balanced_by_estimated_cost_not_by_source_length():
    """NVRTC's time grows with the square of a kernel's source (compile_cost): one kernel of three times the length
    of nine others costs as much as all nine, and goes out in a module of its own, the nine in the other (by length
    it would have shared its module with short ones, four and six)."""
    jobs = [C.CompileJob(f"k{i}", "x" * n, "sm_90a") for i, n in enumerate([300] + [100] * 9)]
    modules = C.balanced([(i, j, None) for i, j in enumerate(jobs)], 9)
    assert sorted(len(m) for m in modules) == [1, 9]
    assert {len(m[0][1].source) for m in modules if len(m) == 1} == {300}
    assert C.compile_cost(jobs[0]) == 9 * C.compile_cost(jobs[1])


def test_a_compile_that_checks_leaves_the_sass_check_nothing_to_judge(tmp_path, monkeypatch):
    """The processes that build the cubins judge their SASS: the check after the compile only reads verdicts (no
    disassembly, no parse); a cubin whose check was not given to the compile is judged then."""
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    keys = [wgmma.KernelKey("b1", n, "s32", "SS") for n in (8, 16, 24)]
    checks = [wgmma_kernel.sass_check(k) for k in keys]
    jobs = [C.CompileJob(k.name, wgmma_kernel.source(k), "sm_90a", sass_check=c if k.n != 24 else None)
            for k, c in zip(keys, checks)]
    out = C.compile_many(jobs, workers=1)
    judged = []
    monkeypatch.setattr(sass, "judge", lambda data, content, check: judged.append(check.function) or sass.Verdict((), ()))
    assert all(v.ok for v in sass.verify_many([(c.cubin_path, check) for c, check in zip(out, checks)]))
    assert judged == [keys[2].name]  # the one compiled without its check


def test_a_compile_time_verdict_is_the_one_the_check_would_reach(tmp_path, monkeypatch):
    """A verdict judged while compiling is the SASS check's own: a rule the SASS breaks is reported the same way
    (here a wrong arch and an opcode that is not there)."""
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    key = wgmma.KernelKey("b1", 8, "s32", "SS")
    wrong = contract.SassCheck("sm_100a", (contract.SassRule("NOSUCH", "an opcode no kernel has"),), function=key.name)
    (built,) = C.compile_many([C.CompileJob(key.name, wgmma_kernel.source(key), "sm_90a", sass_check=wrong)],
                              workers=1)
    (at_compile,) = sass.verify_many([(built.cubin_path, wrong)])
    for f in built.cubin_path.parent.glob(f"{built.cubin_path.name}.sass-*.json"):
        f.unlink()
    (afresh,) = sass.verify_many([(built.cubin_path, wrong)])
    assert at_compile == afresh and len(afresh.broken) == 2 and "sm_90a, not sm_100a" in afresh.broken[0]


def test_a_kernel_folder_stores_a_shared_module_once(tmp_path, monkeypatch):
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    p = plan.make(plan.Selection(families=("wgmma",), kinds=("b1",), n_values=(8, 16, 24, 32)))
    fam = registry.get("wgmma")
    kernels = [(k, C.compile_job(k)) for k, _ in p.work]
    compiled = dict(zip([k for k, _ in kernels], C.compile_many([j for _, j in kernels], workers=1)))
    folder = kernel_folder.write(tmp_path / "k", toolchain.default(), kernels, compiled, "b1")
    files = [f for f in (tmp_path / "k").iterdir() if f.suffix == ".cubin"]
    assert len(files) == 1 < len(kernels)  # 8 kernels, one module
    folder.check(kernels)  # every entry's file, digest and options hold
    assert {e.file for e in folder.kernels} == {files[0].name}


def test_the_compile_command_counts_each_module_file_once(tmp_path, monkeypatch):
    from harness import sweep
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    sel = plan.Selection(families=("wgmma",), kinds=("b1",), n_values=(8, 16, 24, 32))
    summary = sweep.compile_to_folder(sel, toolchain.default(), tmp_path / "k", workers=1)
    files = [f for f in (tmp_path / "k").iterdir() if f.suffix == ".cubin"]
    assert summary["kernels"] == 8 and summary["files"] == len(files) == 1  # one module of 8 kernels
    assert summary["bytes"] == files[0].stat().st_size


def test_no_private_copy_of_a_shared_module_is_left_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    out = C.compile_many(jobs_of("wgmma", "sm_90a", 3), workers=1)
    assert len({os.stat(c.cubin_path).st_ino for c in out}) == 1
    assert not list((tmp_path / "cache").glob("module-*.tmp"))


def test_the_gpu_worker_loads_a_module_file_once_whatever_link_names_it(tmp_path, monkeypatch):
    import sys
    import types
    from harness.run import launch
    loads = []
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(RawModule=lambda path: loads.append(path) or path))
    monkeypatch.setattr(launch, "LOADED_MODULES", {})
    first, second = tmp_path / "a.cubin", tmp_path / "b.cubin"
    first.write_bytes(b"\x7fELF module")
    os.link(first, second)  # two kernels' cache entries of one module
    assert launch.module(str(first)) == launch.module(str(second)) and len(loads) == 1
    other = tmp_path / "c.cubin"
    other.write_bytes(b"\x7fELF another module")
    launch.module(str(other))
    assert len(loads) == 2


def test_modules_compile_on_the_helpers_handed_in(tmp_path, monkeypatch):
    """compile_many with `helpers` (the sweep's engine's pool) runs its modules there and starts no pool of its own."""
    from concurrent.futures import ThreadPoolExecutor
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path))
    monkeypatch.setattr(C.processes, "pool", lambda *a, **k: pytest.fail("a pool of its own was started"))
    jobs = jobs_of("tcgen05", "sm_100a", 8)
    ran = []
    with ThreadPoolExecutor(2) as helpers:
        real_submit = helpers.submit
        monkeypatch.setattr(helpers, "submit", lambda fn, *args: ran.append("module") or real_submit(fn, *args))
        out = C.compile_many(jobs, workers=2, helpers=helpers, submitted=lambda: ran.append("submitted"))
    # two modules handed to the helpers, then the caller told (the sweep's plan waits for it)
    assert ran == ["module", "module", "submitted"] and all(c.error is None and c.cubin_path.exists() for c in out)
    # every job cached now: nothing goes out, and the caller is told at once (the sweep's plan does not wait on)
    again = C.compile_many(jobs, workers=2, helpers=None, submitted=lambda: ran.append("nothing to hand out"))
    assert ran[3:] == ["nothing to hand out"] and all(c.cached for c in again)


def test_a_group_of_cheap_kernels_goes_out_in_modules_of_at_least_a_share_of_the_dearest():
    """240 dear kernels of one arch and 40 cheap ones (a tenth of the cost each) of another on 16 workers: the dear ones
    in 30 modules of 8 (the count rule), the cheap ones, whose 10 modules of 4 would each cost a twentieth of a dear
    module, in round(40 * 0.1 / (8 * MIN_MODULE_SHARE)) = 2 modules of 20 (each module starts a disassembler); a cheap
    group that the share allows as many modules as the count rule keeps them."""
    dear = [C.CompileJob(f"k{i}", "x" * 100, "sm_90a") for i in range(240)]
    cheap = [C.CompileJob(f"t{i}", "y" * 32, "sm_100a") for i in range(40)]  # 32^2 / 100^2: about a tenth
    modules = C.modules_to_compile([(i, j, None) for i, j in enumerate(dear + cheap)], toolchain.default(), workers=16)
    sizes = {arch: sorted(len(m) for m in modules if m[0][1].arch == arch) for arch in ("sm_90a", "sm_100a")}
    assert sizes == {"sm_90a": [8] * 30, "sm_100a": [20, 20]}
    alone = C.modules_to_compile([(i, j, None) for i, j in enumerate(cheap)], toolchain.default(), workers=16)
    assert sorted(len(m) for m in alone) == [4] * 10  # its own dearest: the count rule alone
    # a group so cheap that the share would put it in one module over the cap: KERNELS_PER_MODULE at most, 200 kernels
    # in 7 modules
    many = [C.CompileJob(f"c{i}", "y" * 10, "sm_100a") for i in range(200)]
    capped = C.modules_to_compile([(i, j, None) for i, j in enumerate(dear + many)], toolchain.default(), workers=16)
    cheap_sizes = [len(m) for m in capped if m[0][1].arch == "sm_100a"]
    assert max(cheap_sizes) <= C.KERNELS_PER_MODULE and len(cheap_sizes) == -(-200 // C.KERNELS_PER_MODULE)
    # kernels of no estimated cost (empty sources): the count rule, no division by zero
    empty = [C.CompileJob(f"e{i}", "", "sm_90a") for i in range(40)]
    assert sorted(len(m) for m in C.modules_to_compile([(i, j, None) for i, j in enumerate(empty)],
                                                        toolchain.default(), workers=16)) == [4] * 10
