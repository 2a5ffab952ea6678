"""Mass faults: a sweep in which most launches fault ends in bounded time with every case accounted for.

Below a storm (fewer failed launches than engine.STORM_MIN_FAILED), every launch faulting (tests/simulated/
faulting_device.py, three fake devices) is bisected within the bounds of IsolationBudget (per kernel: widespread faults
stop it early; over the sweep: its total). In a storm (engine.FaultStorm: most of a family's launches fail), failed
launches are not bisected and the family's launches still to go are not launched: the cost is counted in the
simulated device's own units (a launch, and a GPU worker's start: its CUDA context) against a clean sweep of the same
plan, and every case still has exactly one record, a fault that says why it was not launched alone."""
import json
import os
import time
import zlib
from collections import Counter
from pathlib import Path

import pytest

from harness import plan, registry
from harness.run import engine as engine_module
from harness.run import worker as worker_module
from harness.run.engine import Engine, IsolationBudget, Job

pytestmark = pytest.mark.spread  # no module-scoped fixture: under pytest -n, each test on any free worker

BACKEND = "tests.simulated.faulting_device"
WORK = plan.make(plan.Selection(families=("wgmma",), kinds=("f16", "s8", "tf32"), n_values=(8, 16),
                                a_srcs=("SS",)), cache=True).work
# The cost of a GPU worker's start (a process, CuPy, a CUDA context: ~1 s on an H100 node) in launches of a clean
# sweep (the dense family's 392 launches in ~10 s: ~25 ms each): what a fault costs beyond its launch
START_IN_LAUNCHES = 40


def lines_read(batch):
    """The records of a batch the engine emitted, as the results file has them."""
    return [json.loads(line) for line in batch.text().splitlines()]


def test_every_launch_faulting_below_a_storm_is_bisected_within_bounds(tmp_path, monkeypatch):
    log = tmp_path / "launches.txt"
    monkeypatch.setenv("TC_SIM_LAUNCH_LOG", str(log))
    work = WORK[:engine_module.STORM_MIN_FAILED - 1]
    jobs = [Job(k, tuple(cs)) for k, cs in work]
    ncases = sum(len(cs) for _, cs in work)
    assert len(jobs) < engine_module.STORM_MIN_FAILED and ncases >= 100
    total = 10
    emitted, logs = [], []
    t = time.time()
    engine = Engine([(0, "sm_90a"), (1, "sm_90a"), (2, "sm_90a")], workers=2, backend=BACKEND,
                    isolation=IsolationBudget(total=total, per_kernel=24, widespread=2))
    try:
        engine.begin(jobs)
        timing = engine.run({j.kernel.name: "unused.cubin" for j in jobs}, 20.0,
                            lambda batch: emitted.extend(lines_read(batch)), logs.append)
    finally:
        engine.close()
    wall = time.time() - t
    launches = log.read_text().splitlines()
    # one launch per kernel, then at most `total` failed isolation launches over the whole sweep
    assert len(launches) <= len(jobs) + total, launches
    assert timing["isolation_failed_launches"] <= total and "fault_storms" not in timing
    assert wall < 120, wall
    ids = [r["id"] for r in emitted]
    assert sorted(ids) == sorted(c.id for _, cs in work for c in cs)  # every case once
    assert {r["status"] for r in emitted} == {"fault"}
    alone = [r for r in emitted if r.get("isolated") is not False]
    not_alone = [r for r in emitted if r.get("isolated") is False]
    assert alone and not_alone and len(alone) <= total
    assert all("illegal instruction" in r["error"] for r in emitted)
    assert any("widespread" in r["error"] for r in not_alone)
    assert any("isolation budget" in r["error"] for r in not_alone)  # later kernels: nothing left to bisect with


TOY = "toymany=tests.simulated.toy_many_family"


