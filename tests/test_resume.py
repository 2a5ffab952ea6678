"""--resume, through the real sweep on a simulated GPU (tests/results_family.py: four kernels of three cases, the
failures planted by case id): the resumed file's summary and exit status are the whole file's, a finished file is
left untouched, and a file of another selection, environment or kind is refused (exit 2) naming the difference.
Issue 53: a resume onto a killed run whose finished part held a failure said "0 failed"; the README's --resume
line run twice appended a second, all-zero summary; --kind b1 onto a --kind tf32 file mixed the two runs."""
import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from harness.enums import ExitCode
from harness.records import results
from tests import results_family as rf
from tests.cli_in_process import run

SWEEP = ["sweep", "--family", "rf", "--jobs", "1"]
COUNTS = ("pass", "fail", "fault", "timeout", "compile-error", "error", "not-run", "ran", "unaccounted", "ordinary",
          "controls", "cases")


@pytest.fixture
def rfs(monkeypatch):
    """rfs(failing): the family installed with these case ids failing."""
    def install(failing=()):
        rf.install(monkeypatch, failing)
    install()
    return install


def kill(path, case_lines: int, cut: bool = False, interrupted: bool = False) -> None:
    """The file as a run killed after `case_lines` case records would have left it (`cut`: and part of the next
    record; `interrupted`: closed by the Ctrl-C path instead, with a summary marked interrupted: the process that
    writes it wrote whole batches only, so no record is cut short before it)."""
    lines = path.read_text().splitlines(keepends=True)
    cases = [ln for ln in lines if json.loads(ln)["type"] == "case"]
    text = lines[0] + "".join(cases[:case_lines])
    if cut and case_lines < len(cases) and not interrupted:
        text += cases[case_lines][:40]
    if interrupted:
        text += json.dumps({"type": "summary", "cases": 12, "interrupted": True}) + "\n"
    path.write_text(text)


def counts(summary: dict) -> dict:
    return {k: summary.get(k) for k in COUNTS}


def test_a_killed_run_whose_finished_part_failed_resumes_to_a_failure(rfs, tmp_path):
    rfs(["rf-k0-n1"])
    out = tmp_path / "r.jsonl"
    assert run(*SWEEP, "--out", out).returncode == ExitCode.FAILED
    kill(out, 3)  # the first kernel's three records, its failure among them
    res = run(*SWEEP, "--out", out, "--resume")
    assert res.returncode == ExitCode.FAILED, res.stdout + res.stderr
    assert "11 passed, 1 failed" in res.stdout
    f = results.read(out)
    assert f.problems() == [] and f.summary["fail"] == 1 and f.summary["unaccounted"] == 0
    assert run("junit", out, "--out", tmp_path / "j.xml").returncode == ExitCode.OK  # a whole file: its XML says
    assert 'failures="1"' in (tmp_path / "j.xml").read_text()


def test_a_finished_file_resumed_runs_nothing_appends_nothing_and_exits_as_its_records_say(rfs, tmp_path):
    rfs(["rf-k2-n0"])
    out = tmp_path / "r.jsonl"
    assert run(*SWEEP, "--out", out).returncode == ExitCode.FAILED
    before = out.read_bytes()
    for _ in range(2):  # the README's --resume line, run twice
        res = run(*SWEEP, "--out", out, "--resume")
        assert res.returncode == ExitCode.FAILED and "11 passed, 1 failed" in res.stdout, res.stdout + res.stderr
        assert out.read_bytes() == before
    assert results.read(out).summaries == 1


def test_a_finished_file_without_failures_resumed_exits_0(rfs, tmp_path):
    out = tmp_path / "r.jsonl"
    assert run(*SWEEP, "--out", out).returncode == ExitCode.OK
    res = run(*SWEEP, "--out", out, "--resume")
    assert res.returncode == ExitCode.OK and "12 passed" in res.stdout


def test_an_interrupted_file_is_continued_to_one_whole_summary(rfs, tmp_path):
    rfs(["rf-k3-n2"])
    out = tmp_path / "r.jsonl"
    assert run(*SWEEP, "--out", out).returncode == ExitCode.FAILED
    kill(out, 5, interrupted=True)
    assert results.read(out).problems()[0].startswith("its summary is marked interrupted")
    res = run(*SWEEP, "--out", out, "--resume")
    f = results.read(out)
    assert res.returncode == ExitCode.FAILED and f.problems() == [] and f.summaries == 1
    assert not f.summary.get("interrupted") and f.summary["fail"] == 1 and len(f.cases) == 12


