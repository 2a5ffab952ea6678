"""The exit status counts every planned case: a case with no record is no pass (sweep.exit_code, the summary's
`unaccounted`), on a fresh run and under --resume. The simulated device loses the last row of each launch's outputs
(tests/simulated/toy_device.py, TC_SIM_DROP), and the toy family's read-back, zipping rows with cases, records one case
fewer per launch: a read-back that drops cases silently, caught by the count."""
import json

from harness import plan, registry, sweep
from harness.enums import ExitCode
from harness.records import results
from tests.simulated import fake_gpus

TOY = "toymany=tests.simulated.toy_many_family"


def toy_plan(monkeypatch, kernels: int = 3):
    monkeypatch.setenv(registry.EXTRA, TOY)
    monkeypatch.setenv("TC_SIM_TOY_KERNELS", str(kernels))
    import importlib

    import tests.simulated.toy_many_family as toy
    importlib.reload(toy)  # its kernel count is read as it is imported
    fake_gpus.install(monkeypatch, ["sm_90a"])
    return plan.make(plan.Selection(families=("toymany",)), {"toymany": "sm_90a"})


def run(p, out, resume=False):
    cfg = sweep.SweepConfig(out_path=out, workers=1, backend="tests.simulated.toy_device", resume=resume)
    return sweep.execute(p, cfg, log=lambda m: None)


def test_cases_without_a_record_fail_the_run(monkeypatch, tmp_path):
    p = toy_plan(monkeypatch)
    out = tmp_path / "r.jsonl"
    monkeypatch.setenv("TC_SIM_DROP", "1")
    summary = run(p, out)
    _, recs, _ = results.load(out)
    assert summary["cases"] == p.cases == 18 and len(recs) == 15 == summary["pass"]  # every record written passes
    assert summary["unaccounted"] == 3 and len(summary["unaccounted_ids"]) == 3
    assert set(summary["unaccounted_ids"]) == {c.id for _, cs in p.work for c in cs} - set(recs)
    assert sweep.exit_code(summary) == ExitCode.FAILED


def test_the_negative_control_every_case_recorded_exits_0(monkeypatch, tmp_path):
    p = toy_plan(monkeypatch)
    summary = run(p, tmp_path / "r.jsonl")
    assert summary["unaccounted"] == 0 and "unaccounted_ids" not in summary
    assert sweep.exit_code(summary) == ExitCode.OK


def test_under_resume_the_cases_the_file_holds_count_and_those_missing_do_not(monkeypatch, tmp_path):
    """--resume once left `unaccounted` None, and the exit status counted only what the resumed run wrote."""
    p = toy_plan(monkeypatch)
    out = tmp_path / "r.jsonl"
    first = run(p, out)
    assert first["unaccounted"] == 0
    # a killed run: the file lost the last kernel's records and its summary
    lines = out.read_text().splitlines()
    last = p.work[-1][0].name
    out.write_text("".join(ln + "\n" for ln in lines
                           if json.loads(ln).get("type") == "environment" or
                           (json.loads(ln).get("type") == "case" and json.loads(ln)["kernel"] != last)))
    monkeypatch.setenv("TC_SIM_DROP", "1")
    resumed = run(p, out, resume=True)
    assert resumed["unaccounted"] == 1 and sweep.exit_code(resumed) == ExitCode.FAILED
    monkeypatch.setenv("TC_SIM_DROP", "0")
    whole = run(p, out, resume=True)  # the one case left: now recorded, and the whole plan is accounted for
    assert whole["unaccounted"] == 0 and sweep.exit_code(whole) == ExitCode.OK


def test_an_interrupted_summary_is_no_pass():
    assert sweep.exit_code({"ran": 5, "pass": 5, "unaccounted": 0, "interrupted": True}) == ExitCode.FAILED
    assert sweep.exit_code({"ran": 5, "pass": 5, "unaccounted": 0}) == ExitCode.OK