def toy_sweep(tmp_path, monkeypatch, name: str, kernels: int, fault_pct: int):
    """The toy family's `kernels` launches on one simulated GPU with two workers (the sweep command's), with
    `fault_pct` of its kernels faulting: (records, launch log lines, timings)."""
    log = tmp_path / f"{name}.log"
    monkeypatch.setenv(registry.EXTRA, TOY)
    monkeypatch.setenv("TC_SIM_TOY_KERNELS", str(kernels))
    monkeypatch.setenv("TC_SIM_FAULT_PCT", str(fault_pct))
    monkeypatch.setenv("TC_SIM_LAUNCH_LOG", str(log))
    import importlib

    import tests.simulated.toy_many_family as toy
    importlib.reload(toy)  # its kernel count is read as it is imported
    work = plan.make(plan.Selection(families=("toymany",)), {"toymany": "sm_90a"}).work
    assert len(work) == kernels
    jobs = [Job(k, tuple(cs)) for k, cs in work]
    emitted, logs = [], []
    engine = Engine([(0, "sm_90a")], workers=2, backend="tests.simulated.toy_device", workers_on_one_gpu=2)
    try:
        engine.begin(jobs)
        timing = engine.run({j.kernel.name: "unused.cubin" for j in jobs}, 20.0,
                            lambda batch: emitted.extend(lines_read(batch)), logs.append)
    finally:
        engine.close()
    ids = [r["id"] for r in emitted]
    assert sorted(ids) == sorted(c.id for _, cs in work for c in cs)  # every case once, in any event
    return emitted, log.read_text().splitlines(), timing, logs


def cost(lines) -> tuple[int, int, int]:
    """(launches, GPU worker starts, their cost in launches: the simulated device's units)."""
    launches = sum(ln.startswith("launch ") for ln in lines)
    starts = len({ln.split()[1] for ln in lines if ln.startswith("start ")})
    return launches, starts, launches + START_IN_LAUNCHES * starts


def faults(kernel_name: str, pct: int) -> bool:
    return zlib.crc32(kernel_name.encode()) % 100 < pct


# the dense family's launches (the sweep of issue 53's H100 measurement: 392 kernels, a launch each)
DENSE_LAUNCHES = 392


