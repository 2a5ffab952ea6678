"""compare OLD NEW on synthetic results files: categories, fingerprint differences, exit status, bad input."""
import json

import pytest

from harness.records import compare, results
from tests.cli_in_process import run


def write(path, env_extra, cases, schema=results.SCHEMA):
    env = {"type": "environment", "schema": schema, "harness": "0.1.0", "date": "x", "driver": "580.159.04",
           "nvrtc": "13.0", "gpu": "NVIDIA H100 80GB HBM3", **env_extra}
    w = results.ResultsWriter(path, env)
    w.write_lines(results.CaseLines(cases))
    w.close({"cases": len(cases)})
    return path


def case(cid, status="pass", **kw):
    return {"id": cid, "kernel": "k", "status": status, "mismatches": 0 if status == "pass" else 3, **kw}


FAIL = dict(first_mismatches=[{"thread": 5, "register": 2, "row": 1, "col": 4, "expected": 3, "got": 7,
                               "got_bits": "0x40e00000"}], bad_rows="1", bad_cols="4")


@pytest.fixture
def pair(tmp_path):
    old = write(tmp_path / "old.jsonl", {}, [case("a"), case("b"), case("c", "fail", **FAIL), case("d"),
                                             case("e", "fail", **FAIL)])
    new = write(tmp_path / "new.jsonl", {"driver": "590.10"},
                [case("a"), case("b", "fail", **FAIL), case("c"), case("e", "fault", error="illegal instruction"),
                 case("f")])
    return old, new


def test_categories(pair):
    r = compare.compare(*pair)
    assert [x["id"] for x in r["newly_failing"]] == ["b"]
    assert [x["id"] for x in r["newly_passing"]] == ["c"]
    assert [x["id"] for x in r["changed_failures"]] == ["e"]
    assert r["missing_in_new"] == ["d"] and r["new_cases"] == ["f"]
    assert r["environment"] == {"driver": ["580.159.04", "590.10"]}
    assert r["regressed"]


def test_identical_runs_do_not_regress(tmp_path):
    p = write(tmp_path / "a.jsonl", {}, [case("a"), case("b", "fail", **FAIL)])
    q = write(tmp_path / "b.jsonl", {"host": "other"}, [case("a"), case("b", "fail", **FAIL)])
    r = compare.compare(p, q)
    assert not r["regressed"] and r["environment"] == {"host": [None, "other"]}


def test_cli_table_json_and_exit_status(pair):
    out = run("compare", *map(str, pair))
    assert out.returncode == 1
    assert "driver" in out.stdout and "580.159.04 -> 590.10" in out.stdout
    assert "newly failing: b [fail, 3 mismatches] first at thread 5 register 2 row 1 col 4" in out.stdout
    assert "REGRESSED" in out.stdout
    js = json.loads(run("compare", *map(str, pair), "--json").stdout)
    assert js["regressed"] is True and js["missing_in_new"] == ["d"]
    assert run("compare", str(pair[0]), str(pair[0])).returncode == 0


def test_not_a_results_file_is_one_line(tmp_path):
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    good = write(tmp_path / "g.jsonl", {}, [case("a")])
    for args, msg in [((str(junk), str(good)), "not JSON Lines"), ((str(tmp_path / "nope"), str(good)),
                                                                    "no such results file")]:
        out = run("compare", *args)
        assert out.returncode == 2 and msg in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_results_of_another_schema_are_refused(tmp_path):
    old = write(tmp_path / "old.jsonl", {}, [case("a")], schema=0)
    new = write(tmp_path / "new.jsonl", {}, [case("a")])
    out = run("compare", str(old), str(new))
    assert out.returncode == 2 and "schema 0 is not this harness's schema" in out.stderr


TC_FAIL = dict(first_mismatches=[{"row": 3, "col": 9, "cta": 0, "lane": 3, "tmem_column": 9, "expected": 2.0,
                                  "got": 5.0}], family="tcgen05")