def test_a_resume_of_another_selection_is_refused_naming_it(rfs, tmp_path, monkeypatch):
    out = tmp_path / "r.jsonl"
    assert run(*SWEEP, "--n", "1", "--out", out).returncode == ExitCode.OK
    before = out.read_bytes()
    monkeypatch.setattr("harness.sweep.compile_kernels", lambda *a, **k: pytest.fail("compiled"))
    res = run(*SWEEP, "--n", "2", "--out", out, "--resume")
    assert res.returncode == ExitCode.USAGE and res.stderr.count("\n") == 1, res.stderr
    assert "another selection (--family rf --n 1)" in res.stderr and "--family rf --n 2" in res.stderr
    assert out.read_bytes() == before


def test_a_resume_onto_a_file_from_before_the_selection_field_checks_its_cases(rfs, tmp_path):
    out = tmp_path / "r.jsonl"
    assert run(*SWEEP, "--n", "1", "--out", out).returncode == ExitCode.OK
    lines = out.read_text().splitlines(keepends=True)
    env = json.loads(lines[0])
    del env["selection"]
    out.write_text(json.dumps(env) + "\n" + "".join(lines[1:]))
    res = run(*SWEEP, "--n", "2", "--out", out, "--resume")
    assert res.returncode == ExitCode.USAGE and "4 of its cases are not in this run's selection" in res.stderr
    del env["run"]  # and from before `run`: the same selection continues it
    out.write_text(json.dumps(env) + "\n" + "".join(lines[1:-3]))  # two cases and the summary cut off
    res = run(*SWEEP, "--n", "1", "--out", out, "--resume")
    assert res.returncode == ExitCode.OK and results.read(out).problems() == [], res.stderr


@pytest.mark.parametrize("key,value", [("gpu_uuid", "GPU-other"), ("host", "another-node"), ("harness", "0.0.9"),
                                       ("gpus_requested", "0")])
def test_a_resume_onto_another_environment_is_refused_naming_the_field(rfs, tmp_path, key, value):
    out = tmp_path / "r.jsonl"
    assert run(*SWEEP, "--out", out).returncode == ExitCode.OK
    kill(out, 4)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text(json.dumps({**json.loads(lines[0]), key: value}) + "\n" + "".join(lines[1:]))
    before = out.read_bytes()
    res = run(*SWEEP, "--out", out, "--resume")
    assert res.returncode == ExitCode.USAGE and f"another environment: {key} {value!r} there" in res.stderr, res.stderr
    assert out.read_bytes() == before


def test_a_resume_onto_a_probe_file_is_refused(rfs, tmp_path):
    out = tmp_path / "r.jsonl"
    assert run(*SWEEP, "--out", out).returncode == ExitCode.OK
    kill(out, 4)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text(json.dumps({**json.loads(lines[0]), "run": "probe"}) + "\n" + "".join(lines[1:]))
    res = run(*SWEEP, "--out", out, "--resume")
    assert res.returncode == ExitCode.USAGE and "is a probe run's results, not a sweep's" in res.stderr


FAILS = st.sets(st.sampled_from(rf.ids()), max_size=4)


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(failing=FAILS, kept=st.integers(0, 12), cut=st.booleans(), interrupted=st.booleans())
def test_resume_from_any_kill_point_equals_a_run_from_scratch(rfs, tmp_path_factory, failing, kept, cut,
                                                              interrupted):
    _resume_equals_scratch(rfs, tmp_path_factory.mktemp("resume"), failing, kept, cut, interrupted)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(failing=FAILS, kept=st.integers(0, 12), cut=st.booleans(), interrupted=st.booleans())
def test_resume_from_any_kill_point_equals_a_run_from_scratch_exhaustively(rfs, tmp_path_factory, failing, kept, cut,
                                                                           interrupted):
    _resume_equals_scratch(rfs, tmp_path_factory.mktemp("resume"), failing, kept, cut, interrupted)


def _resume_equals_scratch(rfs, folder, failing, kept, cut, interrupted):
    rfs(sorted(failing))
    scratch, resumed = folder / "scratch.jsonl", folder / "resumed.jsonl"
    want = run(*SWEEP, "--out", scratch, "--json")
    resumed.write_bytes(scratch.read_bytes())
    kill(resumed, kept, cut, interrupted)
    got = run(*SWEEP, "--out", resumed, "--resume", "--json")
    assert got.returncode == want.returncode == (ExitCode.FAILED if failing else ExitCode.OK), got.stderr
    assert counts(json.loads(got.stdout)) == counts(json.loads(want.stdout))
    a, b = results.read(scratch), results.read(resumed)
    assert b.problems() == [] and b.summaries == 1
    assert {i: r["status"] for i, r in a.cases.items()} == {i: r["status"] for i, r in b.cases.items()}
    assert counts(a.summary) == counts(b.summary)
