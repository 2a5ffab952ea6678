"""CI holds itself to harness/environments.py: on every other interpreter of INTERPRETERS the machine has, the package
installs as the README installs it (`pip install -e .`, in a fresh venv of that interpreter), generates every kernel
source of the default sweep byte-identical to this interpreter's, and compiles a sample of every family through
`python -m harness compile`; and with the lowest cuda-bindings and CuPy pyproject.toml admits (environments.LOWEST,
on the lowest interpreter) it generates the same sources and compiles and SASS-checks the sample through
`python -m harness sweep`.

The venvs are kept under the harness cache dir ($TC_HARNESS_CACHE, else ~/.cache/tc-harness)/venvs, one per
(interpreter version, sha256 of pyproject.toml[, lowest]); a missing one is built (a few minutes: the dependencies'
wheels), an existing one gets only the project re-installed (`pip install --no-deps -e .`), once per test run.
An interpreter the machine lacks is a skip naming it, under CI too: the run's summary says which were not found.
"""
from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

from harness import environments, plan, registry
from harness.sweep import plan_kernels

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import venv_key  # noqa: E402  (tools/venv_key.py: what of pyproject.toml a kept venv is made for)

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.spread  # subprocess-bound: each test to whichever xdist worker is free

# one small selection of each family (each of its archs), compiled in each venv
SAMPLES = (plan.Selection(families=("wgmma",), kinds=("tf32",), n_values=(8,)),
           plan.Selection(families=("wgmma_sp",), kinds=("s8",), n_values=(8,)),
           plan.Selection(families=("wgmma_seq",), kinds=("tf32",)),
           plan.Selection(families=("tcgen05",), kinds=("f16",), cta_groups=(1,), a_srcs=("SS",), n_values=(64,)),
           plan.Selection(families=("mma_sync",), kinds=("tf32",)))
INSTALL_TIMEOUT_S = 1800  # a cold venv downloads the dependencies' wheels (~1 GB with the CUDA ones)
RUN_TIMEOUT_S = 300
PRIMARY = f"{sys.version_info.major}.{sys.version_info.minor}"


@dataclass(frozen=True)
class Venv:
    """A venv of one interpreter, for this pyproject.toml: `pins` are installed with the project (the lowest
    versions), or none (what pip picks, as for a user)."""
    version: str  # the interpreter's X.Y
    base: str  # the interpreter it is made from
    pins: tuple[str, ...] = ()

    def __post_init__(self):
        if not re.fullmatch(r"3\.\d+", self.version):
            raise ValueError(f"interpreter version {self.version!r} is not 3.X")
        for pin in self.pins:
            if not re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", pin):
                raise ValueError(f"{pin!r} is not name==version")

    @property
    def folder(self) -> Path:
        full = _full_version(self.base)
        key = venv_key.key(ROOT / "pyproject.toml", "\0".join(self.pins))
        return _cache_root() / "venvs" / f"py{full}-{key}{'-lowest' if self.pins else ''}"

    @property
    def python(self) -> str:
        return str(self.folder / "bin" / "python")


def _cache_root() -> Path:
    return Path(os.environ.get("TC_HARNESS_CACHE", Path.home() / ".cache" / "tc-harness"))


@lru_cache(maxsize=None)
def _full_version(python: str) -> str:
    return subprocess.run([python, "-c", "import platform; print(platform.python_version())"], capture_output=True,
                          text=True, check=True, timeout=60).stdout.strip()


def _reports(python: str, version: str) -> bool:
    try:
        out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == version


