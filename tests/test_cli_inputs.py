"""Every input answered: each finding of the command-line fuzz, one test each (in-process, no GPU, no sweep run).

Bad input: exit 2, one line `<command>: <what is wrong>` on stderr, nothing written. Exit codes: harness.enums.ExitCode.
"""
import json
import os
import subprocess
import sys

import pytest

from harness import __version__, api, cli, sweep
from harness.cli.common import DEFAULT_RESULTS_DIR
from harness.enums import ExitCode
from harness.records import results
from test_compare import FAIL, case, write

pytestmark = pytest.mark.spread  # no module-scoped fixture: under pytest -n, each test on any free worker


COMMANDS = ("sweep", "compare", "merge", "junit", "probe", "desc", "idesc", "zmask", "layout")


class Reached(Exception):
    """A sweep or probe would have started: the arguments got past every check."""


@pytest.fixture(autouse=True)
def no_runs(monkeypatch):
    def refuse(*a, **k):
        raise Reached()
    monkeypatch.setattr(sweep, "run", refuse)
    monkeypatch.setattr(sweep, "execute", refuse)
    from harness.experiments import probe_runs
    for name in ("addresses", "field_overflow", "spec_examples"):
        monkeypatch.setattr(probe_runs, name, refuse)


def call(capsys, *argv):
    rc = cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def usage(capsys, *argv, msg=None):
    rc, out, err = call(capsys, *argv)
    assert rc == ExitCode.USAGE, (argv, rc, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"{argv[0] if argv and argv[0] in COMMANDS else 'harness'}: "), err
    if msg:
        assert msg in err, err
    return err


def test_exit_codes_are_named_once():
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4]
    assert [c.name for c in ExitCode] == ["OK", "FAILED", "USAGE", "NOTHING_RAN", "ENVIRONMENT"]


# ---------------------------------------------------------------------------- compare / merge: reading runs

def _run_folder(tmp_path, name, cases, probe_cases):
    d = tmp_path / name
    d.mkdir()
    write(d / "sweep.jsonl", {}, cases)
    write(d / "probe-field-overflow.jsonl", {}, probe_cases)
    return d


def test_a_run_folder_is_its_sweep_files_not_its_probe_files(tmp_path, capsys):
    old = _run_folder(tmp_path, "old", [case("a"), case("b")], [case("overflow-1", "fault", error="illegal")])
    new = _run_folder(tmp_path, "new", [case("a"), case("b")], [])
    assert results.expand_run([old]) == [old / "sweep.jsonl"]
    rc, out, _ = call(capsys, "compare", str(old), str(new))
    assert rc == ExitCode.OK and "no regression" in out  # was REGRESSED: "missing in new: overflow-1"


def test_a_folder_of_shards_and_their_merge_is_the_shards(tmp_path):
    write(tmp_path / "shard0.jsonl", {}, [case("a")])
    write(tmp_path / "shard1.jsonl", {}, [case("b")])
    write(tmp_path / "merged.jsonl", {}, [case("a"), case("b")])
    assert [p.name for p in results.expand_run([tmp_path])] == ["shard0.jsonl", "shard1.jsonl"]
    (tmp_path / "shard0.jsonl").unlink(), (tmp_path / "shard1.jsonl").unlink()
    assert [p.name for p in results.expand_run([tmp_path])] == ["merged.jsonl"]  # a merge alone stands for its run


def test_a_folder_of_probe_files_only_is_refused(tmp_path, capsys):
    write(tmp_path / "probe-base-offset.jsonl", {}, [case("a")])
    usage(capsys, "compare", str(tmp_path), str(tmp_path), msg="only probe-*.jsonl")


