"""Every environment problem is one line on stderr and exit 2, or a documented fallback with a one-line note
(docs/environment.md), through the command line in a process of its own: the cache folder (TC_HARNESS_CACHE) read-only,
uncreatable, a file, /dev/null or empty; HOME unusable; TC_HARNESS_FAMILIES malformed; no NVRTC library. Nothing is
written where it must not be (the current folder, /nonexistent), and nothing is compiled or launched before the
refusal."""
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# a selection that plans two kernels: where a refusal failed to come, the sweep would go on to compile them
SWEEP = ["sweep", "--family", "wgmma", "--kind", "s8", "--n", "8", "--no-controls"]
# cuda.pathfinder finds no libnvrtc.so (what it raises where none is installed), for every process of the run: the
# harness's own path to NVRTC (cuda.bindings asks cuda.pathfinder) is the one under test
HIDE_NVRTC = '''import cuda.pathfinder as _pf
_real = _pf.load_nvidia_dynamic_lib
def _hidden(name, *a, **k):
    if name == "nvrtc":
        raise _pf.DynamicLibNotFoundError("Failure finding libnvrtc.so: hidden by the test")
    return _real(name, *a, **k)
_pf.load_nvidia_dynamic_lib = _hidden
'''


def cli(args, cwd, env_changes, timeout=180):
    env = {k: v for k, v in os.environ.items() if k not in ("TC_HARNESS_CACHE", "TC_HARNESS_FAMILIES")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env_changes.pop("PYTHONPATH", None), str(ROOT)]))
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def cli_in_process(args, cwd, env_changes, monkeypatch):
    """cli() in this process (harness.cli.main, as `python -m harness` runs it, less its signal handlers): the classes'
    every case runs so in CI, each also in a process of its own under `-m slow`, and one of each class always."""
    from tests import cli_in_process as in_process
    monkeypatch.delenv("TC_HARNESS_CACHE", raising=False)
    monkeypatch.delenv("TC_HARNESS_FAMILIES", raising=False)
    for k, v in env_changes.items():
        if v is None:
            monkeypatch.delenv(k, raising=False)
        else:
            monkeypatch.setenv(k, v)
    monkeypatch.chdir(cwd)
    return in_process.run(*args)


VIA = ["in-process", pytest.param("process", marks=pytest.mark.slow)]


def run_via(via, args, cwd, env_changes, monkeypatch):
    return cli(args, cwd, env_changes) if via == "process" else cli_in_process(args, cwd, env_changes, monkeypatch)


