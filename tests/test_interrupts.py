"""Ctrl-C (SIGINT to the whole process group, as a terminal sends it) or SIGTERM (to the sweep's process alone, as a
batch system sends it): the command line exits within a second with 130 or 143, one line and no traceback;
its results file is whole and its summary says interrupted; the kernels compiled before the signal stay in the cache;
no process of the run is left; and `--resume` continues from there to a complete file.

The cold compile is the real one (NVRTC, a private cache); the launches are simulated (tests/simulated/fake_cli.py:
the command line's own process, its signal handlers included, on a simulated GPU whose launches take a while)."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.records import results
from harness.run import gpu

ROOT = Path(__file__).resolve().parent.parent
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}
TOY = "toymany=tests.simulated.toy_many_family"


def environment(cache: Path, **more) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TC_SIM_")}
    env.update(PYTHONPATH=str(ROOT), TC_HARNESS_CACHE=str(cache), **more)
    return env


def start(args, env, module="harness") -> subprocess.Popen:
    # a session of its own: SIGINT goes to its whole process group, helpers and GPU workers too, as Ctrl-C does
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for(predicate, proc: subprocess.Popen, timeout: float, what: str) -> None:
    end = time.time() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (exit {proc.returncode}) before {what}: {proc.stderr.read()}")
        if time.time() > end:
            proc.kill()
            raise AssertionError(f"no {what} within {timeout} s")
        time.sleep(0.05)


def interrupt(proc: subprocess.Popen, sig: int) -> tuple[float, str]:
    """Send `sig` (SIGINT to the group, SIGTERM to the process), wait for the exit; (seconds it took, stderr)."""
    t = time.monotonic()
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("the run did not exit within 30 s of the signal") from None
    return time.monotonic() - t, err


def processes_of(cache: Path) -> list[int]:
    """Live processes whose environment names this run's private cache (the run's own and every child's)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if f"TC_HARNESS_CACHE={cache}\0".encode() in (d / "environ").read_bytes():
                    found.append(int(d.name))
            except OSError:
                pass
    return found


def check_interrupted(proc, sig, took, err, out: Path, cache: Path) -> dict:
    assert proc.returncode == EXIT[sig], (proc.returncode, err)
    assert took < 1.0, f"{took:.2f} s to exit after {signal.Signals(sig).name}"
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1].endswith(f"interrupted ({signal.Signals(sig).name}); exit {EXIT[sig]}"), err
    _, cases, summary = results.load(out)  # whole: every line parses, and it ends with a summary
    assert summary is not None and summary["interrupted"] is True and summary["signal"] == signal.Signals(sig).name
    assert out.read_text().endswith("\n")
    time.sleep(0.5)  # a killed child is gone by now
    assert processes_of(cache) == [], "processes of the interrupted run are still alive"
    return cases


def cubins(cache: Path) -> set[str]:
    return {p.name for p in cache.glob("*.cubin")}


@pytest.mark.spread
def test_ctrl_c_during_a_cold_compile_keeps_what_was_compiled(tmp_path):
    """12 kernels in 3 modules on 2 processes: the signal comes as the first module lands in the cache, while the
    others still compile. Those kept, the resumed run compiles only the rest."""
    cache, out = tmp_path / "cache", tmp_path / "r.jsonl"
    args = ["sweep", "--family", "wgmma", "--kind", "f16", "--n", "8", "--n", "16", "--n", "32", "--jobs", "2",
            "--out", str(out)]
    env = environment(cache)
    proc = start(args, env)
    wait_for(lambda: cubins(cache), proc, 240, "cubin in the cache")
    took, err = interrupt(proc, signal.SIGINT)
    check_interrupted(proc, signal.SIGINT, took, err, out, cache)
    kept = cubins(cache)
    assert kept and len(kept) < 12, kept  # interrupted part way through the compile
    assert "compile:" not in err  # the compile never finished

    again = subprocess.run([sys.executable, "-m", "harness", *args, "--resume"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    ran = gpu.skip_reason("sm_90a") is None  # on a GPU node the resumed run launches (and passes); else not run
    assert again.returncode == (0 if ran else 3) and "Traceback" not in again.stderr, again.stderr
    fresh, cached = map(int, re.search(r"\((\d+) compiled and SASS-checked, (\d+) cached\)", again.stderr).groups())
    assert cached >= len(kept) and fresh + cached == 12, again.stderr
    assert kept <= cubins(cache)
    _, cases, summary = results.load(out)
    assert len(cases) == summary["cases"] and summary["unaccounted"] == 0 and not summary.get("interrupted")


# SIGINT to the group in CI through the cold compile above; here under -m slow (two command lines each)
@pytest.mark.parametrize("sig", [pytest.param(signal.SIGINT, marks=pytest.mark.slow), signal.SIGTERM],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_launches_leaves_a_whole_file_that_resumes(sig, tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "r.jsonl"
    env = environment(cache, TC_HARNESS_FAMILIES=TOY, TC_SIM_LAUNCH_S="0.1", TC_SIM_TOY_KERNELS="12")
    args = ["sweep", "--family", "toymany", "--out", str(out)]
    proc = start(args, env, module="tests.simulated.fake_cli")
    wait_for(lambda: out.exists() and out.read_text().count('"type": "case"') >= 6, proc, 120, "records")
    took, err = interrupt(proc, sig)
    cases = check_interrupted(proc, sig, took, err, out, cache)
    _, _, summary = results.load(out)
    assert 6 <= len(cases) < summary["cases"] and summary["unaccounted"] == summary["cases"] - len(cases)
    assert all(r["status"] == "pass" for r in cases.values())

    again = subprocess.run([sys.executable, "-m", "tests.simulated.fake_cli", *args, "--resume"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    lines = [json.loads(ln) for ln in out.read_text().splitlines()]
    ids = [r["id"] for r in lines if r["type"] == "case"]
    assert len(ids) == len(set(ids)) == summary["cases"]  # every case once: none run twice, none lost
    assert lines[-1]["type"] == "summary" and lines[-1]["unaccounted"] == 0
