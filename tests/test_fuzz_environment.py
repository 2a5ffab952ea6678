"""Environment variables and signals under a fuzz (hypothesis).

Variables: random values of TC_HARNESS_CACHE, HOME, TC_HARNESS_FAMILIES and TC_HARNESS_WORKERS, together, under
a sweep whose selection matches nothing (refused, exit 2, once the environment has been checked: nothing is compiled):
every answer is exit 2 with one line (two where the cache falls back to a temporary one, docs/environment.md), never a
traceback, and nothing is written in the current folder but a cache folder the value names there. In this process
(harness.cli.main) for the many; a few in a process of their own.

Signals: SIGINT (to the process group, as Ctrl-C) or SIGTERM at a random moment of a sweep on a simulated GPU
(tests/simulated/fake_cli.py: the command line's own process): exit 130 or 143 (0 where it had finished), within two
seconds, one line, no traceback; the results file, where there is one, whole and marked interrupted; `--resume` then
completes it, every case once."""
import atexit
import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from harness import cli
from harness.records import results

pytestmark = [pytest.mark.spread, pytest.mark.filterwarnings("ignore:Characters .* can be encoded with codec")]

ROOT = Path(__file__).resolve().parent.parent
_N = int(os.environ.get("HARNESS_FUZZ_EXAMPLES", "0"))  # a longer, random search by hand
SETTINGS = settings(max_examples=_N or 60, deadline=None, database=None, suppress_health_check=list(HealthCheck),
                    derandomize=not _N)
VARIABLES = ("TC_HARNESS_CACHE", "HOME", "TC_HARNESS_FAMILIES", "TC_HARNESS_WORKERS")
ARGS = ["sweep", "--family", "wgmma", "--kind", "s8", "--n", "8", "--match", "no-such-case-anywhere"]

BASE = Path(tempfile.mkdtemp(prefix="harness-fuzz-env-"))
atexit.register(shutil.rmtree, BASE, True)
(BASE / "afile").write_text("a file\n")
(BASE / "adir").mkdir()
# only these modules may be named in a family: a random module name could be one with effects on import
MODULES = ["tests.simulated.toy_family", "tests.simulated.broken_family_module", "tests.simulated.fake_gpus",
           "no_such_module_tc_fuzz", "harness.families.wgmma", "os.path"]
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=12)
MISSING_HOME = f"/nonexistent-tcfz-{os.getpid()}"  # a HOME that is not there: never to be made
common = ["", " ", "/dev/null", "/proc/self", "/proc/nope/x", str(BASE / "afile"), str(BASE / "afile" / "x"),
          str(BASE / "adir"), "relative-cache", ".", "~", "~/x"]
caches = st.one_of(text, st.sampled_from([*common, str(BASE / "missing" / "cache")]))
homes = st.one_of(text, st.sampled_from([*common, MISSING_HOME]))
names = st.one_of(st.sampled_from(["toy", "t2", "wgmma", "", "a b", "x.y"]), text)
items = st.one_of(st.builds(lambda n, m: f"{n}={m}", names, st.sampled_from(MODULES)), text)
families_value = st.lists(items, max_size=3).map(",".join)
workers = st.one_of(text, st.integers(-3, 100).map(str))
values = st.fixed_dictionaries({}, optional={"TC_HARNESS_CACHE": caches, "HOME": homes,
                                             "TC_HARNESS_FAMILIES": families_value, "TC_HARNESS_WORKERS": workers})


@contextlib.contextmanager
def environment(values: dict, cwd: Path):
    saved = {k: os.environ.get(k) for k in VARIABLES}
    here = os.getcwd()
    try:
        for k in VARIABLES:
            os.environ.pop(k, None)
        os.environ.update(values)
        os.chdir(cwd)
        yield
    finally:
        os.chdir(here)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def allowed_in_cwd(values: dict, found: list[str]) -> bool:
    """Whether what the current folder holds is allowed: nothing, or a cache a relative TC_HARNESS_CACHE names there
    (the folder itself, for '.')."""
    named = values.get("TC_HARNESS_CACHE")
    if named and named.strip() and not os.path.isabs(named) and not named.startswith("~"):
        parts = Path(named).parts
        return not parts or parts[0] == ".." or set(found) <= {parts[0]}
    return not found


