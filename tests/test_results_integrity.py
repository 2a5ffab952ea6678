"""A results file is whole or says it is not (issue 53, the results-file half): every reader (compare, merge, junit,
report) refuses, or with --allow-incomplete flags with a non-zero exit, a file without its summary or marked
interrupted; refuses a probe's file where a sweep's is expected and files of two toolchains unless --allow-mixed;
a malformed field is one line naming file:line, exit 2. One writer a file (a lock), a full disk under --out or on
stdout is one line and the file stays valid to its last whole record, and a repeated --match widens."""
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import cli, plan
from harness.enums import ExitCode
from harness.records import results
from tests.cli_in_process import run
from tests.test_compare import FAIL, case, write

ROOT = Path(__file__).resolve().parent.parent


def env_of(**kw):
    return {"toolchain": "nvrtc", "nvrtc": "13.0", **kw}


def whole(path, cases=None, **env):
    return write(path, env_of(**env), cases or [case("a"), case("b", "fail", **FAIL), case("c")])


def no_summary(path, **env):
    f = whole(path, **env)
    f.write_text("".join(f.read_text().splitlines(keepends=True)[:-1]))
    return f


def interrupted(path):
    w = results.ResultsWriter(path, {"type": "environment", "schema": results.SCHEMA, "date": "x", **env_of()})
    w.write_lines(results.CaseLines([case("a"), case("b")]))
    w.close({"cases": 3, "pass": 2}, interrupted=True)
    return path


def readers(f, tmp_path, baseline):
    """Each reader's command line over `f` (compare with f as old and as new)."""
    return {"compare-old": ["compare", f, baseline], "compare-new": ["compare", baseline, f],
            "merge": ["merge", f, "--out", tmp_path / "m.jsonl"], "junit": ["junit", f, "--out", tmp_path / "j.xml"]}


@pytest.mark.parametrize("make", [no_summary, interrupted], ids=["no-summary", "interrupted"])
def test_every_reader_refuses_a_file_that_is_not_whole(tmp_path, make):
    f = make(tmp_path / "cut.jsonl")
    base = whole(tmp_path / "base.jsonl")
    for name, argv in readers(f, tmp_path, base).items():
        res = run(*argv)
        assert res.returncode == ExitCode.USAGE, (name, res)
        assert res.stderr.count("\n") == 1 and f"{f}: not a whole run" in res.stderr and "--allow-incomplete" in \
            res.stderr, (name, res.stderr)
    assert not (tmp_path / "m.jsonl").exists() and not (tmp_path / "j.xml").exists()


@pytest.mark.parametrize("make", [no_summary, interrupted], ids=["no-summary", "interrupted"])
def test_allow_incomplete_reads_it_and_flags_it_with_a_non_zero_exit(tmp_path, make):
    f = make(tmp_path / "cut.jsonl")
    same = whole(tmp_path / "same.jsonl", [case("a"), case("b")])  # nothing regressed between the two
    for name, argv in readers(f, tmp_path, same).items():
        res = run(*argv, "--allow-incomplete")
        assert res.returncode == ExitCode.FAILED, (name, res)
        assert "NOT WHOLE" in res.stdout and str(f) in res.stdout, (name, res.stdout)
    merged = results.read(tmp_path / "m.jsonl")  # the merged file carries the flag on to every reader
    assert merged.summary["incomplete_inputs"][0]["file"] == str(f) and merged.problems()
    assert run("junit", tmp_path / "m.jsonl", "--out", tmp_path / "k.xml").returncode == ExitCode.USAGE
    xml = (tmp_path / "j.xml").read_text()
    assert 'name="results-file"' in xml and 'type="incomplete"' in xml


def test_a_merge_of_shards_one_cut_mid_run_is_refused_not_summarised_as_whole(tmp_path):
    a = whole(tmp_path / "shard0.jsonl")
    b = no_summary(tmp_path / "shard1.jsonl")
    res = run("merge", a, b, "--out", tmp_path / "m.jsonl")
    assert res.returncode == ExitCode.USAGE and "shard1.jsonl: not a whole run: no summary record" in res.stderr


