"""Adding a family is one new subpackage and no change to the engine: a toy family kept outside harness/ runs
through the real sweep (plan, engine with preparing and GPU worker processes, records, compare) unchanged."""
from harness import plan, registry, sweep
from harness.records import compare, results
from tests.simulated import fake_gpus

ENV = "toy=tests.simulated.toy_family"


def test_a_family_the_engine_has_never_seen_runs_through_the_sweep(monkeypatch, tmp_path):
    monkeypatch.setenv(registry.EXTRA, ENV)
    fake_gpus.install(monkeypatch, ["sm_90a"])
    p = plan.make(plan.Selection(families=None, n_values=(64,), match="toy"))
    assert [k.name for k, _ in p.work] == ["toy_add"] and len(p.work[0][1]) == 2
    out = tmp_path / "toy.jsonl"
    summary = sweep.execute(p, sweep.SweepConfig(out_path=out, workers=2, backend="tests.simulated.toy_device"),
                            log=lambda m: None)
    _, recs, _ = results.load(out)
    assert summary["pass"] == 2 and {r["family"] for r in recs.values()} == {"toy"}
    assert all(r["status"] == "pass" and r["arch"] == "sm_90a" for r in recs.values())
    assert not compare.compare(out, out)["regressed"]


def test_the_registry_refuses_a_malformed_entry(monkeypatch):
    monkeypatch.setenv(registry.EXTRA, "toy")
    try:
        registry.registry()
    except ValueError as e:
        assert "name=module" in str(e)
    else:
        raise AssertionError("a malformed entry was accepted")
