"""merge: the GPUs of a node and the nodes of a fleet as one run; compare over several files per side."""
import json
import subprocess
import sys

from harness.records import compare, merge, results
from tests.cli_in_process import run
from test_compare import FAIL, case, write


def test_disjoint_shards_union(tmp_path):
    a = write(tmp_path / "node0.jsonl", {"host": "n0", "gpu_uuid": "GPU-0"}, [case("a"), case("b")])
    b = write(tmp_path / "node1.jsonl", {"host": "n1", "gpu_uuid": "GPU-1"}, [case("c", "fail", **FAIL)])
    env, cases, summary, dis = merge.merge([a, b])
    assert sorted(cases) == ["a", "b", "c"] and not dis
    assert summary["pass"] == 2 and summary["fail"] == 1 and summary["inputs"] == 2
    assert env["driver"] == "580.159.04" and "host" not in env  # shared kept, differing listed per input
    assert [m["host"] for m in env["merged_from"]] == ["n0", "n1"]
    assert cases["c"]["source"]["host"] == "n1"


def test_same_case_on_two_nodes_keeps_the_worst_and_reports_the_disagreement(tmp_path):
    a = write(tmp_path / "n0.jsonl", {"host": "n0"}, [case("a"), case("b")])
    b = write(tmp_path / "n1.jsonl", {"host": "n1"}, [case("a"), case("b", "fault", error="illegal instruction")])
    env, cases, summary, dis = merge.merge([tmp_path])  # a directory stands for its *.jsonl files
    assert cases["b"]["status"] == "fault" and cases["b"]["runs"] == 2
    assert [d["id"] for d in dis] == ["b"] and cases["a"]["status"] == "pass"
    out = tmp_path / "merged" / "all.jsonl"
    proc = run("merge", str(a), str(b), "--out", str(out))
    assert proc.returncode == 1 and "disagreement: b" in proc.stdout
    env2, cases2, summary2 = results.load(out)
    assert cases2.keys() == cases.keys() and summary2["fault"] == 1 and summary2["disagreements"] == 1


def test_compare_takes_several_files_a_side(tmp_path):
    old = write(tmp_path / "old.jsonl", {}, [case("a"), case("b"), case("c")])
    n0 = write(tmp_path / "n0.jsonl", {}, [case("a"), case("b")])
    n1 = write(tmp_path / "n1.jsonl", {}, [case("c", "fail", **FAIL)])
    r = compare.compare(old, [n0, n1])
    assert [x["id"] for x in r["newly_failing"]] == ["c"] and not r["missing_in_new"]
    proc = run("compare", str(old), f"{n0},{n1}", "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["newly_failing"][0]["id"] == "c"


def test_merge_bad_input_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    for args, msg in [((str(tmp_path / "nope.jsonl"),), "no such results file"),
                      ((str(tmp_path / "empty"),), "holds no *.jsonl")]:
        proc = run("merge", *args, "--out", str(tmp_path / "m.jsonl"))
        assert proc.returncode == 2 and msg in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_an_h100_run_and_a_b200_run_merge_without_losing_either_sides_results(tmp_path):
    h100 = write(tmp_path / "h100.jsonl", {"gpu": "H100"}, [case("w1"), case("t1", "not-run", reason="needs B200")])
    b200 = write(tmp_path / "b200.jsonl", {"gpu": "B200"}, [case("w1", "not-run", reason="needs H100"), case("t1")])
    env, cases, summary, disagreements = merge.merge([h100, b200])
    assert cases["w1"]["status"] == cases["t1"]["status"] == "pass" and not disagreements
    assert summary["pass"] == 2 and summary["not-run"] == 0


def test_merge_of_one_finished_file_works_and_not_run_is_no_failure(tmp_path):
    one = write(tmp_path / "one.jsonl", {}, [case("a"), case("t", "not-run", reason="needs B200")])
    out = subprocess.run([sys.executable, "-m", "harness", "merge", str(one), "--out", str(tmp_path / "m.jsonl")],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "1 not run anywhere" in out.stdout, out.stderr