def test_a_file_with_two_summaries_or_cases_after_its_summary_is_not_whole(tmp_path):
    f = whole(tmp_path / "r.jsonl")
    text = f.read_text()
    f.write_text(text + json.dumps({"type": "summary", "cases": 3}) + "\n")
    assert "2 summary records" in results.read(f).problems()[0]
    f.write_text(text + json.dumps({"type": "case", **case("z")}) + "\n")
    probs = results.read(f).problems()
    assert any("case records after its summary" in p for p in probs) and any("4 cases recorded" in p for p in probs)
    f.write_text(text.replace('{"type": "summary"', json.dumps({"type": "case", **case("a")}) + '\n{"type": "summary"'))
    assert any("repeat an id" in p for p in results.read(f).problems())


def test_a_file_missing_cases_its_summary_counts_is_not_whole(tmp_path):
    f = whole(tmp_path / "r.jsonl")
    lines = f.read_text().splitlines(keepends=True)
    f.write_text(lines[0] + "".join(lines[2:]))  # a case lost (two writers), the summary still says 3
    assert results.read(f).problems() == ["2 cases recorded, its summary counts 3: some were lost"]
    assert run("compare", f, f).returncode == ExitCode.USAGE


def test_a_probe_file_is_no_baseline(tmp_path):
    probe = write(tmp_path / "p.jsonl", {"run": "probe"}, [case("a"), case("b")])
    named = tmp_path / "run"
    named.mkdir()
    (named / "probe-base-offset.jsonl").write_bytes(whole(tmp_path / "x.jsonl").read_bytes())
    new = whole(tmp_path / "new.jsonl")
    for argv in (["compare", probe, new], ["compare", named / "probe-base-offset.jsonl", new],
                 ["merge", probe, new, "--out", tmp_path / "m.jsonl"], ["junit", probe, "--out", tmp_path / "j.xml"]):
        res = run(*argv)
        assert res.returncode == ExitCode.USAGE and "is a probe run's results, not a sweep's" in res.stderr, res


def test_the_committed_probe_and_bench_files_are_refused_by_compare():
    for f in ("results/2026-11-22-h100/probe-base-offset.jsonl", "results/2026-11-23-h100/bench-h100.jsonl"):
        res = run("compare", ROOT / f, ROOT / "results/2026-11-23-h100/sweep.jsonl.gz")
        assert res.returncode == ExitCode.USAGE and ("probe run's" in res.stderr or "bench's" in res.stderr), res


def test_runs_of_two_toolchains_are_refused_unless_allowed_and_then_named_both(tmp_path):
    a = whole(tmp_path / "a.jsonl", toolchain="nvrtc", nvrtc="12.8", nvrtc_build="12.8.93")
    b = whole(tmp_path / "b.jsonl", toolchain="driver-jit", nvrtc="13.0", driver="580.159.04")
    res = run("merge", a, b, "--out", tmp_path / "m.jsonl")
    assert res.returncode == ExitCode.USAGE and "toolchains differ" in res.stderr and "--allow-mixed" in res.stderr
    assert run("compare", f"{a},{b}", a).returncode == ExitCode.USAGE
    res = run("merge", a, b, "--out", tmp_path / "m.jsonl", "--allow-mixed")
    assert res.returncode == ExitCode.FAILED  # case b fails in both
    env = results.read(tmp_path / "m.jsonl").env
    assert env["toolchain"] == "mixed" and len(env["toolchains"]) == 2
    res = run("compare", tmp_path / "m.jsonl", a)
    assert res.returncode == ExitCode.USAGE and "merge of mixed runs" in res.stderr
    res = run("compare", tmp_path / "m.jsonl", a, "--allow-mixed")
    assert "NVRTC None" not in res.stdout and "mixed (" in res.stdout and "12.8.93" in res.stdout, res.stdout
    assert "driver-jit" in res.stdout