def test_merge_of_one_file_writes_it(tmp_path, capsys):
    one = write(tmp_path / "one.jsonl", {}, [case("a"), case("b", "not-run", reason="no B200")])
    rc, out, err = call(capsys, "merge", str(one), "--out", str(tmp_path / "m" / "all.jsonl"), "--json")
    assert rc == ExitCode.OK, err
    info = json.loads(out)
    assert info["cases"] == 2 and info["pass"] == 1 and info["not-run"] == 1 and info["inputs"] == 1
    assert results.load(tmp_path / "m" / "all.jsonl")[1].keys() == {"a", "b"}


# ---------------------------------------------------------------------------- malformed results files

ENV = json.dumps({"type": "environment", "schema": results.SCHEMA})


@pytest.mark.parametrize("line,msg", [
    ("[1, 2]", "a record is a JSON object, not a JSON list"),
    ("42", "not a JSON int"),
    ('"text"', "not a JSON str"),
    ('{"type": "case", "status": "pass"}', 'needs an "id"'),
    ('{"type": "case", "id": ["a"], "status": "pass"}', 'needs an "id"'),
    ('{"type": "case", "id": "", "status": "pass"}', 'needs an "id"'),
    ('{"type": "case", "id": "a", "status": "great"}', "status 'great' is not one of"),
    ('{"type": "case", "id": "a", "status": "fail", "mismatches": "3"}', "field 'mismatches'"),
    ('{"type": "case", "id": "a", "status": "fail", "first_mismatches": 3}', "field 'first_mismatches'"),
    ('{"type": "diagnosis", "id": 7}', 'needs an "id"'),
    ('{"type": 3}', "record type 3 is not one of"),
    ('{"id": "a"}', "record type None"),
])
def test_a_malformed_record_names_file_and_line(tmp_path, capsys, line, msg):
    f = tmp_path / "bad.jsonl"
    f.write_text(ENV + "\n" + json.dumps({"type": "case", "id": "ok", "status": "pass"}) + "\n" + line + "\n")
    with pytest.raises(results.ResultsFileError, match="bad.jsonl:3: "):
        results.load(f)
    for argv in (["compare", str(f), str(f)], ["merge", str(f), "--out", str(tmp_path / "m.jsonl")]):
        assert msg in usage(capsys, *argv, msg=f"{f}:3: ")
    assert not (tmp_path / "m.jsonl").exists()


def test_undecodable_bytes_name_the_file_and_line(tmp_path, capsys):
    f = tmp_path / "bin.jsonl"
    f.write_bytes(ENV.encode() + b"\n\xff\xfe\x00garbage\n")
    usage(capsys, "compare", str(f), str(f), msg=f"{f}:2: not UTF-8 text")


def test_first_line_an_array_is_refused(tmp_path, capsys):
    f = tmp_path / "arr.jsonl"
    f.write_text("[1]\n")
    usage(capsys, "compare", str(f), str(f), msg="first line is not an environment record")


# ---------------------------------------------------------------------------- zmask N

@pytest.mark.parametrize("m,n", [(128, "1180591620717411303424"), (128, "-8"), (128, "0"), (128, "100000"),
                                 (128, "12"), (32, "32"), (64, "4")])
@pytest.mark.parametrize("extra", [[], ["--decode", "0"], ["--all-zero"]])
def test_zmask_checks_n_before_any_work(capsys, m, n, extra):
    usage(capsys, "zmask", "--m", str(m), "--n", n, *extra, msg=f"--n {n}: not an N of tcgen05.mma with M = {m}")


def test_zmask_legal_n():
    assert api.zero_mask_legal_n(32) == [64, 128, 256]
    assert api.zero_mask_legal_n(128) == list(range(8, 257, 8)) == api.zero_mask_legal_n(64)


# ---------------------------------------------------------------------------- output paths

LAYOUT = ["layout", "--major", "K", "--swizzle", "128B", "--dtype", "bf16", "--rows", "8", "--cols", "64", "--lbo",
          "16", "--sbo", "1024"]