def test_a_newly_failing_tcgen05_case_is_reported_with_its_lane_and_column(tmp_path):
    tc = "m128n64k16-f16.f32.f16.f16-cg1-SS-A:K/128B-B:K/128B"
    old = write(tmp_path / "old.jsonl", {}, [case(tc, family="tcgen05"), case("w")])
    new = write(tmp_path / "new.jsonl", {}, [case(tc, "fail", **TC_FAIL), case("w")])
    r = compare.compare(old, new)
    assert [x["id"] for x in r["newly_failing"]] == [tc] and r["regressed"]
    text = compare.render(r)
    assert "cta 0 lane 3 tmem_column 9 row 3 col 9: expected 2.0 got 5.0" in text and "REGRESSED" in text
    changed = write(tmp_path / "again.jsonl", {}, [case(tc, "fail", **{**TC_FAIL, "first_mismatches": [
        {**TC_FAIL["first_mismatches"][0], "lane": 67}]}), case("w")])
    assert [x["id"] for x in compare.compare(new, changed)["changed_failures"]] == [tc]


def test_a_case_that_passed_and_is_now_not_run_is_a_regression(tmp_path):
    old = write(tmp_path / "old.jsonl", {}, [case("a"), case("b")])
    new = write(tmp_path / "new.jsonl", {}, [case("a"), case("b", "not-run", reason="needs a sm_90a GPU")])
    r = compare.compare(old, new)
    assert r["no_longer_run"] == [{"id": "b", "reason": "needs a sm_90a GPU"}] and r["regressed"]
    assert not compare.compare(new, new)["regressed"]


def test_a_case_gone_that_never_ran_is_listed_but_loses_no_coverage(tmp_path):
    old = write(tmp_path / "old.jsonl", {}, [case("a"), case("t", "not-run", reason="needs B200"), case("p")])
    new = write(tmp_path / "new.jsonl", {}, [case("a")])
    r = compare.compare(old, new)
    assert r["dropped_not_run"] == ["t"] and r["missing_in_new"] == ["p"] and r["regressed"]
    r2 = compare.compare(old, write(tmp_path / "n2.jsonl", {}, [case("a"), case("p")]))
    assert r2["dropped_not_run"] == ["t"] and not r2["regressed"]


def test_gzipped_runs_as_committed_compare_like_plain_ones(pair, tmp_path):
    """Committed runs are .jsonl.gz (a 27,554-case sweep: 8 MB plain, 0.2 MB gzipped): a folder holding one is
    that run, and it reads record for record as the plain file does."""
    import gzip
    old, new = pair
    folder = tmp_path / "run-new"
    folder.mkdir()
    (folder / "sweep.jsonl.gz").write_bytes(gzip.compress(new.read_bytes()))
    (folder / "probe-x.jsonl.gz").write_bytes(gzip.compress(new.read_bytes()))  # a probe is no sweep result
    assert results.expand_run([folder]) == [folder / "sweep.jsonl.gz"]
    assert results.load(folder / "sweep.jsonl.gz") == results.load(new)
    plain, packed = compare.compare(old, new), compare.compare(old, folder)
    assert [x["id"] for x in packed["newly_failing"]] == [x["id"] for x in plain["newly_failing"]] == ["b"]
    out = run("compare", str(old), str(folder))
    assert out.returncode == 1 and "newly failing: b" in out.stdout


def test_a_damaged_gzip_file_is_one_line_naming_it(pair, tmp_path):
    import gzip
    bad = tmp_path / "cut.jsonl.gz"
    bad.write_bytes(gzip.compress(pair[0].read_bytes())[:-12])  # cut short: no trailer
    with pytest.raises(results.ResultsFileError, match="cut.jsonl.gz"):
        results.load(bad)
    out = run("compare", str(bad), str(pair[1]))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "cut.jsonl.gz" in out.stderr


def test_a_run_folder_holding_a_file_and_its_gzip_is_refused(pair, tmp_path):
    import gzip
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "sweep.jsonl").write_bytes(pair[0].read_bytes())
    (folder / "sweep.jsonl.gz").write_bytes(gzip.compress(pair[0].read_bytes()))  # gzip -k
    with pytest.raises(results.ResultsFileError, match="holds both sweep.jsonl and sweep.jsonl.gz"):
        results.expand_run([folder])