def test_runs_of_two_harness_versions_are_mixed(tmp_path):
    a = whole(tmp_path / "a.jsonl", harness="0.1.0")
    b = whole(tmp_path / "b.jsonl", harness="0.2.0")
    res = run("merge", a, b, "--out", tmp_path / "m.jsonl")
    assert res.returncode == ExitCode.USAGE and "harness versions differ" in res.stderr


@pytest.mark.parametrize("field,value,reader", [
    ("first_mismatches", 3, "compare"), ("first_mismatches", [1, 2], "compare"), ("family", ["wgmma"], "junit"),
    ("kernel", ["k"], "junit"), ("kernel", 7, "report"), ("error", {"x": 1}, "compare"), ("diagnosis", "x", "junit")])
def test_a_malformed_field_is_one_line_naming_file_and_line(tmp_path, field, value, reader):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    f = whole(run_dir / "sweep.jsonl", [case("a"), case("b", "fail", **{**FAIL, field: value}), case("c")])
    good = whole(tmp_path / "good.jsonl")
    argv = {"compare": ["compare", good, f], "junit": ["junit", f, "--out", tmp_path / "j.xml"],
            "report": ["report", tmp_path]}[reader]
    res = run(*argv)
    assert res.returncode == ExitCode.USAGE and res.stderr.count("\n") == 1, res
    assert f"{f}:3: case b: field {field!r}" in res.stderr, res.stderr


@pytest.mark.parametrize("reader", ["compare", "junit", "report", "merge"])
@pytest.mark.parametrize("edit", [{"kernel": None}, {"family": None}, {"family": None, "kernel": None}])
def test_a_case_without_a_kernel_or_family_is_read(tmp_path, reader, edit):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rec = {**case("b", "fail", **FAIL), "family": "wgmma", **edit}
    for k in [k for k, v in edit.items() if v is None and k == "kernel"]:
        del rec[k]  # absent, where the family is null
    f = whole(run_dir / "sweep.jsonl", [case("a"), rec])
    argv = {"compare": ["compare", f, f], "junit": ["junit", f, "--out", tmp_path / "j.xml"],
            "report": ["report", tmp_path], "merge": ["merge", f, "--out", tmp_path / "m.jsonl"]}[reader]
    res = run(*argv)
    assert res.returncode in (ExitCode.OK, ExitCode.FAILED) and not res.stderr, res


def test_report_of_one_run_folder_prints_its_table():
    res = run("report", ROOT / "results/2026-11-23-h100")
    assert res.returncode == ExitCode.OK, res.stderr
    assert "### `2026-11-23-h100/sweep.jsonl.gz`" in res.stdout and "| **all** |" in res.stdout