def test_merge_out_must_be_a_writable_file(tmp_path, capsys):
    one = write(tmp_path / "one.jsonl", {}, [case("a")])
    blocker = tmp_path / "plain-file"
    blocker.write_text("x")
    usage(capsys, "merge", str(one), "--out", str(tmp_path), msg="is a folder")
    usage(capsys, "merge", str(one), "--out", "", msg="--out '': give a file name")
    usage(capsys, "merge", str(one), "--out", str(blocker / "m.jsonl"), msg="is not a folder")
    usage(capsys, "merge", str(one), "--out", str(one), msg="is one of the inputs")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.jsonl", "plain-file"]


def test_layout_png_paths(tmp_path, capsys):
    usage(capsys, *LAYOUT, "--png", str(tmp_path), msg="is a folder")
    usage(capsys, *LAYOUT, "--png", "", msg="give a file name")
    usage(capsys, *LAYOUT, "--png", str(tmp_path / "t.png"), "--json", msg="--json or --png, not both")
    assert not list(tmp_path.iterdir())
    target = tmp_path / "missing" / "tile"  # a missing folder is created; the name is exactly the one given
    rc, out, err = call(capsys, *LAYOUT, "--png", str(target))
    assert rc == ExitCode.OK and out.strip() == f"wrote {target}", err
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not (tmp_path / "missing" / "tile.png").exists()


def test_sweep_and_probe_out_paths(tmp_path, capsys):
    usage(capsys, "sweep", "--out", "", msg="give a file name")
    usage(capsys, "sweep", "--out", str(tmp_path), msg="is a folder")
    usage(capsys, "probe", "base-offset", "--out", str(tmp_path), msg="is a folder")


# ---------------------------------------------------------------------------- broken pipe

def test_json_into_head_exits_quietly():
    big = ["layout", "--major", "K", "--swizzle", "none", "--dtype", "bf16", "--rows", "256", "--cols", "256",
           "--lbo", "128", "--sbo", "4096", "--json"]
    p = subprocess.Popen([sys.executable, "-m", "harness", *big], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.read(10)
    p.stdout.close()  # the reader goes away, as `| head -c 10` does
    err = p.stderr.read().decode()
    p.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err and err == "", err
    assert p.returncode == ExitCode.FAILED


# ---------------------------------------------------------------------------- nothing selected, flags ignored

def test_sweep_matching_nothing_exits_2(monkeypatch, capsys, tmp_path):
    monkeypatch.undo()  # the real planner: it refuses before compiling anything
    usage(capsys, "sweep", "--match", "no-such-case", "--out", str(tmp_path / "s.jsonl"),
          msg="the selection matches no case")
    usage(capsys, "sweep", "--family", "tcgen05", "--a-src", "RS", "--out", str(tmp_path / "s.jsonl"),
          msg="--a-src RS: no case of the selected families has it")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv,msg", [
    (["desc", "--arch", "sm_90a", "--decode", "0", "--lbo", "16"], "--decode takes no encode flag (--lbo)"),
    (["desc", "--arch", "sm_100a", "--decode", "0", "--swizzle", "none"], "(--swizzle)"),
    (["idesc", "--kind", "f16", "--decode", "0", "--m", "128"], "--decode takes no encode flag (--m)"),
    (["idesc", "--kind", "f16", "--decode", "0", "--transpose-b"], "(--transpose-b)"),
    (["idesc", "--kind", "f16", "--atype", "f16", "--btype", "f16", "--m", "128", "--n", "64", "--scale-type",
      "ue8m0"], "--scale-type is for the block-scaled kinds"),
    (["zmask", "--m", "128", "--n", "64", "--decode", "0", "--shift", "2"], "--decode takes no encode flag (--shift)"),
    (["zmask", "--m", "128", "--n", "64", "--decode", "0", "--all-zero"], "(--all-zero)"),
    (["probe", "base-offset", "--match", "x"], "--match selects address probes only"),
    (["probe", "spec-examples", "--match", "x"], "--match selects address probes only"),
    (["sweep", "--jobs", "0"], "--jobs: 0 is not a positive number"),
    (["sweep", "--jobs", "-1"], "--jobs: -1 is not a positive number"),
    (["sweep", "--timeout", "nan"], "not a positive, finite number of seconds"),
    (["sweep", "--timeout", "inf"], "not a positive, finite number of seconds"),
    (["sweep", "--timeout", "0"], "not a positive, finite number of seconds"),
    (["probe", "addresses", "--timeout", "-1"], "not a positive, finite number of seconds"),
    (["sweep", "--match", ""], "--match ''"),
    (["sweep", "--resume"], "--resume needs the --out file"),
])
def test_flags_that_would_be_ignored_are_refused(capsys, argv, msg):
    usage(capsys, *argv, msg=msg)


