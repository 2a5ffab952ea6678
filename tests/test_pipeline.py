"""The engine on the CPU, with a stand-in GPU backend (tests/simulated/passthrough_device.py) on two 'devices':
every case of every kernel comes back as one JSON-serialisable record, and a launch with a planted fault is
bisected to the faulting case while every other case still gets its result."""
import dataclasses
import json

from harness import plan
from harness.run.engine import Engine, Job

WORK = plan.make(plan.Selection(families=("wgmma",), kinds=("f16", "s8"), n_values=(8, 16), a_srcs=("SS",)), cache=True).work
BACKEND = "tests.simulated.passthrough_device"


def _run(jobs, devices=(0, 1)):
    emitted, logs = [], []
    engine = Engine([(d, "sm_90a") for d in devices], workers=2, backend=BACKEND)
    try:
        engine.begin(jobs)
        timing = engine.run({j.kernel.name: "unused.cubin" for j in jobs}, 20.0, emitted.extend, logs.append)
    finally:
        engine.close()
    return emitted, logs, timing


def test_every_case_comes_back_once_from_both_devices():
    jobs = [Job(k, tuple(cs)) for k, cs in WORK]
    recs, logs, timing = _run(jobs)
    assert sorted(r["id"] for r in recs) == sorted(c.id for _, cs in WORK for c in cs)
    assert {r["gpu"] for r in recs} == {0, 1}
    assert all(r["status"] in ("pass", "fail") and r["family"] == "wgmma" and r["arch"] == "sm_90a" for r in recs)
    assert any(r["status"] == "fail" and r["first_mismatches"] for r in recs)  # C alone is not A*B + C
    json.dumps(recs)
    assert set(timing) >= {"prepare_wait_s", "gpu_worker_s"} and len(logs) == len(jobs)
    assert timing["prepare_s"] > 0 and timing["readback_s"] > 0 and timing["engine_cpu_s"] > 0


def test_a_faulting_launch_is_bisected_to_its_case():
    kernel, cases = WORK[0]
    planted = dataclasses.replace(cases[3], inject="trap")
    jobs = [Job(kernel, tuple(cases[:3] + [planted] + cases[4:]))]
    recs, logs, _ = _run(jobs, devices=(0,))
    by_id = {r["id"]: r for r in recs}
    assert by_id[planted.id]["status"] == "fault" and "unspecified launch failure" in by_id[planted.id]["error"]
    assert all(r["status"] != "fault" for cid, r in by_id.items() if cid != planted.id)
    assert len(by_id) == len(cases) and any("isolating" in m for m in logs)