def one_line_refusal(r, *words):
    """Exit 2, one line on stderr naming `words`, no traceback, nothing on stdout."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    assert r.stdout == ""
    return lines[0]


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def cwd(tmp_path):
    d = tmp_path / "cwd"
    d.mkdir()
    return d


def _read_only(tmp_path: Path) -> str:
    """A folder no file can be made in, whoever runs the test (root writes into a mode-555 folder: /proc's folders
    refuse everyone)."""
    if os.geteuid() == 0:
        return "/proc/self"
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    return str(d)


CACHES = {
    "empty": lambda t: ("", "is empty"),
    "blank": lambda t: ("  ", "is empty"),
    "a file": lambda t: (str(t / "afile"), "is a file"),
    "/dev/null": lambda t: ("/dev/null", "is not a folder"),
    "uncreatable": lambda t: (str(t / "afile" / "cache"), "cannot be made"),
    "read-only": lambda t: (_read_only(t), "cannot be written"),
}


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("case", CACHES)
def test_an_unusable_cache_folder_is_one_line_and_exit_2(case, via, tmp_path, cwd, monkeypatch):
    (tmp_path / "afile").write_text("not a folder\n")
    value, why = CACHES[case](tmp_path)
    before = tree(tmp_path)
    r = run_via(via, [*SWEEP, "--out", str(tmp_path / "r.jsonl")], cwd, {"TC_HARNESS_CACHE": value}, monkeypatch)
    line = one_line_refusal(r, "TC_HARNESS_CACHE", why)
    assert line.startswith("sweep: ")
    assert tree(tmp_path) == before  # no results file, no cache, nothing in the current folder
    assert not os.path.exists("/dev/null/x")


def test_an_empty_cache_variable_in_a_process_of_its_own(tmp_path, cwd):
    """TC_HARNESS_CACHE='' once wrote the whole cache into the current folder."""
    r = cli([*SWEEP, "--out", str(tmp_path / "r.jsonl")], cwd, {"TC_HARNESS_CACHE": ""})
    one_line_refusal(r, "TC_HARNESS_CACHE", "is empty")
    assert tree(cwd) == [] and not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("home", ["missing", "a file", "empty", "relative"])
def test_an_unusable_home_runs_on_a_temporary_cache_with_a_note(home, via, tmp_path, cwd, monkeypatch):
    """Fallback: HOME gives no cache folder (a container's HOME=/nonexistent, a service's unset HOME): the run goes on
    in a temporary cache, says so in one line, removes it at exit, and creates nothing under HOME or here."""
    missing = Path(f"/nonexistent-tc-harness-{uuid.uuid4().hex[:8]}")
    (tmp_path / "afile").write_text("x\n")
    value = {"missing": str(missing), "a file": str(tmp_path / "afile"), "empty": "", "relative": "relative/home"}[home]
    changes = {"HOME": value}
    out = tmp_path / "r.jsonl"
    # a refused selection after the cache is settled: the note, the temporary cache gone, nothing compiled
    r = run_via(via, [*SWEEP[:-1], "--match", "no-such-case", "--out", str(out)], cwd, changes, monkeypatch)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len(lines) == 2 and "no cache folder" in lines[0] and "temporary" in lines[0], lines
    temporary = lines[0].split("using the temporary ")[1].split(",")[0]
    assert not os.path.exists(temporary)  # removed at exit
    assert not missing.exists() and tree(cwd) == [] and (tmp_path / "afile").read_text() == "x\n"


def test_a_sweep_under_an_unusable_home_runs_whole(tmp_path, cwd):
    """The fallback is a working run: compiled into the temporary cache (its kernels compile and are SASS-checked),
    recorded, exit 3 (no GPU here) or 0/1, the cache removed, nothing under HOME."""
    missing = Path(f"/nonexistent-tc-harness-{uuid.uuid4().hex[:8]}")
    out = tmp_path / "r.jsonl"
    r = cli([*SWEEP, "--out", str(out)], cwd, {"HOME": str(missing)})
    assert "Traceback" not in r.stderr and r.returncode in (0, 1, 3), r.stderr
    assert "no cache folder" in r.stderr.splitlines()[0]
    assert "2 compiled" in r.stderr  # compiled here, not found in anyone's cache
    temporary = r.stderr.splitlines()[0].split("using the temporary ")[1].split(",")[0]
    assert not os.path.exists(temporary) and not missing.exists() and tree(cwd) == []
    assert out.read_text().count('"type": "case"') > 0


FAMILIES = {
    "no =": ("toy", "is not name=module"),
    "no name": ("=tests.simulated.toy_family", "is not name=module"),
    "no module": ("toy=", "is not name=module"),
    "spaces in the module": ("toy=tests simulated", "is not name=module"),
    "named twice": ("toy=tests.simulated.toy_family,toy=tests.simulated.toy_family", "named twice"),
    "does not import": ("toy=no_such_package_tc.fam", "does not import (ModuleNotFoundError"),
    "raises on import": ("toy=tests.simulated.broken_family_module", "does not import (RuntimeError"),
    "no FAMILY": ("toy=tests.simulated.fake_gpus", "has no FAMILY"),
}


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("case", FAMILIES)
def test_a_malformed_families_variable_is_one_line_and_exit_2(case, via, tmp_path, cwd, monkeypatch):
    value, why = FAMILIES[case]
    r = run_via(via, [*SWEEP, "--out", str(tmp_path / "r.jsonl")], cwd,
                {"TC_HARNESS_FAMILIES": value, "TC_HARNESS_CACHE": str(tmp_path / "cache")}, monkeypatch)
    one_line_refusal(r, "TC_HARNESS_FAMILIES", why)
    assert not (tmp_path / "r.jsonl").exists() and not (tmp_path / "cache").exists()


def test_a_family_that_does_not_import_in_a_process_of_its_own(tmp_path, cwd):
    r = cli([*SWEEP, "--out", str(tmp_path / "r.jsonl")], cwd, {"TC_HARNESS_FAMILIES": "toy=no_such_package_tc.fam"})
    one_line_refusal(r, "TC_HARNESS_FAMILIES", "does not import (ModuleNotFoundError")


def test_a_wellformed_families_variable_is_taken(tmp_path, cwd):
    """The negative control of the above: the toy family's variable passes the check (its name is a --family choice)."""
    r = cli(["sweep", "--family", "toy", "--out", str(tmp_path / "r.jsonl"), "--match", "no-such-case"], cwd,
            {"TC_HARNESS_FAMILIES": "toy=tests.simulated.toy_family", "TC_HARNESS_CACHE": str(tmp_path / "c")})
    line = one_line_refusal(r)
    assert line == "sweep: the selection matches no case"