# ---------------------------------------------------------------------------- small ones

@pytest.mark.parametrize("argv,prefix", [
    (["desc", "--arch", "sm_90a", "--start", "16"], "desc: "),
    (["desc", "--arch", "sm_80"], "desc: "),
    (["idesc", "--kind", "f16", "--atype", "f16", "--m", "128", "--n", "64"], "idesc: "),
    (["layout", "--major", "K"], "layout: "),
    (LAYOUT[:-1] + ["1000"], "layout: "),
    (["sweep", "--shard", "4/4"], "sweep: "),
    (["nonsense"], "harness: "),
    ([], "harness: "),
    (["--bogus"], "harness: "),
])
def test_one_prefix_style(capsys, argv, prefix):
    err = usage(capsys, *argv)
    assert err.startswith(prefix) and "python -m harness" not in err and "error:" not in err, err


def test_version(capsys):
    rc, out, _ = call(capsys, "--version")
    assert rc == ExitCode.OK and out.strip() == f"tensor-core-harness {__version__}"


def test_help_gives_units_and_defaults():
    helps = {a.dest: a.help or "" for a in cli.build_parser()._subparsers._group_actions[0].choices["desc"]._actions}
    assert "bytes" in helps["lbo"] and "bytes" in helps["sbo"] and "bytes" in helps["start"]
    assert "default none" in helps["swizzle"] and "default 0" in helps["base_offset"]
    sweep_help = {a.dest: a.help or "" for a in
                  cli.build_parser()._subparsers._group_actions[0].choices["sweep"]._actions}
    assert "results/scratch/ under the current folder" in sweep_help["out"] and "default 30" in sweep_help["timeout"]


def test_idesc_defaults_to_an_f32_accumulator(capsys):
    rc, out, err = call(capsys, "idesc", "--kind", "f16", "--atype", "bf16", "--btype", "bf16", "--m", "128", "--n",
                        "256", "--json")
    assert rc == ExitCode.OK and json.loads(out)["fields"]["dtype"] == "f32", err
    rc, out, err = call(capsys, "idesc", "--kind", "i8", "--atype", "s8", "--btype", "s8", "--m", "128", "--n", "64",
                        "--json")
    assert rc == ExitCode.OK and json.loads(out)["fields"]["dtype"] == "s32", err
    assert api.default_accumulator_dtype("tf32") == "f32" and api.default_accumulator_dtype("mxf4") == "f32"


def test_idesc_decode_checks_m_and_n_even_with_a_bad_type_code(capsys):
    rc, out, _ = call(capsys, "idesc", "--kind", "f16", "--decode", "0x380", "--json")  # atype 7, M = 0, N = 0
    problems = json.loads(out)["problems"]
    assert rc == ExitCode.FAILED and any("atype code 7" in p for p in problems) and any("M = 0" in p for p in problems)


# ---------------------------------------------------------------------------- --json summaries

def _summary(**kw):
    return {"cases": 4, "pass": 4, "fail": 0, "fault": 0, "timeout": 0, "compile-error": 0, "not-run": 0,
            "wall_s": 0.1, **kw}


