"""The toolchain axis on the CPU (README, "Toolchain axis"): the ctypes NVRTC path against cuda.bindings, the PTX
path, the cache key, kernel folders and their manifests, the environment record and compare's header, and every
bad option refused with one line and exit 2 before anything is compiled."""
import json
import re
import shutil
from pathlib import Path

import pytest

from harness import cli, plan, sweep
from harness.enums import ExitCode, ToolchainKind
from harness.families.wgmma import forms as wgmma
from harness.families.wgmma import kernel as wgmma_kernel
from harness.plan import Plan
from harness.records import compare, results
from harness.run import compile as C, kernel_folder, sass, toolchain as T
from tests.run import simsweep
from tests.simulated import fake_gpus

B1 = ["--family", "wgmma", "--kind", "b1", "--n", "8"]  # two small kernels (SS, RS)
KEYS = [wgmma.KernelKey("tf32", 8, "f32", "SS"), wgmma.KernelKey("s8", 16, "s32", "RS")]


@pytest.fixture(scope="module", autouse=True)
def _private_cache(tmp_path_factory):
    """One compile cache for the module: each kernel compiles once here (the cache key keeps toolchains apart)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TC_HARNESS_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


def run_cli(capsys, *argv):
    """(exit status, stdout, stderr lines)."""
    rc = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, [ln for ln in out.err.splitlines() if ln.strip()]


# ---------------------------------------------------------------------------------------------------- compiling

@pytest.mark.parametrize("output", [T.CUBIN, T.PTX])
def test_ctypes_nvrtc_gives_the_bytes_cuda_bindings_gives(output, tmp_path):
    """The same library (the NVRTC cuda.bindings binds), loaded with ctypes: byte-identical modules."""
    lib = T.bound_library_path()
    for key in KEYS:
        src = wgmma_kernel.source(key)
        target = "sm_90a" if output == T.CUBIN else "compute_90a"
        via_bindings, log_b = T.bindings_compile(src, key.name, target, C.DEFAULT_OPTIONS, output)
        via_ctypes, log_c = T.ctypes_compile(lib, src, key.name, target, C.DEFAULT_OPTIONS, output)
        assert via_bindings and via_bindings == via_ctypes and log_b == log_c, key.name
    if output == T.CUBIN:
        assert via_ctypes[:4] == b"\x7fELF"
        cubin = tmp_path / f"{key.name}.cubin"
        cubin.write_bytes(via_ctypes)
        assert sass.verify(cubin, wgmma_kernel.sass_check(key)).ok


def test_ctypes_nvrtc_reports_a_rejection_with_the_log():
    bad = wgmma_kernel.source(KEYS[0]).replace("wgmma.fence.sync.aligned", "wgmma.bogus")
    data, log = T.ctypes_compile(T.bound_library_path(), bad, "bad", "sm_90a", C.DEFAULT_OPTIONS)
    assert data is None and "error" in log.lower()


def test_the_default_toolchain_names_itself():
    tc = T.default()
    assert tc.kind is ToolchainKind.NVRTC and tc.bindings and tc.library.version == C.nvrtc_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", tc.library.build) and tc.library.build.startswith(tc.library.version + ".")
    assert re.fullmatch(r"\d+\.\d+", tc.ptx_isa) and 90 in tc.archs
    assert tc.record() == {"toolchain": "nvrtc", "nvrtc": tc.library.version, "nvrtc_build": tc.library.build,
                           "nvrtc_library": tc.library.path, "ptx_isa": tc.ptx_isa}


def test_the_cache_key_names_the_toolchain():
    job = C.CompileJob(KEYS[0].name, wgmma_kernel.source(KEYS[0]), "sm_90a")
    tc = T.default()
    jit = T.resolve(ToolchainKind.DRIVER_JIT)
    other_build = T.Toolchain(tc.kind, T.NvrtcLibrary(tc.library.path, tc.library.version, "99.9.1"), tc.ptx_isa,
                              tc.archs)
    moved = T.Toolchain(tc.kind, T.NvrtcLibrary("/elsewhere/libnvrtc.so", tc.library.version, tc.library.build),
                        tc.ptx_isa, tc.archs)
    assert len({job.key(tc), job.key(jit), job.key(other_build)}) == 3
    assert job.key(moved) == job.key(tc)  # one build is one compiler, wherever it lies


def test_the_ptx_toolchain_writes_ptx_for_the_virtual_arch_and_caches_it_apart():
    jit = T.resolve(ToolchainKind.DRIVER_JIT)
    job = C.CompileJob(KEYS[0].name, wgmma_kernel.source(KEYS[0]), "sm_90a")
    ptx, cubin = C.compile_one(job, jit), C.compile_one(job)
    assert ptx.cubin_path.suffix == ".ptx" and cubin.cubin_path.suffix == ".cubin"
    text = ptx.cubin_path.read_text()
    assert T.ptx_header(text) == (jit.ptx_isa, "sm_90a") and "wgmma.mma_async" in text
    assert jit.target("sm_100a") == "compute_100a" and T.default().target("sm_100a") == "sm_100a"


def test_the_driver_check_follows_nvidias_ptx_table():
    tc = T.default()
    jit = lambda isa: T.Toolchain(ToolchainKind.DRIVER_JIT, tc.library, isa, tc.archs)  # noqa: E731
    T.check_driver(jit("9.0"), 13000)
    T.check_driver(jit("8.7"), 12080)
    T.check_driver(T.Toolchain(ToolchainKind.NVRTC, tc.library, "9.9", tc.archs), 12000)  # cubins: no JIT
    with pytest.raises(T.ToolchainError, match=r"CUDA 12\.6.*PTX ISA 8\.7.*CUDA 12\.8 or later.*--nvrtc 12\.6"):
        T.check_driver(jit("8.7"), 12060)
    need, exact = T.driver_needed_for_ptx("9.9")  # newer than the table: a bound, not a value
    assert not exact and need >= 13000
    with pytest.raises(T.ToolchainError, match="newer than CUDA"):
        T.check_driver(jit("9.9"), need)


# ---------------------------------------------------------------------------------------------------- bad options

def no_compiling(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("compiled although the options are bad")
    monkeypatch.setattr(C, "compile_many", refuse)


@pytest.mark.parametrize("argv, says", [
    (["--nvrtc", "/nonexistent/libnvrtc.so.12"], "no such file or folder"),
    (["--nvrtc", "12.7"], "no NVRTC 12.7 here"),
    (["--nvrtc", ""], "give a libnvrtc.so file"),
    (["--toolchain", "jit"], "invalid choice: 'jit'"),
    (["--kernels", "/nonexistent/kernels"], "no such folder"),
])
def test_bad_toolchain_options_exit_2_with_one_line(argv, says, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TC_HARNESS_NVRTC_DIR", str(tmp_path / "no-libraries"))
    no_compiling(monkeypatch)
    for cmd in (["sweep", "--out", tmp_path / "r.jsonl"], ["compile", "--out", tmp_path / "k"]):
        if "--kernels" in argv and cmd[0] == "compile":
            continue
        rc, _, err = run_cli(capsys, *cmd, *B1, *argv)
        assert rc == ExitCode.USAGE and len(err) == 1 and err[0].startswith(f"{cmd[0]}: ") and says in err[0], err
        assert not (tmp_path / "r.jsonl").exists() and not (tmp_path / "k").exists()


def test_a_file_that_is_no_nvrtc_and_a_folder_without_one_are_refused(capsys, monkeypatch, tmp_path):
    no_compiling(monkeypatch)
    junk = tmp_path / "libnvrtc.so.12"
    junk.write_bytes(b"not a library")
    rc, _, err = run_cli(capsys, "sweep", *B1, "--nvrtc", junk, "--out", tmp_path / "r.jsonl")
    assert rc == 2 and len(err) == 1 and "cannot load" in err[0]
    (tmp_path / "empty").mkdir()
    rc, _, err = run_cli(capsys, "compile", *B1, "--nvrtc", tmp_path / "empty", "--out", tmp_path / "k")
    assert rc == 2 and len(err) == 1 and "no libnvrtc.so in this folder" in err[0]


def test_nvrtc_is_found_by_folder_and_by_version(tmp_path, monkeypatch):
    bound = Path(T.bound_library_path())
    wheel = tmp_path / "root" / "13.x"  # as `pip install --target ROOT/13.x nvidia-cuda-nvrtc` lays it out
    (wheel / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    (wheel / "nvidia" / "cu13" / "lib" / bound.name).symlink_to(bound)
    assert T.find_library(str(wheel)).path == str(bound)
    monkeypatch.setenv("TC_HARNESS_NVRTC_DIR", str(tmp_path / "root"))
    version = T.bound_library().version
    assert T.find_library(version).path == str(bound) == T.find_library(version.split(".")[0]).path
    (wheel / "lib").mkdir()
    (wheel / "lib" / "libnvrtc.so.12").write_bytes(b"another")
    with pytest.raises(T.ToolchainError, match="2 NVRTC libraries in this folder"):
        T.find_library(str(wheel))


def test_an_arch_the_nvrtc_cannot_build_is_refused_before_compiling(capsys, monkeypatch, tmp_path):
    """As NVRTC 12.8 refuses sm_103a (tests/test_nvrtc_versions.py shows it with the real library)."""
    no_compiling(monkeypatch)
    monkeypatch.setattr(T.Toolchain, "cannot_build",
                        lambda self, archs: {a: "nvrtc: error: invalid value for --gpu-architecture (-arch)"
                                             for a in archs if a == "sm_103a"})
    rc, _, err = run_cli(capsys, "sweep", "--family", "tcgen05", "--kind", "mxf4", "--out", tmp_path / "r.jsonl")
    assert rc == 2 and len(err) == 1 and "cannot build sm_103a" in err[0] and "tcgen05" in err[0], err
    assert not (tmp_path / "r.jsonl").exists()
    rc, _, err = run_cli(capsys, "compile", "--kind", "b1", "--kind", "mxf4", "--out", tmp_path / "k")
    assert rc == 2 and len(err) == 1 and "give --family mma_sync --family wgmma or another --nvrtc" in err[0], err


def test_a_driver_older_than_the_ptx_is_refused_on_a_gpu_machine(monkeypatch, tmp_path):
    from harness.run import gpu
    p = plan.make(plan.Selection(families=("wgmma",), kinds=("b1",), n_values=(8,)), {"wgmma": "sm_90a"})
    fake_gpus.install(monkeypatch, ["sm_90a"])
    info = dict(gpu.device_info(0), driver=12060)
    monkeypatch.setattr(gpu, "device_info", lambda index=0: info if index == 0 else None)
    jit = T.resolve(ToolchainKind.DRIVER_JIT)
    cfg = sweep.SweepConfig(out_path=tmp_path / "r.jsonl", backend=fake_gpus.BACKEND, toolchain=jit)
    with pytest.raises(sweep.SweepError, match=r"GPU 0: the driver here is CUDA 12\.6.*cannot load PTX ISA"):
        sweep.execute(p, cfg, log=lambda m: None)
    assert not (tmp_path / "r.jsonl").exists()


# ---------------------------------------------------------------------------------------------------- kernel folders

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("built") / "kernels"
    assert cli.main(["compile", *B1, "--toolchain", "driver-jit", "--out", str(out)]) == 0
    return out


@pytest.fixture
def folder(built, tmp_path):
    """A fresh copy of a driver-jit kernel folder of the b1 N = 8 kernels, for a test to tamper with."""
    return Path(shutil.copytree(built, tmp_path / "kernels"))


def test_compile_writes_modules_and_a_manifest_naming_the_toolchain(built, tmp_path, capsys):
    rc, text, _ = run_cli(capsys, "compile", *B1, "--toolchain", "driver-jit", "--out", tmp_path / "k")
    assert rc == 0 and f"sweep --kernels {tmp_path / 'k'} --family wgmma --kind b1 --n 8" in text
    assert "2 kernels (2 for sm_90a) with driver-jit (NVRTC" in text
    folder = built
    m = json.loads((folder / "manifest.json").read_text())
    jit = T.resolve(ToolchainKind.DRIVER_JIT)
    assert m["format"] == kernel_folder.FORMAT and m["selection"] == "--family wgmma --kind b1 --n 8"
    assert {k: v for k, v in m["toolchain"].items() if k != "archs"} == jit.record()
    assert sorted(k["file"] for k in m["kernels"]) == sorted(p.name for p in folder.glob("*.ptx"))
    for k in m["kernels"]:
        data = (folder / k["file"]).read_bytes()
        assert kernel_folder.digest(data) == k["sha256"] and T.ptx_header(data) == (jit.ptx_isa, "sm_90a")


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_sweep_launches_a_matching_folder_and_names_it(folder, capsys, tmp_path, monkeypatch):
    no_compiling(monkeypatch)
    rc, _, err = run_cli(capsys, "sweep", "--kernels", folder, *B1, "--out", tmp_path / "r.jsonl")
    assert rc == ExitCode.NOTHING_RAN, err
    env = results.load(tmp_path / "r.jsonl")[0]
    assert env["toolchain"] == "driver-jit" and env["kernels_dir"] == str(folder)
    assert env["ptx_isa"] == T.resolve(ToolchainKind.DRIVER_JIT).ptx_isa and env["kernels_host"]
    # a sub-selection of the folder is fine; --toolchain may repeat what the folder holds
    rc, _, err = run_cli(capsys, "sweep", "--kernels", folder, *B1, "--a-src", "SS", "--toolchain", "driver-jit",
                         "--out", tmp_path / "r2.jsonl")
    assert rc == ExitCode.NOTHING_RAN, err


def edit_manifest(folder, change):
    m = json.loads((folder / "manifest.json").read_text())
    change(m)
    (folder / "manifest.json").write_text(json.dumps(m))


def tamper(folder, how):
    first = sorted(folder.glob("*.ptx"))[0]
    if how == "bytes":
        first.write_bytes(first.read_bytes() + b"\n// changed\n")
    elif how == "missing":
        first.unlink()
    elif how == "source":
        edit_manifest(folder, lambda m: m["kernels"][0].update(source_sha256="0" * 64))
    elif how == "options":
        edit_manifest(folder, lambda m: m["kernels"][0].update(options=["-G"]))
    elif how == "format":
        edit_manifest(folder, lambda m: m.update(format="something-else"))
    elif how == "version":
        edit_manifest(folder, lambda m: m.update(version=2))  # a folder of before each kernel had its options
    elif how == "malformed":
        edit_manifest(folder, lambda m: m.pop("toolchain"))
    elif how == "json":
        (folder / "manifest.json").write_text("{not json")
    elif how == "no-manifest":
        (folder / "manifest.json").unlink()


@pytest.mark.parametrize("how, says", [
    ("bytes", "differ from the manifest's sha256"),
    ("missing", "the manifest names it and the folder lacks it"),
    ("source", "compiled from another source than this harness writes"),
    ("options", "compiled with options -G"),
    ("format", "is not a kernel folder's manifest"),
    ("version", "is version 2; this harness reads version 3"),
    ("malformed", "manifest.json is malformed"),
    ("json", "manifest.json is not readable JSON"),
    ("no-manifest", "has no manifest.json: not a kernel folder"),
])
def test_a_manifest_that_does_not_match_is_refused_in_one_line(folder, how, says):
    p = plan.make(plan.Selection(families=("wgmma",), kinds=("b1",), n_values=(8,)))
    kernels = [(k, C.compile_job(k)) for k in sweep.plan_kernels(p)]
    kernel_folder.load(folder).check(kernels)  # untouched, it matches
    tamper(folder, how)
    with pytest.raises(kernel_folder.KernelFolderError) as e:
        kernel_folder.load(folder).check(kernels)
    assert says in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("how, argv, says", [
    (None, ["--family", "wgmma", "--kind", "b1"], "has no wgmma_b1_m64n16k256_s32_SS for sm_90a"),
    (None, [*B1, "--nvrtc", "13"], "leave out --nvrtc"),
    (None, [*B1, "--toolchain", "nvrtc"], "--toolchain nvrtc, but --kernels"),
    ("bytes", B1, "differ from the manifest's sha256"),
    ("version", B1, "is version 2; this harness reads version 3"),
])
def test_sweep_refuses_a_folder_that_does_not_match_with_one_line(folder, how, argv, says, capsys, tmp_path,
                                                                  monkeypatch):
    no_compiling(monkeypatch)
    tamper(folder, how)
    rc, _, err = run_cli(capsys, "sweep", "--kernels", folder, *argv, "--out", tmp_path / "r.jsonl")
    assert rc == ExitCode.USAGE and len(err) == 1 and err[0].startswith("sweep: ") and str(folder) in err[0] \
        and says in err[0], err
    assert not (tmp_path / "r.jsonl").exists()


def test_compile_replaces_a_kernel_folder_and_refuses_any_other_folder(folder, capsys, tmp_path):
    rc, _, err = run_cli(capsys, "compile", *B1, "--a-src", "SS", "--out", folder)  # now nvrtc cubins, SS only
    assert rc == 0, err
    assert [p.suffix for p in folder.iterdir() if p.name != "manifest.json"] == [".cubin"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    rc, _, err = run_cli(capsys, "compile", *B1, "--out", other)
    assert rc == 2 and len(err) == 1 and "is no kernel folder" in err[0]
    rc, _, err = run_cli(capsys, "compile", *B1, "--out", other / "notes.txt")
    assert rc == 2 and len(err) == 1 and "is a file" in err[0]


def test_a_kernel_nvrtc_rejected_travels_in_the_folder_as_a_compile_error(tmp_path, monkeypatch, capsys):
    p = plan.make(plan.Selection(families=("wgmma",), kinds=("b1",), n_values=(8,)))
    broken = p.work[0][0].form
    real = wgmma_kernel.source
    monkeypatch.setattr(wgmma_kernel, "source",
                        lambda k: real(k).replace("wgmma.fence.sync.aligned", "wgmma.bogus") if k == broken else real(k))
    rc, text, _ = run_cli(capsys, "compile", *B1, "--out", tmp_path / "k")
    assert rc == ExitCode.FAILED and f"NVRTC rejected {broken.name} for sm_90a" in text
    assert (tmp_path / "k" / kernel_folder.ERRORS / f"{broken.name}-sm_90a" / "nvrtc.log").exists()
    summary = sweep.execute(p, sweep.SweepConfig(out_path=tmp_path / "r.jsonl",
                                                 kernels=kernel_folder.load(tmp_path / "k")), log=lambda m: None)
    assert summary["compile-error"] == len(p.work[0][1]) and summary["compile_errors"][0]["kernel"] == broken.name


# ---------------------------------------------------------------------------------------------------- records

def test_the_environment_record_names_the_toolchain(tmp_path, capsys, monkeypatch):
    fake_gpus.hide_real_gpus(monkeypatch)
    rc, _, err = run_cli(capsys, "sweep", *B1, "--toolchain", "driver-jit", "--out", tmp_path / "r.jsonl")
    assert rc == ExitCode.NOTHING_RAN, err
    env = results.load(tmp_path / "r.jsonl")[0]
    assert env["schema"] == results.SCHEMA == 3
    assert {k: env[k] for k in T.default().record()} == T.resolve(ToolchainKind.DRIVER_JIT).record()


def test_resume_refuses_results_of_another_toolchain(tmp_path, capsys, monkeypatch):
    fake_gpus.hide_real_gpus(monkeypatch)
    out = tmp_path / "r.jsonl"
    assert run_cli(capsys, "sweep", *B1, "--out", out)[0] == ExitCode.NOTHING_RAN
    no_compiling(monkeypatch)
    rc, _, err = run_cli(capsys, "sweep", *B1, "--toolchain", "driver-jit", "--out", out, "--resume")
    assert rc == 2 and len(err) == 1 and "compiled by nvrtc" in err[0] and "this run by driver-jit" in err[0], err


def results_file(path, env_extra, statuses):
    env = {"type": "environment", "schema": results.SCHEMA, "date": "x", "nvrtc": "13.0", **env_extra}
    w = results.ResultsWriter(path, env)
    w.write_lines(results.CaseLines([{"id": cid, "kernel": "k", "status": st} for cid, st in statuses.items()]))
    w.close({"cases": len(statuses)})
    return path


def test_compare_names_both_toolchains_and_still_reports_regressions(tmp_path, capsys):
    old = results_file(tmp_path / "old.jsonl", {}, {"a": "pass", "b": "pass"})  # schema-2 style: no toolchain
    new = results_file(tmp_path / "new.jsonl", {"toolchain": "driver-jit", "nvrtc_build": "13.0.88",
                                                "ptx_isa": "9.0", "driver": "580.159.04"},
                       {"a": "pass", "b": "compile-error"})
    r = compare.compare(old, new)
    assert r["toolchains"] == {"old": "nvrtc (NVRTC 13.0)", "differ": True,
                               "new": "driver-jit (NVRTC 13.0, V13.0.88, PTX ISA 9.0, JIT of driver 580.159.04)"}
    assert r["regressed"] and [x["id"] for x in r["newly_failing"]] == ["b"]
    rc, text, _ = run_cli(capsys, "compare", old, new)
    lines = text.splitlines()
    assert rc == ExitCode.FAILED and lines[1] == ("toolchains differ: nvrtc (NVRTC 13.0) -> driver-jit (NVRTC 13.0, "
                                                  "V13.0.88, PTX ISA 9.0, JIT of driver 580.159.04)")
    assert lines[-1] == "REGRESSED"
    same = results_file(tmp_path / "same.jsonl", {"toolchain": "nvrtc", "nvrtc_build": "13.0.88"},
                        {"a": "pass", "b": "pass"})
    r = compare.compare(old, same)  # an older file names no build: the same NVRTC 13.0 cubins
    assert not r["toolchains"]["differ"] and not r["regressed"]
    assert compare.render(r).splitlines()[1] == "toolchain: nvrtc (NVRTC 13.0, V13.0.88) on both sides"


# ---------------------------------------------------------------------------------------------------- the engine

@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_a_driver_jit_sweep_hands_the_gpu_ptx_and_a_jit_rejection_is_a_compile_error(monkeypatch, tmp_path):
    """Simulated sm_90a GPUs whose driver takes only PTX (tests/simulated/jit_device.py): every case runs through
    the real engine; a kernel the JIT rejects has every case recorded compile-error, without bisection."""
    p = plan.make(plan.Selection(families=("wgmma",), kinds=("b1",), n_values=(8,)), {"wgmma": "sm_90a"})
    (k1, c1), (k2, c2) = p.work[0], p.work[1]
    work = Plan([(k1, c1[:2]), (k2, c2[:2])])
    simsweep.warm_wgmma_oracle(work)
    fake_gpus.install(monkeypatch, ["sm_90a"])
    monkeypatch.setenv("TC_SIM_JIT_REJECT", k2.name)
    logs = []
    cfg = sweep.SweepConfig(out_path=tmp_path / "r.jsonl", workers=1, backend="tests.simulated.jit_device",
                            toolchain=T.resolve(ToolchainKind.DRIVER_JIT))
    summary = sweep.execute(work, cfg, log=logs.append)
    env, recs, _ = results.load(tmp_path / "r.jsonl")
    assert env["toolchain"] == "driver-jit"
    assert [recs[c.id]["status"] for c in c1[:2]] == ["pass"] * 2
    assert {recs[c.id]["status"] for c in c2[:2]} == {"compile-error"}
    assert "CUDA_ERROR_INVALID_PTX" in recs[c2[0].id]["error"]
    assert summary["compile-error"] == 2 and sweep.exit_code(summary) == ExitCode.FAILED
    assert not any("isolating" in m for m in logs)


def test_a_toolchains_probe_that_built_is_remembered_in_the_compile_cache(tmp_path, monkeypatch):
    """A warm sweep does not compile the probe kernel again (a file per toolchain build and arch in the cache); without
    that file it does."""
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path))
    tc = T.default()
    T._probe_failure.cache_clear()
    assert tc.cannot_build(["sm_90a"]) == {} and len(list(tmp_path.glob("probe-sm_90a-*.ok"))) == 1
    calls = []
    monkeypatch.setattr(T.Toolchain, "compile", lambda self, *a: calls.append(a) or (None, "error: planted"))
    T._probe_failure.cache_clear()
    assert tc.cannot_build(["sm_90a"]) == {} and calls == []
    for f in tmp_path.glob("probe-*.ok"):
        f.unlink()
    T._probe_failure.cache_clear()
    assert tc.cannot_build(["sm_90a"]) == {"sm_90a": "error: planted"} and len(calls) == 1
    T._probe_failure.cache_clear()


def test_a_toolchains_probe_runs_where_no_compile_cache_can_be_made(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "file" / "cache"))  # under a file: mkdir fails
    T._probe_failure.cache_clear()
    assert T.default().cannot_build(["sm_90a"]) == {}
    T._probe_failure.cache_clear()