@lru_cache(maxsize=None)
def find_interpreter(version: str) -> str | None:
    """An interpreter of `version` on this machine: pyenv's, a `pythonX.Y` on PATH, or `uv python find`'s; each
    asked for its version (a pyenv shim of a version pyenv does not enable runs another one, or fails)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = sorted(pyenv.glob(f"{version}.*/bin/python"), reverse=True) if pyenv.is_dir() else []
    candidates += [p for p in (shutil.which(f"python{version}"),) if p]
    if shutil.which("uv"):
        found = subprocess.run(["uv", "python", "find", version], capture_output=True, text=True, timeout=60)
        candidates += [found.stdout.strip()] if found.returncode == 0 and found.stdout.strip() else []
    return next((str(c) for c in candidates if _reports(str(c), version)), None)


def interpreter_or_skip(version: str) -> str:
    found = find_interpreter(version)
    if found is None:
        # a skip under CI too: the run's summary names each interpreter CI could not find
        pytest.skip(f"Python {version} (environments.INTERPRETERS) is not on this machine: looked in pyenv's "
                    f"versions, for python{version} on PATH and with `uv python find`")
    return found


def _pip(python: str, *args: str, timeout: int) -> None:
    out = subprocess.run([python, "-m", "pip", "--disable-pip-version-check", "-q", *args], capture_output=True,
                         text=True, timeout=timeout, env=_clean_env())
    assert out.returncode == 0, f"{python} -m pip {' '.join(args)}: exit {out.returncode}\n{out.stderr[-3000:]}"


def _clean_env(**extra) -> dict:
    """The environment of a process of a test venv: no PYTHONPATH (the venv's own install is what is tested) and no
    other venv named."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, **extra}


def _run_id() -> str:
    # the same in every xdist worker of one run; a plain run is one process
    return os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid{os.getpid()}"


_UNBUILT: dict = {}  # Venv -> why it could not be built (once per process: a cold build takes minutes)


@lru_cache(maxsize=None)
def ready(env: Venv) -> Venv:
    """`env`, built if missing, with this checkout installed in it (editable, without its dependencies) once per
    test run. Under a lock per venv: the xdist workers that ask for one venv wait for the one that builds it.
    A venv that cannot be built fails its tests under CI; elsewhere (a GPU node without network) they skip, saying
    why."""
    if env in _UNBUILT:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(_UNBUILT[env])
    folder = env.folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / ".tc-harness-built"
        if not done.exists():  # missing, or a build that did not finish: made anew
            try:
                _build(env)
            except (AssertionError, OSError, subprocess.SubprocessError) as e:
                shutil.rmtree(folder, ignore_errors=True)
                _UNBUILT[env] = f"could not build the Python {env.version} venv {folder}: {e}"
                (pytest.fail if os.environ.get("CI") else pytest.skip)(_UNBUILT[env])
            done.write_text(json.dumps({"base": env.base, "pins": env.pins}) + "\n")
        os.utime(done)  # used now: prune_unused leaves it
        installed = folder / f".tc-harness-installed-{_run_id()}"
        if not installed.exists():
            _pip(env.python, "install", "--no-deps", "--no-build-isolation", "-e", str(ROOT), timeout=600)
            for old in folder.glob(".tc-harness-installed-*"):
                old.unlink()
            installed.write_text(str(ROOT) + "\n")
    prune_unused(folder.parent)
    return env


def _build(env: Venv) -> None:
    shutil.rmtree(env.folder, ignore_errors=True)
    made = subprocess.run([env.base, "-m", "venv", str(env.folder)], capture_output=True, text=True, timeout=600,
                          env=_clean_env())
    assert made.returncode == 0, f"{env.base} -m venv: {made.stderr[-2000:]}"
    # setuptools 70.1 or later builds an editable wheel without `wheel` (3.10's venv brings 65.5; 3.12's none)
    _pip(env.python, "install", "--upgrade", "pip", "setuptools>=70.1", timeout=INSTALL_TIMEOUT_S)
    _pip(env.python, "install", "-e", str(ROOT), *env.pins, timeout=INSTALL_TIMEOUT_S)  # as the README does


UNUSED_DAYS = 7


def prune_unused(venvs: Path, days: float = UNUSED_DAYS) -> list[Path]:
    """Remove the venvs under `venvs` no test has used for `days` (each pyproject.toml leaves ~1 GB of them behind);
    one another process holds the lock of is left alone. Returns those removed."""
    import time
    removed = []
    for done in venvs.glob("*/.tc-harness-built"):
        folder = done.parent
        if time.time() - done.stat().st_mtime < days * 86400:
            continue
        with open(f"{folder}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def other_interpreters() -> list[str]:
    return [v for v in environments.INTERPRETERS if v != PRIMARY]


def lowest_venv() -> Venv:
    version = environments.INTERPRETERS[0]
    return Venv(version, interpreter_or_skip(version),
                tuple(f"{name}=={v}" for name, v in sorted(environments.LOWEST.items())))


def venv_of(version: str) -> Venv:
    return ready(Venv(version, interpreter_or_skip(version)))


# ------------------------------------------------------------------------------------------------- what each runs

@lru_cache(maxsize=1)
def primary_sources() -> dict[str, str]:
    spec = importlib.util.spec_from_file_location("tc_kernel_sources", ROOT / "tools" / "kernel_sources.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.digests()


def sources_of(python: str) -> dict[str, str]:
    out = subprocess.run([python, str(ROOT / "tools" / "kernel_sources.py"), "--json"], capture_output=True,
                         text=True, timeout=RUN_TIMEOUT_S, env=_clean_env(), cwd=ROOT.parent)
    assert out.returncode == 0, f"{python} tools/kernel_sources.py: exit {out.returncode}\n{out.stderr[-3000:]}"
    return json.loads(out.stdout)


def assert_same_sources(python: str) -> None:
    theirs, ours = sources_of(python), primary_sources()
    differ = sorted(n for n in ours.keys() & theirs.keys() if ours[n] != theirs[n])
    assert theirs == ours, (f"{python}: kernel sources differ from Python {PRIMARY}'s: {len(differ)} differ "
                            f"({differ[:5]}), {len(ours.keys() - theirs.keys())} missing "
                            f"({sorted(ours.keys() - theirs.keys())[:5]}), {len(theirs.keys() - ours.keys())} extra")


def expected_archs(sel: plan.Selection) -> dict[str, int]:
    counts: dict[str, int] = {}
    for k in plan_kernels(plan.make(sel, {}, None)):
        counts[str(k.arch)] = counts.get(str(k.arch), 0) + 1
    return counts


def harness_cli(python: str, args: list[str], cache: Path) -> subprocess.CompletedProcess:
    """`python -m harness ARGS` from outside the checkout, with a compile cache of its own (every kernel compiled
    by this interpreter's process, none taken from another's cache)."""
    work = cache.parent / "work"
    work.mkdir(exist_ok=True)
    return subprocess.run([python, "-m", "harness", *args], capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          cwd=work, env=_clean_env(TC_HARNESS_CACHE=str(cache)))


def assert_installed_from_this_checkout(python: str) -> None:
    where = subprocess.run([python, "-c", "import sys, harness; print(sys.prefix); print(harness.__file__)"],
                           capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=_clean_env(), cwd=ROOT.parent)
    assert where.returncode == 0, where.stderr[-2000:]
    prefix, module = where.stdout.split()
    assert Path(module).resolve() == (ROOT / "harness" / "__init__.py").resolve() and prefix != sys.prefix, where.stdout


def assert_sample_compiles(python: str, tmp_path: Path) -> None:
    for sel in SAMPLES:
        out_dir = tmp_path / sel.families[0]
        run = harness_cli(python, ["compile", *shlex.split(sel.flags()), "--out", str(out_dir), "--json"],
                          tmp_path / f"cache-{sel.families[0]}")
        assert run.returncode == 0, f"{python} -m harness compile {sel.flags()}: exit {run.returncode}\n" \
                                    f"{run.stdout[-2000:]}{run.stderr[-2000:]}"
        summary = json.loads(run.stdout)
        assert summary["rejected"] == [] and summary["exit"] == 0, summary
        assert summary["by_arch"] == expected_archs(sel) and summary["files"] >= 1, (sel.flags(), summary)
        assert (out_dir / "manifest.json").is_file()


def assert_sample_compiles_and_passes_the_sass_check(python: str, tmp_path: Path) -> None:
    """`python -m harness sweep` of each sample on this CPU machine: every kernel compiled (through cuda.bindings,
    the default toolchain) and SASS-checked, nothing launched (exit 3)."""
    for sel in SAMPLES:
        results = tmp_path / f"{sel.families[0]}.jsonl"
        run = harness_cli(python, ["sweep", *shlex.split(sel.flags()), "--out", str(results)],
                          tmp_path / f"cache-{sel.families[0]}")
        assert run.returncode == 3, f"{python} -m harness sweep {sel.flags()}: exit {run.returncode}, not 3 " \
                                    f"(nothing launched)\n{run.stdout[-2000:]}{run.stderr[-2000:]}"
        summary = json.loads(results.read_text().splitlines()[-1])
        kernels = sum(expected_archs(sel).values())
        assert summary["type"] == "summary" and summary["sass_checked"] is True, summary
        assert summary["compiled"] == kernels and summary["compile-error"] == 0 and "compile_errors" not in summary, \
            (sel.flags(), kernels, summary)
        assert f"SASS: {kernels} kernels checked, 0 lack what they test" in run.stdout + run.stderr, run.stderr[-2000:]


# ------------------------------------------------------------------------------------------------------- the tests

def _pyproject_dependencies() -> tuple[str, list[str]]:
    """(requires-python, [project] dependencies) of pyproject.toml, read without tomllib (3.10 has none)."""
    text = (ROOT / "pyproject.toml").read_text()
    requires = re.search(r'^requires-python\s*=\s*"([^"]+)"', text, re.M).group(1)
    block = re.search(r"^dependencies\s*=\s*\[(.*?)^\]", text, re.M | re.S).group(1)
    return requires, re.findall(r'^\s*"([^"]+)"', block, re.M)


def test_the_declared_environments_are_the_ones_pyproject_admits():
    requires, deps = _pyproject_dependencies()
    lowest = re.fullmatch(r">=\s*(3\.\d+)", requires).group(1)
    minors = [int(v.split(".")[1]) for v in environments.INTERPRETERS]
    assert environments.INTERPRETERS[0] == lowest and minors == list(range(minors[0], minors[0] + len(minors)))
    for name, version in environments.LOWEST.items():  # each lowest version is pyproject's lower bound
        (spec,) = [d for d in deps if re.match(rf"{re.escape(name)}\b", d)]
        assert f">={version}" in spec.replace(" ", ""), (name, version, spec)
    assert {s.families[0] for s in SAMPLES} == set(registry.REGISTRY), "every family needs a sample"
    for sel in SAMPLES:
        assert sum(expected_archs(sel).values()) <= 6, f"the sample {sel.flags()} is not small"


def outcome(call, arg, message: str) -> type:
    """Whether call(arg) skips or fails (with `message`), caught here: a skip that escaped would end the test
    asking as skipped, not failed."""
    with pytest.raises((pytest.skip.Exception, pytest.fail.Exception)) as e:
        call(arg)
    assert re.search(message, str(e.value)), str(e.value)
    return e.type


def test_an_interpreter_the_machine_lacks_is_a_skip_that_names_it(monkeypatch, tmp_path):
    # a pyenv folder whose "3.10.99" is really this interpreter: asked for its version, it is not taken for 3.10
    fake = tmp_path / "pyenv" / "versions" / "3.10.99" / "bin"
    fake.mkdir(parents=True)
    (fake / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no python3.10, no uv
    monkeypatch.setenv("CI", "true")  # a skip under CI too: its summary names what it lacked
    find_interpreter.cache_clear()
    try:
        assert outcome(interpreter_or_skip, "3.10", r"Python 3\.10 \(environments.INTERPRETERS\) is not on") \
            is pytest.skip.Exception
        (fake.parent.parent / f"{PRIMARY}.99" / "bin").mkdir(parents=True)
        (fake.parent.parent / f"{PRIMARY}.99" / "bin" / "python").symlink_to(sys.executable)
        assert interpreter_or_skip(PRIMARY) == str(fake.parent.parent / f"{PRIMARY}.99" / "bin" / "python")
    finally:
        find_interpreter.cache_clear()


def test_a_venv_that_cannot_be_built_fails_under_ci_and_skips_elsewhere(monkeypatch, tmp_path):
    """Its folder removed (no half-built venv is taken for built next time), and tried once per process."""
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path))
    env = Venv(PRIMARY, sys.executable, ("tc-harness-no-such-package==0.0.1",))
    tries = []

    def no_network(venv):
        tries.append(venv)
        venv.folder.mkdir(parents=True)
        raise AssertionError("pip: No matching distribution found")

    monkeypatch.setattr(sys.modules[__name__], "_build", no_network)
    monkeypatch.delenv("CI", raising=False)
    try:
        assert outcome(ready, env, r"could not build the Python 3\.\d+ venv .*No matching") is pytest.skip.Exception
        assert not env.folder.exists() and not (env.folder / ".tc-harness-built").exists()
        monkeypatch.setenv("CI", "true")
        assert outcome(ready, env, "No matching distribution") is pytest.fail.Exception
        assert len(tries) == 1
    finally:
        _UNBUILT.pop(env, None)


def test_a_venv_unused_for_a_week_is_removed_and_a_used_one_kept(tmp_path):
    import time
    old, used, locked = (tmp_path / n for n in ("py3.10.1-old", "py3.10.1-new", "py3.10.1-locked"))
    for folder in (old, used, locked):
        folder.mkdir()
        (folder / ".tc-harness-built").write_text("{}\n")
    week_ago = time.time() - (UNUSED_DAYS + 1) * 86400
    for folder in (old, locked):
        os.utime(folder / ".tc-harness-built", (week_ago, week_ago))
    with open(f"{locked}.lock", "w") as lock:  # another process is using it
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert prune_unused(tmp_path) == [old]
    assert not old.exists() and used.exists() and locked.exists()


def test_the_source_comparison_catches_one_changed_kernel(monkeypatch):
    """The comparison the other interpreters get, run on this one's own digests: a kernel whose source differs, one
    missing, or one extra, each fails it (equal as is: the venvs' tests)."""
    ours = primary_sources()
    assert len(ours) > 100 and all(re.fullmatch(r"[0-9a-f]{64}", d) for d in ours.values())
    name = next(iter(ours))
    for theirs in ({**ours, name: "0" * 64}, {n: d for n, d in ours.items() if n != name}, {**ours, "extra": "0"}):
        monkeypatch.setattr(sys.modules[__name__], "sources_of", lambda python, t=theirs: t)
        with pytest.raises(AssertionError, match="kernel sources differ"):
            assert_same_sources("planted")


@pytest.mark.parametrize("version", other_interpreters())
def test_each_interpreter_generates_every_kernel_source_byte_identical(version):
    env = venv_of(version)
    assert_installed_from_this_checkout(env.python)
    assert_same_sources(env.python)


@pytest.mark.parametrize("version", other_interpreters())
def test_each_interpreter_compiles_a_sample_of_every_family(version, tmp_path):
    assert_sample_compiles(venv_of(version).python, tmp_path)


def lowest_ready() -> Venv:
    env = ready(lowest_venv())
    asked = dict(p.split("==") for p in env.pins)
    got = subprocess.run([env.python, "-c", "import json, importlib.metadata as m, sys; "
                          f"print(json.dumps({{n: m.version(n) for n in {sorted(asked)!r}}}))"],
                         capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=_clean_env())
    assert got.returncode == 0 and json.loads(got.stdout) == asked, (got.stdout, got.stderr[-2000:])
    return env


def test_the_lowest_versions_generate_every_kernel_source_byte_identical():
    assert_same_sources(lowest_ready().python)


def test_the_lowest_versions_compile_and_sass_check_a_sample_of_every_family(tmp_path):
    assert_sample_compiles_and_passes_the_sass_check(lowest_ready().python, tmp_path)


def test_a_venv_is_kept_across_comment_edits_and_rebuilt_for_a_dependency():
    """tools/venv_key.py: a comment or a pytest setting leaves the key; a dependency or its bound changes it."""
    text = (ROOT / "pyproject.toml").read_text()
    same = venv_key.install_relevant
    assert same(text) == same(text.replace("[project]\n", "[project]\n# a note\n", 1) + "\n[tool.x]\ny = 1\n")
    assert same(text) != same(text.replace('"numpy"', '"numpy>=2"', 1))
    assert same(text) != same(text.replace("requires-python", "requires-python = \">=3.11\"\nx", 1))