@pytest.mark.parametrize("summary,code", [
    (_summary(), ExitCode.OK),
    (_summary(**{"pass": 3, "fail": 1}), ExitCode.FAILED),
    (_summary(**{"pass": 0, "not-run": 4, "not_run_reasons": {"wgmma": "needs a sm_90a GPU"}}),
     ExitCode.NOTHING_RAN),
    (_summary(**{"pass": 0, "not-run": 3, "compile-error": 1}), ExitCode.FAILED),
])
def test_sweep_json_summary_and_exit_status(monkeypatch, capsys, tmp_path, summary, code):
    monkeypatch.setattr(sweep, "run", lambda sel, cfg: dict(summary))
    rc, out, err = call(capsys, "sweep", "--family", "tcgen05", "--out", str(tmp_path / "s.jsonl"), "--json")
    info = json.loads(out)
    assert rc == code and info["exit"] == int(code) and info["cases"] == 4, err
    assert info["results"] == str(tmp_path / "s.jsonl")
    rc, out, _ = call(capsys, "sweep", "--family", "tcgen05", "--out", str(tmp_path / "s.jsonl"))
    assert rc == code and "of 4 cases" in out


def test_probe_json_summary(monkeypatch, capsys, tmp_path):
    from harness.experiments import probe_runs
    monkeypatch.setattr(probe_runs, "spec_examples", lambda out, timeout: "compile-only: 7 experiments, none run")
    rc, out, _ = call(capsys, "probe", "spec-examples", "--out", str(tmp_path / "p.jsonl"), "--json")
    info = json.loads(out)
    assert rc == ExitCode.NOTHING_RAN and info["probe"] == "spec-examples" and info["report"][0].startswith("compile")


def test_main_never_raises_systemexit_for_help(capsys):
    for argv in (["--help"], ["sweep", "--help"], ["layout", "-h"]):
        assert call(capsys, *argv)[0] == ExitCode.OK


def test_default_results_path_is_under_the_current_folder():
    assert str(DEFAULT_RESULTS_DIR) == os.path.join("results", "scratch")


def test_a_record_cut_short_by_a_kill_is_left_out_and_resume_cuts_it_off(tmp_path):
    f = write(tmp_path / "r.jsonl", {}, [case("a"), case("b")])
    text = f.read_text()
    f.write_text(text + json.dumps({"type": "case", "id": "c", "status": "pass"})[:25])  # killed mid-record
    assert set(results.load(f)[1]) == {"a", "b"}
    w = results.ResultsWriter(f, resume=True)
    w.write_lines(results.CaseLines([case("c")]))
    w.close()
    # every whole record kept, but the closing summary: the run that continues the file writes the one summary
    assert set(results.load(f)[1]) == {"a", "b", "c"} and f.read_text().startswith(text.rsplit('{"type": "summary"')[0])
    assert '"summary"' not in f.read_text()
    g = tmp_path / "g.jsonl"
    g.write_text(text + '{"type": "case", "id": "d", "status": "pass"\n')  # a whole line that is broken: refused
    with pytest.raises(results.ResultsFileError, match=f"{g}:5: not JSON Lines"):
        results.load(g)


def test_a_run_folder_leaves_out_timing_bench_files(tmp_path):
    from harness.records import results
    run = tmp_path / "run"
    run.mkdir()
    for name in ("sweep.jsonl", "bench-h100.jsonl", "probe-addresses.jsonl"):
        (run / name).write_text("")
    assert [p.name for p in results.expand_run([run])] == ["sweep.jsonl"]


@pytest.mark.parametrize("value", ["abc", "0", "-3", "2.5"])
def test_a_malformed_worker_count_in_the_environment_is_refused_before_a_sweep_starts(capsys, monkeypatch, value):
    monkeypatch.setenv("TC_HARNESS_WORKERS", value)
    rc, out, err = call(capsys, "sweep", "--family", "wgmma", "--kind", "b1")
    assert rc == ExitCode.USAGE and out == ""
    assert err.strip() == f"sweep: TC_HARNESS_WORKERS={value!r}: want a positive whole number of processes"

