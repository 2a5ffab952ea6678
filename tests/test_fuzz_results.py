"""Property and fuzz tests of the results-file classes (issue 53): a small real results file (a sweep of
tests/results_family.py on its simulated GPU) cut at every line, and part way into every line, is flagged by every
reader, never exit 0, never a traceback; random JSON in every field of every record is read or refused with one
line naming file:line (exit 2), never a traceback; two sweeps started together on one --out leave one whole file,
the other refused (exit 2), no case lost and no line broken. Resume's property is in tests/test_resume.py."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from harness.enums import ExitCode
from harness.records import results
from tests import results_family as rf
from tests.cli_in_process import run

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def real_file(tmp_path_factory):
    """A whole results file of 12 cases (one failing), as the sweep writes it."""
    mp = pytest.MonkeyPatch()
    try:
        rf.install(mp, ["rf-k1-n2"])
        out = tmp_path_factory.mktemp("real") / "sweep.jsonl"
        res = run("sweep", "--family", "rf", "--jobs", "1", "--out", out)
        assert res.returncode == ExitCode.FAILED, res.stderr
    finally:
        mp.undo()
    f = results.read(out)
    assert f.problems() == [] and len(f.cases) == 12
    return out.read_bytes()


def every_reader(f: Path, folder: Path, baseline: Path) -> dict:
    """Each reader's answer (CompletedProcess) over f; report reads f's folder (f is its sweep.jsonl)."""
    return {name: run(*argv) for name, argv in {
        "compare-old": ["compare", f, baseline], "compare-new": ["compare", baseline, f],
        "merge": ["merge", f, "--out", folder / "out" / "m.jsonl"],
        "junit": ["junit", f, "--out", folder / "out" / "j.xml"], "report": ["report", f.parent]}.items()}


def cuts(data: bytes):
    """Every prefix a killed writer (or a full disk) can leave: at each line's end, and part way into each line."""
    ends = [i + 1 for i, b in enumerate(data) if b == ord("\n")]
    starts = [0] + ends[:-1]
    for s, e in zip(starts, ends):
        yield f"mid-line-{len(ends[:ends.index(e)]) + 1}", data[:s + (e - s) // 2]
        if e < len(data):
            yield f"after-line-{ends.index(e) + 1}", data[:e]


def test_a_file_cut_at_every_line_is_flagged_by_every_reader(real_file, tmp_path):
    baseline = tmp_path / "baseline.jsonl"
    baseline.write_bytes(real_file)
    n = 0
    for name, data in cuts(real_file):
        folder = tmp_path / name
        folder.mkdir()
        f = folder / "sweep.jsonl"
        f.write_bytes(data)
        for reader, res in every_reader(f, folder, baseline).items():
            assert res.returncode != ExitCode.OK, (name, reader, res)
            assert res.returncode in (ExitCode.USAGE, ExitCode.FAILED), (name, reader, res)
            assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1, (name, reader, res.stderr)
            assert str(f) in res.stderr or reader == "report" and "NOT WHOLE" in res.stderr, (name, reader, res)
        n += 1
    assert n == 2 * len(real_file.splitlines()) - 1


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
                    | st.text(max_size=8), lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)

# fields whose every wrong JSON type must be refused (exit 2, file:line), by an expectation of this test's own:
# what each reader computes with (a string id and kernel, a list of objects of first mismatches, a count ...)
MUST_BE = {"case": {"id": (str,), "status": (str,), "kernel": (str, type(None)), "family": (str, type(None)),
                    "first_mismatches": (list, type(None)), "mismatches": (int, type(None)),
                    "error": (str, type(None))},
           "environment": {"type": (str,)}, "summary": {"cases": (int, type(None)),
                                                       "interrupted": (bool, type(None))}}


