"""The sweep compiles the kernels while it plans the cases where the kernels are known first
(plan.kernels_first): the same kernels the plan compiles, begun before the plan is built, never left running."""
import json
import threading
import time

import pytest

from harness import plan as planning, sweep
from harness.plan import Selection, SweepError
from harness.records import results
from harness.run import compile as nvrtc, engine as engine_module
from tests.simulated import fake_gpus

pytestmark = pytest.mark.spread  # no module-scoped fixture: under pytest -n, each test on any free worker

GPU_ARCHS = {"wgmma": "sm_90a", "wgmma_sp": "sm_90a", "wgmma_seq": "sm_90a", "tcgen05": "sm_100a", "mma_sync": "sm_90a"}


@pytest.mark.parametrize("sel,run_archs,shard", [
    (Selection(), {}, None),  # a machine without a GPU: every family's first arch, tcgen05's other compile-only
    (Selection(), GPU_ARCHS, None),
    (Selection(families=("tcgen05",)), {"tcgen05": "sm_103a"}, None),
    (Selection(families=("wgmma_seq", "tcgen05")), {}, (0, 3)),
    (Selection(families=("wgmma_seq", "tcgen05")), {}, (2, 3)),
], ids=["no-gpu", "gpu", "b300", "shard0", "shard2"])
def test_the_kernels_known_first_are_the_plans(sel, run_archs, shard):
    first = planning.kernels_first(sel, run_archs, shard)
    assert first == sweep.plan_kernels(planning.make(sel, run_archs, shard, cache=True))


@pytest.mark.parametrize("sel", [Selection(families=("wgmma",), kinds=("b1",)), Selection(match="m64n8k"),
                                 Selection(families=("wgmma_sp",), controls=False)], ids=["filter", "match", "no-controls"])
def test_a_selection_of_cases_leaves_the_kernels_to_the_plan(sel):
    assert planning.kernels_first(sel, {}, None) is None


def _watch(monkeypatch):
    """Events: the compile began; the plan began. `compiling_while_planned`: whether the compile had begun by the time
    the plan was built (the plan waits up to 20 s for it). The sweeps see no GPU, as on a CPU-only machine (these
    tests run on GPU nodes too)."""
    fake_gpus.hide_real_gpus(monkeypatch)
    began = {"compile": threading.Event(), "plan": threading.Event(), "compiling_while_planned": []}
    real_compile, real_make = sweep.compile_kernels, planning.make

    def compile_kernels(kernels, cfg, log, helpers=None, submitted=None):
        began["compile"].set()
        return real_compile(kernels, cfg, log, helpers, submitted=submitted)

    def make(*args, **kwargs):
        began["plan"].set()
        began["compiling_while_planned"].append(began["compile"].wait(20))
        return real_make(*args, **kwargs)
    monkeypatch.setattr(sweep, "compile_kernels", compile_kernels)
    monkeypatch.setattr(planning, "make", make)
    return began


def _stand_in_compile(tmp_path, seconds: float, times: dict | None = None):
    """compile.compile_many as a stand-in: it hands the modules out (`submitted`), takes `seconds`, and compiles
    nothing (each kernel a CompileError); `times` gets when it handed them out and when it ended."""

    def compile_many(jobs, *args, submitted=None, **kwargs):
        if times is not None:
            times["submitted"] = time.monotonic()
        submitted()
        time.sleep(seconds)
        if times is not None:
            times["compiled"] = time.monotonic()
        return [nvrtc.Compiled(j.name, j.arch, None, False, "",
                               nvrtc.CompileError(j.name, j.arch, "not compiled here", tmp_path / "none.cu"))
                for j in jobs]
    return compile_many


def test_the_kernels_compile_while_the_cases_are_planned(monkeypatch, tmp_path):
    began = _watch(monkeypatch)
    summary = sweep.run(Selection(families=("wgmma_seq",)), sweep.SweepConfig(out_path=tmp_path / "r.jsonl"),
                        log=lambda m: None)
    assert began["compiling_while_planned"] == [True] and summary["not-run"] == summary["cases"] > 0
    assert "compile_s" in summary and not summary.get("compile_errors")


def test_the_plan_begins_once_the_modules_have_gone_to_the_helpers(monkeypatch, tmp_path):
    """The plan, built in the sweep's own process, waits until the compile's modules have been handed out
    (EarlyCompile.wait_submitted): before, it took the interpreter's lock from the thread making the sources and
    modules. It is still built while they compile (a stand-in compile that takes 0.3 s once it has handed them out)."""
    fake_gpus.hide_real_gpus(monkeypatch)
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))  # nothing cached: the kernels go to compile
    times = {}
    compile_many = _stand_in_compile(tmp_path, 0.3, times)
    real_make = planning.make

    def make(*args, **kwargs):
        times.setdefault("plan", time.monotonic())
        return real_make(*args, **kwargs)
    monkeypatch.setattr(nvrtc, "compile_many", compile_many)
    monkeypatch.setattr(planning, "make", make)
    sweep.run(Selection(families=("wgmma_seq",)), sweep.SweepConfig(out_path=tmp_path / "r.jsonl"), log=lambda m: None)
    assert times["submitted"] <= times["plan"] < times["compiled"], times


