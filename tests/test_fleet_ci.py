"""Fleet CI: JUnit XML (validated against tests/junit/junit.xsd), --gpus as users expect, CUDA_VISIBLE_DEVICES
recorded, and progress (a bar on a terminal, plain lines elsewhere). CPU only; GPUs are monkeypatched."""
import io
import json
import re
import xml.etree.ElementTree as ET

import pytest

from harness import cli, sweep
from harness.enums import ExitCode
from harness.progress import Progress
from harness.records import junit, results
from harness.run import gpu
from tests.junit import check

ENV = {"type": "environment", "schema": results.SCHEMA, "host": "node7", "date": "2026-11-23T11:00:00+00:00",
       "gpu": "NVIDIA H100", "cuda_visible_devices": "2,3", "gpus_requested": "all"}
WG_FAIL = {"id": "m64n8k16-a", "family": "wgmma", "kernel": "wgmma_k", "arch": "sm_90a", "status": "fail",
           "mismatches": 5, "kernel_s": 0.4, "bad_rows": "0-4",
           "first_mismatches": [{"thread": 37, "register": 2, "half": "lo", "row": 1, "col": 3, "expected": 7,
                                 "got": 9, "got_bits": "0x9"}],
           "diagnosis": [{"type": "diagnosis", "id": "m64n8k16-a", "operand": "B",
                          "summary": "swizzle 128B expected, 64B observed"}]}
TC_FAIL = {"id": "m128n64k16-b", "family": "tcgen05", "kernel": "tc_k", "arch": "sm_100a", "status": "fail",
           "mismatches": 1, "first_mismatches": [{"row": 4, "col": 5, "cta": 1, "lane": 68, "tmem_column": 5,
                                                  "expected": 1.0, "got": 2.0}]}
CASES = [WG_FAIL, TC_FAIL,
         {"id": "ok", "family": "wgmma", "kernel": "wgmma_k", "arch": "sm_90a", "status": "pass", "kernel_s": 0.4},
         {"id": "boom", "family": "wgmma", "kernel": "wgmma_k2", "arch": "sm_90a", "status": "fault",
          "error": "cudaErrorIllegalInstruction"},
         {"id": "slow", "family": "wgmma", "kernel": "wgmma_k2", "arch": "sm_90a", "status": "timeout",
          "error": "no answer within 30 s"},
         {"id": "nvrtc", "family": "tcgen05", "kernel": "tc_k3", "arch": "sm_100a", "status": "compile-error",
          "error": "NVRTC: bad"},
         {"id": "skip", "family": "tcgen05", "kernel": "tc_k", "arch": "sm_100a", "status": "not-run",
          "reason": "needs a sm_100a or sm_103a GPU"},
         {"id": "ctl", "family": "wgmma", "kernel": "wgmma_k", "arch": "sm_90a", "status": "pass",
          "control": "wrong-swizzle", "caught": True, "matches_model_prediction": True, "kernel_s": 0.4}]


def _results(tmp_path, cases=CASES, env=ENV):
    p = tmp_path / "r.jsonl"
    lines = [env] + [{"type": "case", **{k: v for k, v in c.items() if k != "diagnosis"}} for c in cases]
    lines += [d for c in cases for d in c.get("diagnosis", [])] + [{"type": "summary", "cases": len(cases)}]
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


def _valid(path):
    how, problems = check.validate(path)
    assert problems == [], (how, problems)
    return ET.parse(path).getroot()


def test_junit_one_testcase_per_case_and_a_suite_per_family(tmp_path, capsys):
    out = tmp_path / "ci" / "junit.xml"
    assert cli.main(["junit", str(_results(tmp_path)), "--out", str(out)]) == ExitCode.OK
    root = _valid(out)
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"wgmma", "wgmma.controls", "tcgen05"}
    assert root.get("tests") == str(len(CASES)) and root.get("failures") == "2" and root.get("errors") == "3"
    assert root.get("skipped") == "1"
    wg = suites["wgmma"]
    assert (wg.get("tests"), wg.get("failures"), wg.get("errors"), wg.get("skipped")) == ("4", "1", "2", "0")
    assert float(wg.get("time")) == pytest.approx(0.4 * 2 / 3, abs=1e-3)  # wgmma_k: 0.4 s over 2 ordinary + 1 control
    tc = {c.get("name"): c for c in root.iter("testcase")}
    assert tc["m64n8k16-a"].get("classname") == "wgmma.wgmma_k"
    f = tc["m64n8k16-a"].find("failure")
    assert "5 mismatches" in f.get("message") and "row 1 col 3: expected 7 got 9" in f.get("message")
    assert "thread 37, register 2, half lo" in f.get("message") and "64B observed" in f.text
    m = tc["m128n64k16-b"].find("failure").get("message")
    assert "cta 1, lane 68, tmem_column 5" in m and "expected 1.0 got 2.0" in m
    assert tc["boom"].find("error").get("type") == "fault" and "Illegal" in tc["boom"].find("error").get("message")
    assert tc["slow"].find("error").get("type") == "timeout"
    assert tc["nvrtc"].find("error").get("type") == "compile-error"
    assert tc["skip"].find("skipped").get("message") == "needs a sm_100a or sm_103a GPU"
    assert tc["ok"].find("*") is None and tc["ctl"] in list(suites["wgmma.controls"])
    props = {p.get("name"): p.get("value") for p in wg.iter("property")}
    assert props["cuda_visible_devices"] == "2,3" and wg.get("hostname") == "node7"


