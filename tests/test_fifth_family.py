"""A fifth family is one subpackage and one registry line: a family kept outside harness/, on an arch the harness has
never heard of (sm_777x, compute capability 77.7, which it declares), with facets and mismatch coordinates of its own
(tests/simulated/fifth_family.py), runs through the command line's plan, sweep (on a simulated GPU of its arch),
compare, junit and report, with nothing in the package edited for it. A list of archs or of facet values written into
the package (a GPU matched by arch name, a CLI's choices, a reader's columns) fails it."""
import dataclasses
import xml.etree.ElementTree as ET

from harness import enums, plan, registry as families, sweep
from harness.records import results
from tests import cli_in_process
from tests.simulated import fake_gpus, fifth_family

RUN = cli_in_process.run


def install(monkeypatch) -> None:
    """The family registered, one simulated GPU of compute capability 77.7, nothing compiled, and every engine the
    sweep starts launching on the toy device."""
    monkeypatch.setenv(families.EXTRA, fifth_family.ENV)
    fake_gpus.install(monkeypatch, [fifth_family.ARCH], ccs={fifth_family.ARCH: "77.7"})
    start = sweep.start_engine
    monkeypatch.setattr(sweep, "start_engine", lambda devs, cfg, *a, **k: start(
        devs, dataclasses.replace(cfg, backend="tests.simulated.toy_device"), *a, **k))


def test_the_harness_has_never_heard_of_the_arch():
    assert fifth_family.ARCH not in enums.Arch.values() and fifth_family.FAMILY.name not in families.REGISTRY


def test_a_family_on_an_unknown_arch_runs_through_plan_sweep_compare_junit_and_report(monkeypatch, tmp_path):
    install(monkeypatch)
    # the plan: its arch runs on the GPU here, its own facet values select
    devs = sweep.devices(sweep.SweepConfig(), families.get("fifth").archs)
    assert devs == [(0, "sm_777x")] and sweep.run_archs(devs)["fifth"] == "sm_777x"
    p = plan.make(plan.Selection(families=("fifth",), kinds=("add3",), dtypes=("s32",)), sweep.run_archs(devs))
    assert [k.name for k, _ in p.work] == ["fifth_add3"] and len(p.work[0][1]) == 3

    # the sweep, as a user runs it: its facet values are the flags' choices, its GPU is one the harness runs on
    base, new = tmp_path / "base" / "sweep.jsonl", tmp_path / "new" / "sweep.jsonl"
    r = RUN("sweep", "--family", "fifth", "--kind", "add", "--kind", "add3", "--gpus", "0", "--out", base)
    assert r.returncode == 0, r.stderr
    _, recs, summary = results.load(base)
    assert summary["pass"] == 6 and summary["controls"] == {"pass": 2} and not summary.get("not-run")
    assert {(r["family"], r["arch"], r["status"]) for r in recs.values()} == {("fifth", "sm_777x", "pass")}
    assert recs["fifth-add3-n64"]["facets"] == {"kind": "add3", "n": 64, "dtype": "s32", "control": False}

    # a regression: compare names it where the family's records say it sits
    bad = "fifth-add3-n64"
    monkeypatch.setenv(fifth_family.WRONG, bad)
    r = RUN("sweep", "--family", "fifth", "--gpus", "0", "--out", new)
    assert r.returncode == 1, r.stderr
    r = RUN("compare", base, new)
    assert r.returncode == 1 and "REGRESSED" in r.stdout
    assert f"newly failing: {bad} [fail, 128 mismatches] first at warp 0 slot 0 row 0 col 0" in r.stdout

    # JUnit XML: the family's suites, its controls apart, the failure where it sits
    xml = tmp_path / "new.xml"
    r = RUN("junit", new, "--out", xml)
    assert r.returncode == 0, r.stderr
    root = ET.parse(xml).getroot()
    assert sorted(s.get("name") for s in root) == ["fifth", "fifth.controls"]
    failure = root.find(f".//testcase[@name='{bad}']/failure")
    assert "(warp 0, slot 0)" in failure.get("message")

    # the report: the rows are its facets
    r = RUN("report", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "| fifth | add | s32 | ? | 3 | 3 |" in r.stdout and "| fifth | add3 | s32 | ? | 3 | 2 | 1 |" in r.stdout