def test_a_selection_of_cases_is_planned_before_it_compiles(monkeypatch, tmp_path):
    began = _watch(monkeypatch)
    monkeypatch.setattr(began["compile"], "wait", lambda timeout=None: False)  # the plan waits for nothing
    order = []
    real = sweep.compile_kernels
    monkeypatch.setattr(sweep, "compile_kernels",
                        lambda k, c, log, helpers=None, submitted=None:
                        order.append(("compile", began["plan"].is_set())) or real(k, c, log, helpers,
                                                                                   submitted=submitted))
    sweep.run(Selection(families=("wgmma_seq",), match="kloop-add"),
              sweep.SweepConfig(out_path=tmp_path / "r.jsonl"), log=lambda m: None)
    assert order == [("compile", True)]


def test_a_plan_that_fails_leaves_no_compile_running(monkeypatch, tmp_path):
    """A stand-in compile that is still running 0.5 s after the plan failed (the real one compiled every sequence
    kernel: 6-8 s of CI, and as much again where the test beside it compiled them at the same time)."""
    began = _watch(monkeypatch)
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))  # nothing cached: the kernels go to compile
    compile_many = _stand_in_compile(tmp_path, 0.5)

    def failing_make(*args, **kwargs):
        began["compile"].wait(60)
        raise SweepError("the plan failed")
    monkeypatch.setattr(nvrtc, "compile_many", compile_many)
    monkeypatch.setattr(planning, "make", failing_make)
    with pytest.raises(SweepError, match="the plan failed"):
        sweep.run(Selection(families=("wgmma_seq",)), sweep.SweepConfig(out_path=tmp_path / "r.jsonl"),
                  log=lambda m: None)
    assert not any(t.name == "early-compile" and t.is_alive() for t in threading.enumerate())


def test_a_resumed_sweep_is_checked_before_it_compiles(monkeypatch, tmp_path):
    """A --resume file is read and checked after the plan: a refused one must leave nothing compiled."""
    fake_gpus.hide_real_gpus(monkeypatch)
    compiled = []
    monkeypatch.setattr(sweep, "compile_kernels",
                        lambda k, c, log, helpers=None, submitted=None: compiled.append(len(k)) or {})
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps({"type": "environment", "schema": results.SCHEMA, "toolchain": "driver-jit",
                               "nvrtc": "12.0"}) + "\n")
    with pytest.raises(SweepError, match="--resume"):
        sweep.run(Selection(families=("wgmma_seq",)), sweep.SweepConfig(out_path=out, resume=True), log=lambda m: None)
    assert compiled == []


def test_the_plans_kernels_the_early_list_lacked_compile_after_it_and_its_others_are_dropped(monkeypatch, tmp_path):
    """An early list that differs from the plan (it cannot today: the first test) still gives every planned kernel
    its own module: the kernels it lacked compile after the plan, and one the plan does not have is not used."""
    fake_gpus.hide_real_gpus(monkeypatch)
    sel = Selection(families=("wgmma_seq",))
    planned = planning.kernels_first(sel, {}, None)
    stranger = planning.kernels_first(Selection(families=("tcgen05",)), {}, None)[0]
    monkeypatch.setattr(planning, "kernels_first", lambda *a: planned[:5] + [stranger])
    calls = []
    real = sweep.compile_kernels
    monkeypatch.setattr(sweep, "compile_kernels",
                        lambda k, c, log, helpers=None, submitted=None:
                        calls.append(list(k)) or real(k, c, log, helpers, submitted=submitted))
    out = tmp_path / "r.jsonl"
    summary = sweep.run(sel, sweep.SweepConfig(out_path=out), log=lambda m: None)
    assert calls == [planned[:5] + [stranger], planned[5:]]
    assert summary["not-run"] == summary["cases"] > 0 and not summary.get("compile_errors")
    _, recs, _ = results.load(out)
    assert {r["kernel"] for r in recs.values()} == {k.name for k in planned}