def check(code: int, err: str, values: dict, cwd: Path) -> None:
    lines = err.strip().splitlines()
    assert "Traceback" not in err, err
    assert code == 2, (code, err, values)
    assert 1 <= len(lines) <= 2, (lines, values)
    if len(lines) == 2:  # the cache's fallback note, then the refusal
        assert "no cache folder" in lines[0] and "temporary" in lines[0], lines
    assert allowed_in_cwd(values, os.listdir(cwd)), (os.listdir(cwd), values)
    assert not Path(MISSING_HOME).exists()


@SETTINGS
@given(values=values)
def test_random_environments_are_one_line_and_exit_2_in_process(values):
    cwd = Path(tempfile.mkdtemp(dir=BASE))
    err = io.StringIO()
    with environment(values, cwd), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(ARGS)
    check(int(code), err.getvalue(), values, cwd)


@settings(max_examples=_N or 3, deadline=None, database=None, suppress_health_check=list(HealthCheck),
          derandomize=not _N)
@given(values=values)
def test_random_environments_in_a_process_of_their_own(values):
    cwd = Path(tempfile.mkdtemp(dir=BASE))
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(values, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "harness", *ARGS], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=120)
    check(r.returncode, r.stderr, values, cwd)


TOY = "toymany=tests.simulated.toy_many_family"
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}
SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def handles_signals(pid: int) -> bool:
    """The process has its own SIGTERM handler (harness/__main__.py, fake_cli: before that a signal kills it outright,
    which no test of ours is about)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & SIGTERM_BIT)
    except OSError:
        pass
    return False


@settings(max_examples=_N or 1, deadline=None, database=None, suppress_health_check=list(HealthCheck),
          derandomize=not _N)
@given(sig=st.sampled_from([signal.SIGINT, signal.SIGTERM]), delay=st.floats(0.0, 4.0))
def test_a_signal_at_a_random_moment_leaves_a_whole_resumable_file(sig, delay):
    folder = Path(tempfile.mkdtemp(dir=BASE))
    out = folder / "r.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES and not k.startswith("TC_SIM_")}
    env.update(PYTHONPATH=str(ROOT), TC_HARNESS_CACHE=str(folder / "cache"), TC_HARNESS_FAMILIES=TOY,
               TC_SIM_LAUNCH_S="0.05", TC_SIM_TOY_KERNELS="12")
    args = [sys.executable, "-m", "tests.simulated.fake_cli", "sweep", "--family", "toymany", "--out", str(out)]
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    end = time.time() + 60
    while not handles_signals(proc.pid) and proc.poll() is None and time.time() < end:
        time.sleep(0.01)
    time.sleep(delay)
    t = time.monotonic()
    if proc.poll() is None:
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - t
    assert "Traceback" not in err, err
    assert proc.returncode in (0, EXIT[sig]), (proc.returncode, err)
    if proc.returncode:
        assert took < 1.0, took
        assert err.strip().splitlines()[-1].endswith(f"({signal.Signals(sig).name}); exit {EXIT[sig]}") or \
            "while starting" in err, err
    if out.exists():
        _, cases, summary = results.load(out)
        assert summary is not None and (bool(summary.get("interrupted")) == bool(proc.returncode))
    again = subprocess.run([*args, "--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    lines = [json.loads(ln) for ln in out.read_text().splitlines()]
    ids = [r["id"] for r in lines if r["type"] == "case"]
    assert len(ids) == len(set(ids)) == 72 and lines[-1]["type"] == "summary" and lines[-1]["unaccounted"] == 0
