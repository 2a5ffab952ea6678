"""The sweep on a GPU that is not an sm_90a (a B200 running the tcgen05 part, say): the wgmma cases are written
to the results file as not run, with the reason, next to the tcgen05 records; nothing is silently dropped.
The GPU and the tcgen05 run are stand-ins here (monkeypatched): this tests the bookkeeping, not a GPU."""
from harness.run import gpu
from harness.records import results
from harness import sweep, tcgen05_run


def test_wgmma_cases_are_recorded_not_run_beside_tcgen05_results(tmp_path, monkeypatch):
    b200 = {"index": 0, "name": "NVIDIA B200 (stand-in)", "compute_capability": "10.0", "arch": "sm_100a",
            "uuid": "GPU-test", "multiprocessors": 148, "driver": 13000, "runtime": 13000}
    monkeypatch.setattr(gpu, "device_count", lambda: 1)
    monkeypatch.setattr(gpu, "device_info", lambda index=0: b200 if index == 0 else None)
    monkeypatch.setattr(gpu, "skip_reason",
                        lambda arch: None if arch == "sm_100a" else f"needs a {arch} GPU; this is {b200['name']}")
    tc = [{"id": "tc-case", "kernel": "tcgen05_f16_cg1_SS", "family": "tcgen05", "status": "pass"}]
    monkeypatch.setattr(tcgen05_run, "run", lambda log, timeout=30.0, workers=None: (tc, {"tcgen05_cases": 1}))
    out = tmp_path / "r.jsonl"
    summary = sweep.run(sweep.Selection(families=("b1", "tcgen05"), a_srcs=("RS",)), out, log=lambda m: None)
    env, recs, closing = results.load(out)
    wgmma_cases = sum(len(cs) for _, cs in sweep.plan(sweep.Selection(families=("b1",), a_srcs=("RS",))))
    assert recs["tc-case"]["status"] == "pass"
    not_run = [r for r in recs.values() if r["status"] == "not-run"]
    assert len(not_run) == wgmma_cases and "needs a sm_90a GPU" in not_run[0]["reason"]
    assert closing["not-run"] == wgmma_cases and closing["pass"] == 1 and summary["not_run_reason"]
    assert env["gpu"] == b200["name"]