def test_junit_reads_a_committed_schema_1_baseline(tmp_path):
    out = tmp_path / "j.xml"
    totals = junit.convert("results/2026-11-22-h200x2/shard0.jsonl", out)
    assert int(totals["tests"]) > 0
    _valid(out)


def test_the_checker_catches_what_the_schema_forbids(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text('<testsuites><testsuite tests="x"><testcase/><oops/></testsuite></testsuites>')
    _, problems = check.validate(bad)
    text = "\n".join(problems)
    assert "name" in text and "tests" in text and "oops" in text


@pytest.mark.parametrize("bad,msg", [("", "give a file name"), ("DIR", "is a folder")])
def test_bad_junit_paths_are_refused_before_anything_runs(tmp_path, capsys, monkeypatch, bad, msg):
    def refuse(*a, **k):
        raise AssertionError("the sweep started")
    monkeypatch.setattr(sweep, "run", refuse)
    path = str(tmp_path) if bad == "DIR" else bad
    rc = cli.main(["sweep", "--family", "tcgen05", "--out", str(tmp_path / "r.jsonl"), "--junit", path])
    err = capsys.readouterr().err
    assert rc == ExitCode.USAGE and err.startswith("sweep: --junit") and msg in err
    rc = cli.main(["sweep", "--out", str(tmp_path / "r.jsonl"), "--junit", str(tmp_path / "r.jsonl")])
    assert rc == ExitCode.USAGE and "is the --out file" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_junit_command_refuses_a_folder_and_a_missing_file(tmp_path, capsys):
    assert cli.main(["junit", str(tmp_path), "--out", str(tmp_path / "j.xml")]) == ExitCode.USAGE
    assert cli.main(["junit", str(tmp_path / "no.jsonl"), "--out", str(tmp_path / "j.xml")]) == ExitCode.USAGE
    assert capsys.readouterr().err.startswith("junit: ")


def test_sweep_junit_is_written_from_the_results_file(tmp_path, capsys):
    out, xml = tmp_path / "r.jsonl", tmp_path / "j.xml"
    rc = cli.main(["sweep", "--family", "tcgen05", "--kind", "f16", "--cta-group", "1", "--out", str(out),
                   "--junit", str(xml)])
    if gpu.device_count():
        pytest.skip("a GPU is here; this checks the CPU-only path")
    assert rc == ExitCode.NOTHING_RAN
    root = _valid(xml)
    n = sum(1 for ln in out.read_text().splitlines() if '"type": "case"' in ln)
    assert int(root.get("tests")) == n == int(root.get("skipped")) > 0


# ---------------------------------------------------------------------------- --gpus

@pytest.fixture
def four_gpus(monkeypatch):
    archs = ["sm_90a", "sm_90a", "sm_90a", None]
    infos = {i: {"index": i, "name": "NVIDIA A100" if a is None else "NVIDIA H100", "arch": a,
                 "compute_capability": "8.0" if a is None else "9.0", "uuid": f"GPU-{i}",
                 "driver": 0, "runtime": 0} for i, a in enumerate(archs)}
    monkeypatch.setattr(gpu, "device_count", lambda: len(infos))
    monkeypatch.setattr(gpu, "device_info", lambda index=0: infos.get(index))


@pytest.mark.parametrize("spec,want", [("all", [0, 1, 2]), ("2", [2]), ("0,2", [0, 2]), (" 1 ", [1]),
                                       ("count:2", [0, 1]), ("count:4", [0, 1, 2])])
def test_gpus_indices_all_and_count(four_gpus, spec, want):
    assert gpu.select(spec, "sm_90a") == want


@pytest.mark.parametrize("spec,msg", [("4", "no GPU 4 (4 visible"), ("count:5", "only 4 GPU(s) visible"),
                                      ("count:0", "count:N needs"), ("count:x", "count:N needs"),
                                      ("1,1", "listed twice"), ("-1", "use 'all'"), ("", "use 'all'"),
                                      ("two", "use 'all'")])
def test_gpus_refused(four_gpus, spec, msg):
    with pytest.raises(gpu.GpuSelectionError, match=re.escape(msg)):
        gpu.select(spec, "sm_90a")


def test_a_gpu_named_by_index_is_never_dropped_silently(four_gpus, capsys, monkeypatch):
    monkeypatch.setattr(sweep, "run", lambda sel, cfg: (_ for _ in ()).throw(AssertionError("ran")))
    rc = cli.main(["sweep", "--gpus", "2,3"])
    err = capsys.readouterr().err
    assert rc == ExitCode.USAGE and "GPU 3 is NVIDIA A100 (compute capability 8.0)" in err


def test_gpus_2_means_gpu_2_on_the_command_line(four_gpus, monkeypatch, tmp_path, capsys):
    seen = {}
    monkeypatch.setattr(sweep, "run", lambda sel, cfg: seen.setdefault("cfg", cfg) and {"cases": 0})
    cli.main(["sweep", "--gpus", "2", "--out", str(tmp_path / "r.jsonl")])
    assert sweep.devices(seen["cfg"], ["sm_90a"]) == [(2, "sm_90a")]


def test_cuda_visible_devices_is_recorded_and_named(four_gpus, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    assert results.environment([0])["cuda_visible_devices"] == "4,5,6,7"
    with pytest.raises(gpu.GpuSelectionError, match="CUDA_VISIBLE_DEVICES=4,5,6,7"):
        gpu.select("9", "sm_90a")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert results.environment([0])["cuda_visible_devices"] is None


# ---------------------------------------------------------------------------- progress

class FakeTTY(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_progress_bar_on_a_terminal():
    tty, clock = FakeTTY(), Clock()
    p = Progress(tty, clock=clock, min_interval=0)
    assert p.bar
    p.start(100)
    p.log("plan: 2 kernels, 100 cases")
    clock.t = 2.0
    p.update(["pass"] * 40 + ["fail"] * 10)
    p.log("[1/2] wgmma_k: 50 cases, 10 not passing (GPU 0, 2.00s)")  # the bar stands for it
    clock.t = 4.0
    p.update(["pass"] * 50)
    p.close()
    text = tty.getvalue()
    assert "\r" in text and "50/100 cases" in text and "10 not passing" in text and "ETA 0:02" in text
    assert "100/100 cases 100%" in text and text.endswith("\n") and "[1/2] wgmma_k" not in text
    assert "plan: 2 kernels, 100 cases\n" in text


def test_plain_lines_when_stderr_is_not_a_terminal():
    plain = io.StringIO()
    p = Progress(plain)
    assert not p.bar
    p.start(10)
    p.log("[1/1] wgmma_k: 10 cases, 0 not passing (GPU 0, 1.00s)")
    p.update(["pass"] * 10)
    p.close()
    assert plain.getvalue() == "[1/1] wgmma_k: 10 cases, 0 not passing (GPU 0, 1.00s)\n"


def test_a_sweep_draws_the_bar_on_a_terminal_and_lines_elsewhere(tmp_path, monkeypatch):
    if gpu.device_count():
        pytest.skip("CPU-only path")
    from harness import plan
    p = plan.make(plan.Selection(families=("tcgen05",), kinds=("f16",), cta_groups=(1,)), {})
    for stream, bar in ((FakeTTY(), True), (io.StringIO(), False)):
        monkeypatch.setattr("sys.stderr", stream)
        summary = sweep.execute(p, sweep.SweepConfig(out_path=tmp_path / "r.jsonl"))
        text = stream.getvalue()
        assert ("\r" in text) == bar and "plan:" in text
        assert (f"{summary['cases']}/{summary['cases']} cases 100%" in text) == bar


def test_gpus_all_is_never_refused(four_gpus, monkeypatch, tmp_path):
    monkeypatch.setattr(gpu, "device_info", lambda index=0: {"index": index, "name": "NVIDIA A100", "arch": None,
                                                             "compute_capability": "8.0"} if index < 4 else None)
    monkeypatch.setattr(sweep, "run", lambda sel, cfg: {"cases": 1, "not-run": 1, "ran": 0})
    assert cli.main(["sweep", "--gpus", "all", "--out", str(tmp_path / "r.jsonl")]) == ExitCode.NOTHING_RAN
    assert cli.main(["sweep", "--gpus", "count:2", "--out", str(tmp_path / "r.jsonl")]) == ExitCode.USAGE
