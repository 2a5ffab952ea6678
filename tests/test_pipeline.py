"""The sweep's pipeline on the CPU, with a stand-in GPU (tests/fake_gpu.py) on two 'devices': every case of
every kernel comes back as one JSON-serialisable record, and a launch with a planted fault is bisected to
the faulting case while every other case still gets its diff."""
import dataclasses
import json
from types import SimpleNamespace

from harness.run import engine as pipeline
from harness import sweep

WORK = sweep.plan(sweep.Selection(families=("f16", "s8"), n_values=(8, 16), a_srcs=("SS",)))


def _run(todo, devices=(0, 1)):
    emitted, logs = [], []

    def isolate(worker, key, preps, packed, cubin_path, error):
        return sweep.run_isolated(worker, key, preps, packed, cubin_path, 20.0, logs.append, first_error=error)

    timing = pipeline.run(todo, list(devices), 20.0, emitted.extend, isolate, logs.append, workers=2,
                          backend="fake_gpu")
    return emitted, logs, timing


def test_every_case_comes_back_once_from_both_devices():
    todo = [(k, cs, SimpleNamespace(cubin_path="unused.cubin", error=None)) for k, cs in WORK]
    recs, logs, timing = _run(todo)
    assert sorted(r["id"] for r in recs) == sorted(c.id for _, cs in WORK for c in cs)
    assert {r["gpu"] for r in recs} == {0, 1}
    assert all(r["status"] in ("pass", "fail") for r in recs)
    assert any(r["status"] == "fail" and r["first_mismatches"] for r in recs)  # C alone is not A*B + C
    json.dumps(recs)
    assert set(timing) >= {"prepare_wait_s", "gpu_worker_s"} and len(logs) == len(todo)


def test_a_faulting_launch_is_bisected_to_its_case():
    key, cases = WORK[0]
    planted = dataclasses.replace(cases[3], inject="trap")
    todo = [(key, cases[:3] + [planted] + cases[4:], SimpleNamespace(cubin_path="unused.cubin", error=None))]
    recs, logs, _ = _run(todo, devices=(0,))
    by_id = {r["id"]: r for r in recs}
    assert by_id[planted.id]["status"] == "fault" and "unspecified launch failure" in by_id[planted.id]["error"]
    assert all(r["status"] != "fault" for cid, r in by_id.items() if cid != planted.id)
    assert len(by_id) == len(cases) and any("isolating" in m for m in logs)