def _fuzz_one(real_file: bytes, folder: Path, line: int, field: str, value) -> None:
    lines = real_file.decode().splitlines(keepends=True)
    line = line % len(lines)
    rec = json.loads(lines[line])
    field = field if field in rec else sorted(rec)[hash(field) % len(rec)]
    rec[field] = value
    lines[line] = json.dumps(rec) + "\n"
    f = folder / "sweep.jsonl"
    f.write_text("".join(lines))
    baseline = folder / "baseline.jsonl"
    baseline.write_bytes(real_file)
    want = MUST_BE.get(rec["type"] if isinstance(rec.get("type"), str) else "", {}).get(field)
    for reader, res in every_reader(f, folder, baseline).items():
        assert "Traceback" not in res.stderr and res.stderr.count("\n") <= 1, (reader, field, value, res.stderr)
        if res.returncode == ExitCode.USAGE and reader != "report":
            assert f"{f}:" in res.stderr or str(f) in res.stderr, (reader, field, value, res.stderr)
        if want is not None and (not isinstance(value, want) or isinstance(value, bool) and bool not in want):
            assert res.returncode == ExitCode.USAGE, (reader, field, value, res)
            assert f"{f}:{line + 1}" in res.stderr or f"{f}: first line" in res.stderr, (reader, field, value,
                                                                                          res.stderr)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(line=st.integers(0, 13), field=st.sampled_from(["id", "status", "kernel", "family", "first_mismatches",
                                                        "mismatches", "error", "type", "cases", "interrupted",
                                                        "kernel_s", "gpu", "arch", "host", "toolchain", "other"]),
       value=JSON)
def test_random_json_in_any_field_is_read_or_one_line_naming_file_and_line(real_file, tmp_path_factory, line, field,
                                                                           value):
    _fuzz_one(real_file, tmp_path_factory.mktemp("fuzz"), line, field, value)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(line=st.integers(0, 13), field=st.text(max_size=12), value=JSON)
def test_random_json_in_any_field_exhaustively(real_file, tmp_path_factory, line, field, value):
    _fuzz_one(real_file, tmp_path_factory.mktemp("fuzz"), line, field, value)


# ------------------------------------------------------------------------------------------------ two writers

def _sweep_process(out: Path, *argv: str, gate: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.results_family", "--jobs", "1", "--out", str(out), *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), rf.GATE: str(gate), rf.FAIL: "rf-k0-n0"})


def _two_writers(folder: Path, argvs, gap: float | None = None) -> None:
    """Two sweeps of one --out: started together (`gap` None), or the second `gap` seconds after the first has taken
    the file's lock (its .lock file is there). Their launches wait at a gate that opens once one of them has ended:
    the sweep that runs is still running when the other is answered, however slowly a loaded machine starts it."""
    out, gate = folder / "shared.jsonl", folder / "gate"
    first = _sweep_process(out, *argvs[0], gate=gate)
    if gap is not None:
        t = time.time()
        while not Path(f"{out}.lock").exists() and first.poll() is None and time.time() - t < 120:
            time.sleep(0.02)
        time.sleep(gap)
    second = _sweep_process(out, *argvs[1], gate=gate)
    t = time.time()
    while first.poll() is None and second.poll() is None and time.time() - t < 120:
        time.sleep(0.02)
    gate.touch()
    answers = [(p.wait(timeout=300), *p.communicate()) for p in (first, second)]
    assert all("Traceback" not in err for _, _, err in answers), answers
    refused = [a for a in answers if a[0] == ExitCode.USAGE]
    assert len(refused) == 1, answers
    assert gap is None or answers[1][0] == ExitCode.USAGE, answers  # the second, while the first held the file
    err = refused[0][2]
    assert "another sweep is writing it" in err and err.count("\n") == 1, err
    ran = next(a for a in answers if a[0] != ExitCode.USAGE)
    f = results.read(out)
    assert f.problems() == [], f.problems()  # no case lost, none twice, one summary, no broken line
    assert all(ln.endswith("}") for ln in out.read_text().splitlines())
    planted = "rf-k0-n0" in f.cases  # the planted failure, where the sweep that ran had its kernel
    assert f.summary["fail"] == planted and ran[0] == (ExitCode.FAILED if planted else ExitCode.OK), ran
    assert not Path(f"{out}.lock").exists()


def test_two_shards_given_one_out_one_runs_and_the_other_is_refused(tmp_path):
    """The issue's fleet script: --shard 0/2 and --shard 1/2 started together with one --out."""
    _two_writers(tmp_path, [["--shard", "0/2"], ["--shard", "1/2"]])


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(gap=st.floats(0.0, 0.5), resume=st.booleans())
def test_two_writers_of_one_out_never_lose_a_case_nor_break_a_line(tmp_path_factory, gap, resume):
    """The second refused whether it would write afresh or resume: the first writer's file is never touched."""
    _two_writers(tmp_path_factory.mktemp("writers"), [[], ["--resume"] if resume else []], gap)