def test_a_fault_storm_ends_within_twice_a_clean_sweep_with_every_case_accounted(tmp_path, monkeypatch):
    """The dense family's launch count, 90% of its kernels faulting, against the same plan clean: within twice the
    clean sweep's cost in the simulated device's units (what a storm costs is about fixed: the launches that fault
    before it is one, and their workers' starts)."""
    kernels, pct = DENSE_LAUNCHES, 90
    clean, clean_lines, _, _ = toy_sweep(tmp_path, monkeypatch, "clean", kernels, 0)
    assert {r["status"] for r in clean} == {"pass"}
    asked = []  # the spares asked for: (device, how many waiting)
    # none after a failure (as on a 2-core machine), so the one asked for is the storm's whatever this host's cores
    monkeypatch.setattr(engine_module, "SPARES_AFTER_A_FAILURE", 0)
    prestart = worker_module.SparePool.prestart
    monkeypatch.setattr(worker_module.SparePool, "prestart",
                        lambda pool, device, backend, count: (asked.append((device, count)),
                                                              prestart(pool, device, backend, count))[1])
    stormy, lines, timing, logs = toy_sweep(tmp_path, monkeypatch, "storm", kernels, pct)
    # as the storm began, a spare for the diagnosis that follows (its probes run on the GPU's first worker, most
    # likely stopped by the storm: a fresh one would cost the diagnosis a second)
    assert (0, 1) in asked, asked
    clean_cost, storm_cost = cost(clean_lines), cost(lines)
    assert storm_cost[2] <= 2 * clean_cost[2], (clean_cost, storm_cost)
    # the storm began at STORM_MIN_FAILED failed launches. Of those in flight then (two workers, two launches each),
    # those held by the failed worker are withdrawn, not sent to a fresh worker to fault again, and the other worker,
    # holding launches of the storm alone, is stopped rather than waited for. None was bisected
    launched = [ln.split()[2] for ln in lines if ln.startswith("launch ")]
    failed = [k for k in launched if faults(k, pct)]
    assert engine_module.STORM_MIN_FAILED <= len(failed) <= engine_module.STORM_MIN_FAILED + 2, failed
    assert len(launched) == len(set(launched)) < kernels  # no bisection launch; most never launched
    # nor prepared: once the storm began, the launches not yet handed out were recorded from their cases, not
    # prepared (or read from the spool) first; those prepared are the ones launched and those already submitted
    prepared = [ln.split()[1] for ln in lines if ln.startswith("prepare ")]
    assert set(launched) <= set(prepared) and len(prepared) < kernels // 4, (len(prepared), len(launched))
    [storm] = timing["fault_storms"]
    # the summary's timings as the engine gave them are what docs/results-schema.json documents
    from harness.records.schema_check import errors
    schema = json.loads((Path(__file__).resolve().parent.parent / "docs" / "results-schema.json").read_text())
    assert errors({"type": "summary", "cases": len(stormy), "fault": len(stormy), "timing": timing}, schema) == []
    assert any("fault storm" in m for m in logs)
    by_kernel = {}
    for r in stormy:
        by_kernel.setdefault(r["kernel"], []).append(r)
    awaited_not = {name for name, recs in by_kernel.items() if "not awaited: a fault storm" in recs[0].get("error", "")}
    # the failed launches answered: a faulting one not awaited (its worker stopped) was never answered
    assert storm["failed"] == {"fault": len(set(failed) - awaited_not)}
    # a launch not awaited was sent to a worker, which may or may not have begun it when it was stopped
    assert storm["not_awaited"] == len(awaited_not) >= 1  # the other worker, kept full, held some
    assert storm["not_launched"] == kernels - len(launched) - len(awaited_not - set(launched))
    for name, recs in by_kernel.items():
        if name in launched and name not in awaited_not and not faults(name, pct):  # came back: its own answers
            assert {r["status"] for r in recs} == {"pass"} and all("isolated" not in r for r in recs)
        else:  # faulted as a whole, not awaited, or not launched: fault, not isolated, and why
            assert {r["status"] for r in recs} == {"fault"} and all(r["isolated"] is False for r in recs)
            reason = ("not awaited: a fault storm" if name in awaited_not else "not launched: a fault storm"
                      if name not in launched else "not bisected: a fault storm")
            assert all(reason in r["error"] for r in recs), recs[0]["error"]
    assert not any(r["status"] == "pass" for name in set(by_kernel) - set(launched) for r in by_kernel[name])


def test_a_storms_records_carry_their_cases_fields(tmp_path, monkeypatch):
    """Every record of a case carries its family's case fields, run or not (contract.case_keys): so do the records
    a storm makes without a read-back (not launched, not awaited, not bisected), as a sparse case's `unsettled`."""
    import tests.simulated.toy_family as toy_family
    monkeypatch.setattr(toy_family.PlainFamily, "case_fields", staticmethod(lambda case: {"unsettled": case.id[::-1]}))
    recs, _, _, _ = toy_sweep(tmp_path, monkeypatch, "storm", 40, 90)
    faults = [r for r in recs if r["status"] == "fault"]
    assert faults and all(r.get("unsettled") == r["id"][::-1] and "facets" in r for r in faults), faults[0]


def test_a_few_faulting_kernels_are_no_storm_and_are_bisected(tmp_path, monkeypatch):
    """The negative control: 10% of the kernels faulting is no storm; each faulting launch is bisected to its cases
    (every case of it faults alone here), every other launch runs."""
    kernels, pct = 40, 10
    recs, lines, timing, _ = toy_sweep(tmp_path, monkeypatch, "few", kernels, pct)
    assert "fault_storms" not in timing
    launched = Counter(ln.split()[2] for ln in lines if ln.startswith("launch "))
    assert set(launched) == {f"toy_add_{k}" for k in range(kernels)}
    bad = {k for k in launched if faults(k, pct)}
    assert 0 < len(bad) < engine_module.STORM_MIN_FAILED
    assert all(launched[k] > 1 for k in bad) and all(launched[k] == 1 for k in set(launched) - bad)
    assert all(r["status"] == ("fault" if r["kernel"] in bad else "pass") for r in recs)


