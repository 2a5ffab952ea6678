"""Case records carry their facets (contract.record_facets), whatever their status, and the readers (report,
junit, compare) read them off the record: no kernel name or case id is parsed, except in records written before
records carried them (the committed results files), which keep reading as they did."""
from harness import plan, registry as families, sweep
from harness.contract import Kernel, case_record, record_facets
from harness.records import compare, junit, report, results
from tests.simulated import fake_gpus

TOY = "toy=tests.simulated.toy_family"


def test_every_record_of_a_sweep_carries_its_cases_facets(monkeypatch, tmp_path):
    monkeypatch.setenv(families.EXTRA, TOY)
    fake_gpus.install(monkeypatch, ["sm_90a"])
    p = plan.make(plan.Selection(families=("toy",)), {"toy": "sm_90a"})
    out = tmp_path / "toy.jsonl"
    sweep.execute(p, sweep.SweepConfig(out_path=out, workers=2, backend="tests.simulated.toy_device"),
                  log=lambda m: None)
    _, recs, _ = results.load(out)
    fam = families.get("toy")
    want = {c.id: {k: v for k, v in fam.facets_of(c).items() if k in ("n", "control")} for _, cs in p.work for c in cs}
    assert {cid: r["facets"] for cid, r in recs.items()} == want and {r["status"] for r in recs.values()} == {"pass"}


def test_a_case_recorded_without_running_carries_its_facets_too(monkeypatch, tmp_path):
    fake_gpus.hide_real_gpus(monkeypatch)
    monkeypatch.setenv(families.EXTRA, TOY)
    p = plan.make(plan.Selection(families=("toy",), n_values=(8,)))
    out = tmp_path / "toy.jsonl"
    sweep.execute(p, sweep.SweepConfig(out_path=out, backend="tests.simulated.toy_device"), log=lambda m: None)
    _, recs, _ = results.load(out)
    assert {r["status"] for r in recs.values()} == {"not-run"}
    assert all(r["facets"] == {"n": 8, "control": False} for r in recs.values())


def test_the_report_reads_a_records_facets_not_its_kernel_name():
    kernel = Kernel("wgmma", "sm_90a", "wgmma_f16_m64n8k16_f16_SS", None)
    old = case_record("m64n8k16-f16.f16.f16-SS-A:K/none-B:K/32B", kernel, "pass")
    assert report.row_key(old) == ("wgmma", "f16", "f16", "SS")  # a committed file's record: read off the name
    new = dict(old, facets={"kind": "tf32", "dtype": "f32", "a_src": "RS", "n": 8, "control": False})
    assert report.row_key(new) == ("wgmma", "tf32", "f32", "RS")
    toy = dict(case_record("toy-add-n8-bias0", Kernel("toy", "sm_777x", "toy_add", None), "pass"),
               facets={"n": 8, "control": False})
    assert report.row_key(toy) == ("toy", "?", "?", "?")  # a facet the family does not have


def test_a_control_is_known_by_its_facets_where_its_record_has_no_control_field():
    kernel = Kernel("toy", "sm_777x", "toy_add", None)
    ctl = case_record("toy-check", kernel, "not-run", reason="no GPU", facets={"n": 8, "control": True})
    plain = case_record("toy-neg-looking-id", kernel, "pass", facets={"n": 8, "control": False})
    assert report.is_control(ctl) and not report.is_control(plain)  # the id is read only without facets
    assert report.is_control(case_record("x-neg-swizzle", kernel, "pass"))
    suites = [s.get("name") for s in junit.build({}, {"toy-check": ctl, "toy-neg-looking-id": plain})]
    assert suites == ["toy", "toy.controls"]


def test_a_familys_own_mismatch_coordinates_are_named_by_compare_and_junit():
    m = {"warp": 3, "slot": 1, "row": 4, "col": 5, "expected": 1.0, "got": 2.0}
    assert compare.where(m) == "warp 3 slot 1"
    assert "(warp 3, slot 1)" in junit.failure_message({"mismatches": 1, "first_mismatches": [m]})


def test_the_facets_of_every_in_tree_case_give_the_rows_its_name_gave():
    """A results file written now tables as one of the same cases written before the records carried facets."""
    # the families whose records were written before they carried facets (mma_sync's carried them from the first)
    older = ("wgmma", "wgmma_sp", "wgmma_seq", "tcgen05")
    p = plan.make(plan.Selection(families=older),
                  {f: "sm_90a" for f in ("wgmma", "wgmma_sp", "wgmma_seq")} | {"tcgen05": "sm_103a"}, cache=True)
    differ = []
    for k, cs in p.work:
        fam = families.get(k.family)
        for c in cs:
            old = case_record(c.id, k, "pass")
            new = dict(old, **record_facets(fam, c))
            if (report.row_key(old), report.is_control(old)) != (report.row_key(new), report.is_control(new)):
                differ.append(c.id)
    assert p.cases > 50000 and differ == []