@pytest.fixture
def no_nvrtc(tmp_path):
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(HIDE_NVRTC)
    return str(shim)


def test_no_nvrtc_is_one_line_saying_what_to_install(no_nvrtc, tmp_path, cwd):
    r = cli([*SWEEP, "--out", str(tmp_path / "r.jsonl")], cwd,
            {"PYTHONPATH": no_nvrtc, "TC_HARNESS_CACHE": str(tmp_path / "cache")})
    one_line_refusal(r, "no NVRTC library", "DynamicLibNotFoundError", "pip install 'cuda-toolkit[nvrtc]==13.*'")
    assert not (tmp_path / "r.jsonl").exists()
    assert not list((tmp_path / "cache").glob("*.cubin"))


def test_toolchains_says_why_it_lists_nothing(no_nvrtc, tmp_path, cwd):
    empty = tmp_path / "nvrtc-roots"
    empty.mkdir()
    r = cli(["toolchains"], cwd, {"PYTHONPATH": no_nvrtc, "TC_HARNESS_NVRTC_DIR": str(empty)})
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "pip install" in r.stderr
    assert "none: no NVRTC library found" in r.stdout


def test_nvrtc_problem_is_none_where_nvrtc_loads():
    """The negative control: here NVRTC loads, and `doctor` would be told nothing is wrong."""
    from harness.run import toolchain
    assert toolchain.nvrtc_problem() is None


@pytest.mark.parametrize("home", ["missing", "relative", "usable", "preset"])
def test_the_gpu_libraries_caches_stay_off_an_unusable_home(home, tmp_path, monkeypatch):
    """CuPy makes $HOME/.cupy/kernel_cache as it is imported and the CUDA driver $HOME/.nv/ComputeCache (seen on an
    H100 node under a HOME that does not exist, and under a relative one in the current folder): where HOME is
    unusable the harness names both in its own cache before any GPU process starts, and takes them back at the end;
    a usable HOME or a variable already set is left alone."""
    from harness import cache
    monkeypatch.delenv("TC_HARNESS_CACHE", raising=False)
    monkeypatch.delenv("CUDA_CACHE_PATH", raising=False)
    monkeypatch.delenv("CUPY_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", {"missing": f"/nonexistent-tc-harness-{uuid.uuid4().hex[:8]}", "relative": "rel/home",
                                "usable": str(tmp_path), "preset": "rel/home"}[home])
    if home == "preset":
        monkeypatch.setenv("CUDA_CACHE_PATH", str(tmp_path / "mine"))
    try:
        cache.settle_cache()
        got = os.environ.get("CUDA_CACHE_PATH")
        if home in ("missing", "relative"):
            assert got == str(cache.cache_dir() / "cuda-compute-cache") and got.startswith(os.environ["TC_HARNESS_CACHE"])
            assert os.environ["CUPY_CACHE_DIR"] == str(cache.cache_dir() / "cupy-kernel-cache")
        else:
            assert got == (str(tmp_path / "mine") if home == "preset" else None)
    finally:
        cache.remove_temporary_cache()
        cache._writable_folder.cache_clear()
    assert os.environ.get("CUDA_CACHE_PATH") == (str(tmp_path / "mine") if home == "preset" else None)
    assert "CUPY_CACHE_DIR" not in os.environ


def test_a_python_without_the_harnesss_dependencies_is_one_line_not_a_traceback(tmp_path):
    """The test command in a Python that lacks the dependencies (the system one, beside the README's venv) names
    them and the install (conftest.py), where each model test would otherwise stop on an ImportError."""
    import conftest
    assert conftest.missing_dependencies() == []
    assert conftest.missing_dependencies((("numpy", "numpy"), ("no_such_module_xyz", "no-such-dist"),
                                          ("no_such_parent.child", "no-such-parent"))) == ["no-such-dist",
                                                                                           "no-such-parent"]