def test_two_workers_on_one_gpu_share_its_launches_and_a_fault_in_one_is_isolated(tmp_path, monkeypatch):
    """The sweep command's engine on one GPU has two GPU workers (engine.WORKERS_ON_ONE_GPU): launches go to both
    processes, a launch that faults in one is bisected to its planted case, and every case has one record
    (passthrough device, one trap planted in the last launch). The bounds on bisection do not cost a genuine single
    fault its isolation."""
    import dataclasses

    from harness.run.engine import WORKERS_ON_ONE_GPU
    assert WORKERS_ON_ONE_GPU == 2
    log = tmp_path / "launches.txt"
    monkeypatch.setenv("TC_SIM_LAUNCH_LOG", str(log))
    work = [(k, tuple(cs)) for k, cs in WORK]
    kernel, cases = work[-1]
    planted = dataclasses.replace(cases[3], inject="trap")
    work[-1] = (kernel, cases[:3] + (planted,) + cases[4:])
    jobs = [Job(k, cs) for k, cs in work]
    emitted = []
    engine = Engine([(0, "sm_90a")], workers=2, backend="tests.simulated.passthrough_device",
                    isolation=IsolationBudget(total=10, per_kernel=24, widespread=2), workers_on_one_gpu=2)
    try:
        assert [w.device for w in engine.gpu_workers] == [0, 0]
        engine.begin(jobs)
        engine.run({j.kernel.name: "unused.cubin" for j in jobs}, 20.0, lambda batch: emitted.extend(lines_read(batch)),
                   lambda m: None)
    finally:
        engine.close()
    # the launches of the kernels before the trapped one ran on the two workers the engine started (a launch goes to
    # the worker holding fewest: the second job to the second worker, however late it starts)
    launches = [line.split() for line in log.read_text().splitlines()]
    assert len({pid for pid, name, _ in launches if name != kernel.name}) == 2, launches
    by_id = {r["id"]: r for r in emitted}
    assert len(emitted) == len(by_id) == sum(len(cs) for _, cs in work)
    assert by_id[planted.id]["status"] == "fault" and by_id[planted.id].get("isolated") is not False
    assert all(r["status"] != "fault" for i, r in by_id.items() if i != planted.id)
    assert {r["gpu"] for r in emitted} == {0}


def test_the_benchmarks_planted_fault_points_every_cta_past_its_image_buffer():
    """benchmarks/fault_everywhere.py (for benchmarks/bench_faults.py on a GPU): its plant, on the CPU."""
    import numpy as np

    from benchmarks.fault_everywhere import FAR, plant
    from harness.run.engine import prepare
    kernel, cases = WORK[0]
    inp, _ = prepare(kernel, cases[:3])
    before = inp.params.copy()
    planted = plant(inp)
    assert (planted.params["image_offset"] == FAR).all() and FAR > planted.images.size + (1 << 30)
    assert (planted.params["inject"] != 0).all()
    assert np.array_equal(planted.params["image_bytes"], before["image_bytes"])
    assert (before["image_offset"] + before["image_bytes"] <= inp.images.size).all()