def test_report_flags_a_table_of_a_file_that_is_not_whole(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    no_summary(run_dir / "sweep.jsonl")
    res = run("report", tmp_path)
    assert res.returncode == ExitCode.FAILED and "NOT WHOLE: no summary record" in res.stdout
    assert "report: NOT WHOLE: no summary record" in res.stderr
    assert run("report", tmp_path / "nothing-here").returncode == ExitCode.USAGE
    (tmp_path / "empty").mkdir()
    assert run("report", tmp_path / "empty").returncode == ExitCode.USAGE


# ------------------------------------------------------------------------------------------------ one writer

def test_a_second_writer_is_refused_while_the_first_holds_the_file(tmp_path):
    out = tmp_path / "r.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom harness.records import results\n"
                               "with results.held(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(60)",
                               str(out)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(results.ResultsBusy, match=f"pid {holder.pid} on"):
            results.ResultsWriter(out, {"type": "environment", "schema": results.SCHEMA})
        assert not out.exists()  # the refused writer wrote nothing
        res = run("sweep", "--family", "wgmma", "--kind", "b1", "--n", "8", "--out", out)
        assert res.returncode == ExitCode.USAGE and "another sweep is writing it" in res.stderr, res
        assert res.stderr.count("\n") == 1 and "compile" not in res.stderr
    finally:
        holder.kill()
        holder.wait()
    w = results.ResultsWriter(out, {"type": "environment", "schema": results.SCHEMA})  # a dead holder holds nothing
    w.close({"cases": 0})
    assert not Path(f"{out}.lock").exists()


def test_one_process_takes_its_own_lock_again_and_lets_go_once(tmp_path):
    out = tmp_path / "r.jsonl"
    with results.held(out):
        w = results.ResultsWriter(out, {"type": "environment", "schema": results.SCHEMA})
        w.close({"cases": 0})
        assert Path(f"{out}.lock").exists()  # still the sweep's
    assert not Path(f"{out}.lock").exists()


def test_a_file_system_without_locks_is_refused(tmp_path, monkeypatch):
    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(results.fcntl, "flock", no_locks)
    with pytest.raises(results.ResultsFileError, match="gives no locks"):
        results.ResultsWriter(tmp_path / "r.jsonl", {"type": "environment", "schema": results.SCHEMA})


# ------------------------------------------------------------------------------------------------ a full disk

class FillingFile:
    """The writer's file on a disk that fills: takes `room` bytes in all, then ENOSPC (a write that reaches the end
    takes what fits, as write(2) does)."""

    def __init__(self, fh, room: int):
        self.fh, self.room = fh, room

    def write(self, data):
        if self.room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = self.fh.write(bytes(data[:self.room]))
        self.room -= n
        return n

    def __getattr__(self, name):
        return getattr(self.fh, name)


@pytest.mark.parametrize("room", [0, 150, 400, 401, 2000])
def test_a_full_disk_leaves_the_file_valid_up_to_its_last_whole_record(tmp_path, room):
    out = tmp_path / "r.jsonl"
    w = results.ResultsWriter(out, {"type": "environment", "schema": results.SCHEMA, "date": "x"})
    head = out.stat().st_size
    w._fh = FillingFile(w._fh, room)
    recs = [case(f"c{i}") for i in range(40)]
    with pytest.raises(results.ResultsWriteError, match="No space left on device"):
        for i in range(0, 40, 4):
            w.write_lines(results.CaseLines(recs[i:i + 4]))
        w.close({"cases": 40})
    assert w.failed
    w.close({"cases": 40})  # the sweep's finally: writes nothing more, raises nothing
    with pytest.raises(results.ResultsWriteError):
        w.write({"type": "summary"})
    f = results.read(out)
    assert out.stat().st_size == head + room or room >= 2000
    assert f.problems()[0].startswith("no summary record") or room >= 2000 and f.summary is not None
    text = out.read_text()
    whole_lines = text[:text.rfind("\n") + 1].splitlines()[1:]
    assert list(f.cases) == [json.loads(ln)["id"] for ln in whole_lines]


def test_a_full_disk_under_out_is_one_line_exit_2_and_resume_continues(tmp_path, monkeypatch):
    from tests import results_family as rf
    rf.install(monkeypatch, ["rf-k1-n0"])
    out = tmp_path / "r.jsonl"
    real = results.ResultsWriter.__init__

    def filling(self, *a, **k):
        real(self, *a, **k)
        self._fh = FillingFile(self._fh, 900)
    monkeypatch.setattr(results.ResultsWriter, "__init__", filling)
    res = run("sweep", "--family", "rf", "--jobs", "1", "--out", out)
    last = res.stderr.splitlines()[-1]  # after the sweep's progress lines
    assert res.returncode == ExitCode.USAGE and "Traceback" not in res.stderr, res
    assert last.startswith(f"sweep: --out {out}: cannot write: No space left on device"), res.stderr
    assert res.stderr.count("No space left") == 1
    f = results.read(out)
    assert f.summary is None and 0 < len(f.cases) < 12
    monkeypatch.setattr(results.ResultsWriter, "__init__", real)
    res = run("sweep", "--family", "rf", "--jobs", "1", "--out", out, "--resume")
    assert res.returncode == ExitCode.FAILED and results.read(out).problems() == []


@pytest.mark.parametrize("argv", [["junit", "{f}", "--out", "{d}/j.xml", "--json"], ["compare", "{f}", "{f}", "--json"],
                                  ["merge", "{f}", "--out", "{d}/m.jsonl", "--json"], ["report", "{d}"]])
def test_a_full_stdout_is_one_line_and_exit_120(tmp_path, argv):
    f = whole(tmp_path / "sweep.jsonl")
    argv = [a.format(f=f, d=tmp_path) for a in argv]
    with open("/dev/full", "w") as full:
        res = subprocess.run([sys.executable, "-m", "harness", *argv], stdout=full, stderr=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert res.returncode == cli.STDOUT_LOST == 120 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1 and "No space left on device" in res.stderr, res.stderr


# ------------------------------------------------------------------------------------------------ filters

def test_a_repeated_match_keeps_the_cases_holding_any_of_its_texts():
    sel = dict(families=("wgmma",), kinds=("b1",))
    one = plan.make(plan.Selection(**sel, match="m64n8k256"))
    two = plan.make(plan.Selection(**sel, match="m64n16k256"))
    both = plan.make(plan.Selection(**sel, match=("m64n8k256", "m64n16k256")))
    ids = lambda p: {c.id for _, cs in p.work for c in cs}
    assert ids(one) and ids(two) and ids(both) == ids(one) | ids(two)
    assert plan.Selection(**sel, match=("a", "b c")).flags() == "--family wgmma --kind b1 --match a --match 'b c'"
    with pytest.raises(plan.SweepError, match="--match no-such-text: no case of the selection has it"):
        plan.make(plan.Selection(**sel, match=("m64n8k256", "no-such-text")))


def test_the_command_line_passes_every_match(monkeypatch):
    seen = {}
    monkeypatch.setattr("harness.sweep.run", lambda sel, cfg: seen.setdefault("sel", sel) and pytest.fail("ran"))
    import argparse
    from harness.cli import sweep as sweep_command
    a = cli.build_parser().parse_args(["sweep", "--match", "m64n8k", "--match", "RS", "--kind", "f16"])
    sel = sweep_command._selection("sweep", a)
    assert sel.match == ("m64n8k", "RS") and sel.kinds == ("f16",)
    assert isinstance(a, argparse.Namespace)


# ------------------------------------------------------------------------------------------------ interrupted

def test_close_interrupted_writes_a_summary_marked_so_that_no_reader_takes_as_whole(tmp_path):
    """The writer's API for the Ctrl-C / SIGTERM path: close(summary, interrupted=True)."""
    f = interrupted(tmp_path / "r.jsonl")
    last = json.loads(f.read_text().splitlines()[-1])
    assert last == {"type": "summary", "cases": 3, "pass": 2, "interrupted": True}
    assert results.read(f).problems()[0].startswith("its summary is marked interrupted")
    g = whole(tmp_path / "g.jsonl")
    assert json.loads(g.read_text().splitlines()[-1]).get("interrupted") is None and not results.read(g).problems()


def test_the_node_verdict_of_an_interrupted_run_is_unknown(tmp_path):
    from harness.records import fleet
    f = results.read(interrupted(tmp_path / "r.jsonl"))
    v = fleet.verdict(f.env, f.cases, f.summary, str(f.path))
    sweep_check = next(c for c in v["checks"] if c["check_id"] == "tensor_core.sweep")
    assert sweep_check["severity"] == "UNKNOWN" and "interrupted" in sweep_check["message"], sweep_check
    assert v["exit_code"] != ExitCode.OK


def test_a_sweep_refused_after_taking_the_lock_leaves_no_folder_behind(tmp_path):
    """The lock is taken before the plan (so before anything compiles), in the --out file's folder, created for it;
    a selection refused after that leaves neither the lock nor the folder."""
    out = tmp_path / "new" / "deeper" / "r.jsonl"
    res = run("sweep", "--family", "wgmma", "--kind", "s8", "--n", "8", "--match", "no-such-case", "--out", out)
    assert res.returncode == ExitCode.USAGE and "matches no case" in res.stderr, res
    assert list(tmp_path.iterdir()) == []
