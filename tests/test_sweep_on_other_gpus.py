"""The sweep on a GPU that is not an sm_90a (a B200 running the tcgen05 part, say): the sm_90a cases (wgmma
here) are written to the results file as not run, with the reason, next to the tcgen05 records; nothing is
silently dropped.
The GPU is a stand-in here (monkeypatched) and so is its backend (tests/simulated/passthrough_device.py, whose
tcgen05 answer is never a pass): this tests the bookkeeping, not a GPU."""
from harness import plan, sweep
from harness.records import results
from harness.run import gpu


def test_wgmma_cases_are_recorded_not_run_beside_tcgen05_results(tmp_path, monkeypatch):
    b200 = {"index": 0, "name": "NVIDIA B200 (stand-in)", "compute_capability": "10.0", "arch": "sm_100a",
            "uuid": "GPU-test", "multiprocessors": 148, "driver": 13000, "runtime": 13000}
    monkeypatch.setattr(gpu, "device_count", lambda: 1)
    monkeypatch.setattr(gpu, "device_info", lambda index=0: b200 if index == 0 else None)
    monkeypatch.setattr(gpu, "skip_reason",
                        lambda *archs, ptx=False: None if "sm_100a" in archs else f"needs a {' or '.join(archs)} GPU; "
                                                                       f"this is {b200['name']}")
    out = tmp_path / "r.jsonl"
    sel = sweep.Selection(families=("wgmma", "tcgen05"), kinds=("b1", "f16"), a_srcs=("RS", "TS"), n_values=(8, 64))
    cfg = sweep.SweepConfig(out_path=out, backend="tests.simulated.passthrough_device", workers=2, diagnose=0)
    summary = sweep.run(sel, cfg, log=lambda m: None)
    env, recs, closing = results.load(out)
    planned = plan.make(sel, {"tcgen05": "sm_100a"}).work
    wgmma_cases = sum(len(cs) for k, cs in planned if k.family == "wgmma")
    tc_cases = sum(len(cs) for k, cs in planned if k.family == "tcgen05")
    assert wgmma_cases and tc_cases and len(recs) == wgmma_cases + tc_cases
    not_run = [r for r in recs.values() if r["status"] == "not-run"]
    assert len(not_run) == wgmma_cases and {r["family"] for r in not_run} == {"wgmma"}
    assert "needs a sm_90a GPU" in not_run[0]["reason"]
    ran = [r for r in recs.values() if r["family"] == "tcgen05"]
    # a control whose encoding the ISA leaves undefined counts a fault as caught (its record says so); the rest fault
    assert {r["status"] for r in ran if r.get("caught_by") != "fault"} <= {"fault", "fail"}
    assert all(r["prediction"] == "undefined" and r["launch_status"] == "fault" for r in ran if r["status"] == "pass")
    assert {r["arch"] for r in ran} == {"sm_100a"}
    assert closing["not-run"] == wgmma_cases and summary["not_run_reasons"]["wgmma"]
    assert env["gpu"] == b200["name"]