def test_the_benchmarks_lbo_plant_writes_every_descriptors_lbo_unshifted(monkeypatch):
    """benchmarks/lbo_unshifted.py (for benchmarks/bench_mass_faults.py on a GPU): its plant, on the CPU. Each
    descriptor's LBO field holds the byte count, not the byte count >> 4 (wrapped to its 14 bits): the LBO the
    hardware decodes is 16x the layout's; every other field is untouched; no operand (0) stays 0; without
    TC_BENCH_PLANT nothing changes, and a value it does not know is refused."""
    import numpy as np

    from benchmarks import lbo_unshifted
    from harness.run.engine import prepare
    from harness.spec.desc_wgmma import decode_wgmma_desc
    kernel, cases = WORK[0]
    inp, _ = prepare(kernel, cases[:24])
    before = inp.params.copy()
    monkeypatch.delenv("TC_BENCH_PLANT", raising=False)
    assert lbo_unshifted.plant(inp).params is before or np.array_equal(inp.params, before)
    monkeypatch.setenv("TC_BENCH_PLANT", "lbo-unshifted")
    planted = lbo_unshifted.plant(inp).params
    assert lbo_unshifted.plant(inp).params is planted  # planted once, however often it is handed back
    changed = 0
    for name in ("desc_a", "desc_b"):
        for was, now in zip(before[name], planted[name]):
            if was == 0:
                assert now == 0
                continue
            a, b = decode_wgmma_desc(int(was))["fields"], decode_wgmma_desc(int(now))["fields"]
            assert b["leading_byte_offset"] == (a["leading_byte_offset"] * 16) % (1 << 18)
            assert {k: v for k, v in a.items() if k != "leading_byte_offset"} == \
                {k: v for k, v in b.items() if k != "leading_byte_offset"}
            changed += a["leading_byte_offset"] != b["leading_byte_offset"]
    assert changed > 0
    other = [n for n in before.dtype.names if n not in ("desc_a", "desc_b")]
    assert all(np.array_equal(before[n], planted[n]) for n in other)
    monkeypatch.setenv("TC_BENCH_PLANT", "lbo")
    with pytest.raises(ValueError, match="TC_BENCH_PLANT"):
        lbo_unshifted.use_device(0)


def test_the_benchmarks_backend_logs_each_workers_start_and_launches(monkeypatch, tmp_path):
    """benchmarks/lbo_unshifted.py with TC_BENCH_WORKER_LOG: a worker's start (imported, device ready) and each launch
    (kernel, start, seconds, whether it raised: a faulting launch raises) as JSON lines, so that a storm's diagnosis
    on a GPU shows how long it waited for a worker and its probes' launches."""
    from benchmarks import lbo_unshifted
    log = tmp_path / "workers.jsonl"
    monkeypatch.setenv("TC_BENCH_WORKER_LOG", str(log))
    monkeypatch.delenv("TC_BENCH_PLANT", raising=False)
    monkeypatch.setattr(lbo_unshifted, "_input", lambda launch: launch)
    monkeypatch.setattr(lbo_unshifted.device, "use_device", lambda index: None)
    monkeypatch.setattr(lbo_unshifted.use_device, "done", False, raising=False)

    def fault(*a):
        raise RuntimeError("cudaErrorIllegalAddress")
    monkeypatch.setattr(lbo_unshifted.device, "run", lambda cubin, name, launch: {"d": name})
    monkeypatch.setattr(lbo_unshifted.device, "run_to_host", fault)
    lbo_unshifted.use_device(0)
    lbo_unshifted.use_device(0)  # the reading thread's call: not the worker's start
    assert lbo_unshifted.run("k.cubin", "kern_ok", None) == {"d": "kern_ok"}
    with pytest.raises(RuntimeError):
        lbo_unshifted.run_to_host("k.cubin", "kern_bad", None, 0)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["event"] for x in lines] == ["imported", "device ready", "launch", "launch"]
    assert {x["pid"] for x in lines} == {os.getpid()} and all(x["t"] > 1.7e9 for x in lines)
    assert [(x["kernel"], x["raised"]) for x in lines[2:]] == [("kern_ok", False), ("kern_bad", True)]