@pytest.mark.parametrize("early", [True, False], ids=["compiled-while-planned", "compiled-after-the-plan"])
@pytest.mark.parametrize("device_node", [True, False], ids=["helpers-ahead", "helpers-with-the-engine"])
def test_a_sweep_with_a_gpu_compiles_on_its_engines_helpers(early, device_node, monkeypatch, tmp_path):
    """One pool of helpers a sweep: they compile the kernels, then the engine prepares the launches on them (a compile
    pool beside the engine's started as many processes again, at the sweep's start). Where NVIDIA's device node is,
    they start as the sweep begins (helpers_ahead) and the engine takes them; else the engine starts them. The plan
    is four cases of two kernels (the whole family's, prepared by a GPU node's one-process pool under pytest -n, took
    40 s), compiled while it is made or after it."""
    fake_gpus.install(monkeypatch, ["sm_90a"])
    node = tmp_path / "nvidiactl"
    if device_node:
        node.touch()
    monkeypatch.setattr(sweep, "NVIDIA_CONTROL_DEVICE", str(node))
    sel = Selection(families=("wgmma_seq",))
    whole = planning.make(sel, {"wgmma_seq": "sm_90a"}, cache=True)
    small = planning.Plan([(k, cs[:2]) for k, cs in whole.work[:2]])
    monkeypatch.setattr(planning, "make", lambda *a, **k: small)
    if not early:
        monkeypatch.setattr(sweep, "compile_first", lambda *a: None)
    simulated, given, engines, ahead = sweep.compile_kernels, [], [], []
    monkeypatch.setattr(sweep, "compile_kernels",
                        lambda k, c, log, helpers=None, submitted=None:
                        given.append(helpers) or simulated(k, c, log, helpers))
    real_start, real_ahead = sweep.start_engine, sweep.helpers_ahead
    monkeypatch.setattr(sweep, "start_engine", lambda *a, **k: engines.append(real_start(*a, **k)) or engines[-1])
    monkeypatch.setattr(sweep, "helpers_ahead", lambda cfg: ahead.append(real_ahead(cfg)) or ahead[-1])
    summary = sweep.run(sel, sweep.SweepConfig(out_path=tmp_path / "r.jsonl", backend=fake_gpus.BACKEND),
                        log=lambda m: None)
    assert summary["cases"] == summary["ran"] == 4 and len(engines) == 1 and given == [engines[0].helpers]
    assert (ahead == [engines[0].helpers]) if device_node else (ahead == [None])
    assert not engines[0].helpers.executor._processes  # shut down with the engine


def test_a_sweep_without_a_gpu_starts_no_helpers_ahead(monkeypatch, tmp_path):
    """No device node: no engine, no helpers ahead; the compile gets none (it starts a pool of its own only for what
    is not cached)."""
    fake_gpus.hide_real_gpus(monkeypatch)
    monkeypatch.setattr(sweep, "NVIDIA_CONTROL_DEVICE", str(tmp_path / "nvidiactl"))
    given = []

    def compile_kernels(k, c, log, helpers=None, submitted=None):
        given.append(helpers)
        raise KeyboardInterrupt  # seen what it was given: the sweep goes no further
    monkeypatch.setattr(sweep, "compile_kernels", compile_kernels)
    with pytest.raises(KeyboardInterrupt):
        sweep.run(Selection(families=("wgmma_seq",)), sweep.SweepConfig(out_path=tmp_path / "r.jsonl"),
                  log=lambda m: None)
    assert given == [None]


def test_launches_are_prepared_while_the_kernels_compile(monkeypatch, tmp_path):
    """A cold sweep's preparation goes on while its kernels compile (sweep.EarlyCompile.wait tops the engine up):
    where every launch is kept, past the `ahead` launches the engine prepares before the first one otherwise. The
    compile here ends only once it has seen that, or after 20 s: a sweep that did not top up would fail, not hang."""
    fake_gpus.hide_real_gpus(monkeypatch)
    fake_gpus.install(monkeypatch, ["sm_90a"])
    engines = []
    real_top_up = engine_module.Engine.top_up
    monkeypatch.setattr(engine_module.Engine, "top_up", lambda self: engines.append(self) or real_top_up(self))
    simulated, seen = sweep.compile_kernels, []

    def ahead_of_the_launches() -> bool:
        return bool(engines) and len(engines[-1].preparing) > engines[-1].ahead

    def compile_kernels(kernels, cfg, log, helpers=None, submitted=None):
        end = time.time() + 20
        while time.time() < end and not ahead_of_the_launches():
            time.sleep(0.02)
        seen.append(ahead_of_the_launches())
        return simulated(kernels, cfg, log, helpers)
    monkeypatch.setattr(sweep, "compile_kernels", compile_kernels)
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    whole = planning.make(Selection(families=("wgmma_seq",)), {"wgmma_seq": "sm_90a"}, cache=True)
    p = planning.Plan([(k, cs[:2]) for k, cs in whole.work[:6]])  # 6 launches; one preparing process: `ahead` 2
    cfg = sweep.SweepConfig(out_path=tmp_path / "r.jsonl", workers=1, backend=fake_gpus.BACKEND, keep_launches=True)
    summary = sweep.execute(p, cfg, log=lambda m: None, early=sweep.EarlyCompile(sweep.plan_kernels(p), cfg))
    assert seen == [True]
    _, recs, _ = results.load(tmp_path / "r.jsonl")
    assert len(recs) == summary["cases"] == 12 and summary["unaccounted"] == 0 and not summary.get("compile_errors")