@pytest.mark.slow
def test_the_mass_fault_benchmark_rehearses_on_a_cpu(tmp_path):
    """benchmarks/bench_mass_faults.py without a GPU (a narrow selection): every step runs, nothing is launched, and
    the report says so, with every case accounted for."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root), TC_HARNESS_CACHE=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, str(root / "benchmarks" / "bench_mass_faults.py"), "--out-dir",
                        str(tmp_path / "out"), "--kind", "s8", "--n", "8"], cwd=root, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((tmp_path / "out" / "bench-mass-faults.json").read_text())
    assert rep["every_case_accounted"] and not rep["launched_on_a_gpu"]
    assert {rep[s]["exit"] for s in ("warm", "stock", "clean", "planted", "clean2")} == {3}  # no GPU: not run
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["bench-mass-faults.json", "bench-mass-faults.log",
                                                                   "clean.jsonl.gz", "planted.jsonl.gz"]


def test_in_a_storm_one_suspect_of_the_group_is_diagnosed_on_one_worker(monkeypatch):
    """Diagnosis after a storm: its group's probes would fault as its launches did, each costing a worker its
    context, so one suspect of it is probed; every suspect shares one GPU worker per GPU."""
    from types import SimpleNamespace

    from harness import sweep
    work = WORK[:3]
    p = SimpleNamespace(work=work)
    suspects = [(k, c.id) for k, cs in work for c in cs[:2]]
    probed, started = [], []

    class Worker:
        def __init__(self, device, backend):
            started.append(device)

        def close(self):
            pass

    class Family:
        def diagnose(self, k, cases, cubin, worker, timeout, png_dir):
            probed.append((k.name, [c.id for c in cases]))
            return []
    monkeypatch.setattr(sweep, "GpuWorker", Worker)
    monkeypatch.setattr(sweep.families, "get", lambda name: Family())
    compiled = {k: SimpleNamespace(cubin_path="x.cubin") for k, _ in work}
    cfg = SimpleNamespace(out_path=None, backend="unused", timeout=5.0)
    logs = []

    def run(storm):
        probed.clear(), started.clear(), logs.clear()
        sweep._diagnose(p, compiled, suspects, [(0, "sm_90a")], cfg, None, logs.append, storm=storm)
        return list(probed), list(started)
    calm = SimpleNamespace(raging=lambda k: False)
    assert run(calm) == ([(k.name, [c.id for c in cs[:2]]) for k, cs in work], [0])
    raging = SimpleNamespace(raging=lambda k: True, guard=lambda worker, arch: worker)
    assert run(raging) == ([(work[0][0].name, [work[0][1][0].id])], [0])
    assert logs == [f"diagnosis: {len(suspects) - 1} more suspects of wgmma on sm_90a not probed: a fault storm "
                    "(one is)"]


def test_in_a_storm_the_suspect_gets_no_picture_and_its_record_says_why(monkeypatch, tmp_path):
    """A storm's suspect is diagnosed without pictures (the family gets no folder for them): drawing was most of the
    storm's diagnosis. Each of its records that would have had one (failed or inconclusive) says why not; a passing
    one gets nothing. Outside a storm the family gets the folder beside the results file."""
    from types import SimpleNamespace

    from harness import sweep
    (k0, cs0), = WORK[:1]
    given = []

    class Worker:
        def __init__(self, device, backend):
            pass

        def close(self):
            pass

    class Family:
        def diagnose(self, k, cases, cubin, worker, timeout, png_dir):
            given.append(png_dir)
            return [{"type": "diagnosis", "id": cases[0].id, "operand": op, "status": status, "summary": "s"}
                    for op, status in (("A", "pass"), ("B", "fail"), ("D", "inconclusive"))]
    monkeypatch.setattr(sweep, "GpuWorker", Worker)
    monkeypatch.setattr(sweep.families, "get", lambda name: Family())
    p = SimpleNamespace(work=WORK[:1])
    compiled = {k0: SimpleNamespace(cubin_path="x.cubin")}
    cfg = SimpleNamespace(out_path=tmp_path / "r.jsonl", backend="unused", timeout=5.0)

    def diagnose(storm):
        given.clear()
        written = []
        sweep._diagnose(p, compiled, [(k0, cs0[0].id)], [(0, "sm_90a")], cfg, SimpleNamespace(write=written.append),
                        lambda m: None, storm=storm)
        return given[0], {r["operand"]: r.get("png") for r in written}
    raging = SimpleNamespace(raging=lambda k: True, guard=lambda worker, k: worker)
    folder, pngs = diagnose(raging)
    note = sweep.NOT_DRAWN_IN_A_STORM
    assert folder is None and pngs == {"A": None, "B": note, "D": note} and note.startswith("not drawn: a fault storm")
    folder, pngs = diagnose(SimpleNamespace(raging=lambda k: False))
    assert folder == tmp_path / "r-diagnosis" and pngs == {"A": None, "B": None, "D": None}


def test_in_a_storm_a_probe_launches_no_kernel_whose_own_launches_failed(monkeypatch):
    """A stormed group's diagnosis probes through FaultStorm.guard: a launch of a kernel whose own sweep launches
    faulted (an RS suspect's SS sibling, say, which its fragment probe runs) is answered with that failure, not
    launched, as it would most likely fault again at the cost of the worker's context; every other launch, and every
    compile, reaches the worker. The family sees the storm named (contract.Device.fault_storm). Outside a storm nothing
    is withheld, and no storm is named."""
    from types import SimpleNamespace

    from harness import sweep
    from harness.contract import Kernel, LaunchFailed
    from harness.run.engine import FaultStorm
    (k0, cs0), (k1, _), (k2, _) = WORK[:3]
    reached, answers, storms = [], {}, []

    class Worker:
        def __init__(self, device, backend):
            pass

        def run(self, cubin, name, launch, timeout):
            reached.append(name)
            return {}

        def compile(self, kernel):
            return f"{kernel.name}.cubin"

        def close(self):
            pass

    class Family:
        def diagnose(self, k, cases, cubin, worker, timeout, png_dir):
            storms.append(getattr(worker, "fault_storm", None))
            for sibling in (k0, k1, k2):
                try:
                    answers[sibling.name] = worker.run(worker.compile(sibling), sibling.name, None, timeout)
                except LaunchFailed as e:
                    answers[sibling.name] = (e.status, str(e))
            return []
    monkeypatch.setattr(sweep, "GpuWorker", Worker)
    monkeypatch.setattr(sweep.families, "get", lambda name: Family())
    storm = FaultStorm(min_failed=2, rate=0.5)
    storm.note(k1, "fault")
    storm.note(k2, None)
    p = SimpleNamespace(work=WORK[:1])
    compiled = {k0: SimpleNamespace(cubin_path="x.cubin")}
    cfg = SimpleNamespace(out_path=None, backend="unused", timeout=5.0)

    def diagnose():
        reached.clear(), answers.clear()
        sweep._diagnose(p, compiled, [(k0, cs0[0].id)], [(0, "sm_90a")], cfg, None, lambda m: None, storm=storm)
        return list(reached), dict(answers)
    assert diagnose() == ([k0.name, k1.name, k2.name], {k0.name: {}, k1.name: {}, k2.name: {}})  # no storm yet
    storm.note(k2, "timeout")
    assert storm.raging(k0)
    seen, said = diagnose()
    assert seen == [k0.name]
    assert said[k1.name] == ("fault", f"not launched: {k1.name}'s own launches faulted in this sweep's fault storm, "
                                      "so a probe of it would most likely do the same")
    assert said[k2.name][0] == "timeout" and said[k0.name] == {}
    assert storms == [None, storm.describe(k0)]
    other_arch = Kernel(k1.family, "sm_100a", k1.name, k1.form)  # the same name on another arch launched nothing
    assert storm.failed_launch(other_arch.arch, k1.name) is None


