"""The GPU worker started ahead (harness/sweep.py worker_ahead): where a GPU may be, the worker of the first GPU
`--gpus` names starts before the sweep asks CUDA which GPUs are here, and the engine runs on that very worker; where
the GPU is not one the sweep runs on, or none is usable, it is stopped, and no process is left behind. The GPUs
and their backend are stand-ins (tests/simulated/): this tests the hand-over, not a GPU."""
import multiprocessing

import pytest

from harness import sweep
from harness.run import engine as engine_mod, gpu
from harness.run.worker import GpuWorker
from tests.simulated import fake_gpus

SEL = sweep.Selection(families=("wgmma",), kinds=("f16",), n_values=(8,), a_srcs=("RS",), data_modes=("exact",))


@pytest.fixture
def events(monkeypatch, tmp_path):
    """What happened, in order: ('start', device) for each GPU worker started, 'count' when CUDA is asked how many
    GPUs there are; the control device is there (a file standing in for it)."""
    seen = []
    control = tmp_path / "nvidiactl"
    control.write_text("")
    monkeypatch.setattr(sweep, "NVIDIA_CONTROL_DEVICE", str(control))
    start = GpuWorker.start
    monkeypatch.setattr(GpuWorker, "start",
                        lambda self, fork=False: seen.append(("start", self.device)) or start(self, fork))
    return seen


def count_asked(monkeypatch, seen):
    count = gpu.device_count
    monkeypatch.setattr(gpu, "device_count", lambda: seen.append("count") or count())


def engines(monkeypatch) -> list:
    made = []
    init = engine_mod.Engine.__init__

    def recorded(self, *a, **k):
        init(self, *a, **k)
        made.append(self)
    monkeypatch.setattr(engine_mod.Engine, "__init__", recorded)
    return made


def workers_ahead(monkeypatch) -> list:
    """Every worker sweep.worker_ahead returns, in order (None where it starts none)."""
    made = []
    worker_ahead = sweep.worker_ahead

    def recorded(cfg, fork=False):
        made.append(worker_ahead(cfg, fork))
        return made[-1]
    monkeypatch.setattr(sweep, "worker_ahead", recorded)
    return made


def config(tmp_path, gpus="all"):
    return sweep.SweepConfig(out_path=tmp_path / "r.jsonl", backend="tests.simulated.passthrough_device", workers=2,
                             diagnose=0, gpus=gpus)


def test_the_first_gpus_worker_starts_before_cuda_is_asked_and_the_engine_runs_on_it(events, monkeypatch, tmp_path):
    fake_gpus.install(monkeypatch, ["sm_90a"])
    count_asked(monkeypatch, events)
    made = engines(monkeypatch)
    ahead = workers_ahead(monkeypatch)
    summary = sweep.run(SEL, config(tmp_path), log=lambda m: None)
    assert events[0] == ("start", 0) and "count" in events and events.index("count") > 0
    assert len(made) == 1 and made[0].gpu_workers == ahead  # that very worker, not a second one for GPU 0
    assert summary["cases"] == summary["ran"] > 0


def test_with_two_workers_on_its_one_gpu_the_engine_takes_the_worker_ahead_and_starts_one_more(events, monkeypatch,
                                                                                                  tmp_path):
    """The sweep command's engine on a lone GPU (workers_on_one_gpu, engine.WORKERS_ON_ONE_GPU): the worker started
    ahead is its first, and a second, another process on the same GPU, is started beside it."""
    import dataclasses
    fake_gpus.install(monkeypatch, ["sm_90a"])
    made = engines(monkeypatch)
    ahead = workers_ahead(monkeypatch)
    summary = sweep.run(SEL, dataclasses.replace(config(tmp_path), workers_on_one_gpu=2), log=lambda m: None)
    assert len(made) == 1 and len(made[0].gpu_workers) == 2 and made[0].gpu_workers[0] is ahead[0]
    assert made[0].gpu_workers[1] is not ahead[0] and [w.device for w in made[0].gpu_workers] == [0, 0]
    assert events[0] == ("start", 0) and summary["cases"] == summary["ran"] > 0


def test_gpus_named_by_index_get_no_worker_ahead(events, monkeypatch, tmp_path):
    """An index may name no GPU (refused once CUDA is asked, with the reason): no worker is started for it beforehand,
    whose failed start-up would print beside the refusal; the engine starts the named GPU's worker as before."""
    fake_gpus.install(monkeypatch, ["sm_90a", "sm_90a"])
    made = engines(monkeypatch)
    assert sweep.worker_ahead(config(tmp_path, "1")) is None and sweep.worker_ahead(config(tmp_path, "7")) is None
    sweep.run(SEL, config(tmp_path, "1"), log=lambda m: None)
    assert events == [("start", 1)] and [w.device for w in made[0].gpu_workers] == [1]
    counted = sweep.worker_ahead(config(tmp_path, "count:2"))
    counted.kill()
    assert counted.device == 0  # a count starts at GPU 0, which is there


def test_a_worker_started_for_a_sweep_refused_before_its_compile_is_stopped(events, monkeypatch, tmp_path):
    """The toolchain is checked against the kernels before the engine starts: a sweep it refuses there has no engine
    to hand the worker to, and stops it."""
    fake_gpus.install(monkeypatch, ["sm_90a"])
    stopped = []
    kill = GpuWorker.kill
    monkeypatch.setattr(GpuWorker, "kill", lambda self: stopped.append(self) or kill(self))
    ahead = workers_ahead(monkeypatch)

    def refused(*a):
        raise sweep.SweepError("the toolchain cannot build sm_90a")
    monkeypatch.setattr(sweep, "compile_first", refused)
    made = engines(monkeypatch)
    with pytest.raises(sweep.SweepError, match="cannot build"):
        sweep.run(SEL, config(tmp_path), log=lambda m: None)
    assert events == [("start", 0)] and stopped == ahead and made == []
    assert not multiprocessing.active_children()  # no process left behind


def test_a_worker_started_for_no_usable_gpu_is_stopped(events, monkeypatch, tmp_path):
    fake_gpus.hide_real_gpus(monkeypatch)
    stopped = []
    kill = GpuWorker.kill
    monkeypatch.setattr(GpuWorker, "kill", lambda self: stopped.append(self) or kill(self))
    ahead = workers_ahead(monkeypatch)
    monkeypatch.setattr(sweep, "compile_first", lambda *a: None)
    monkeypatch.setattr(sweep, "execute", lambda p, cfg, *a, **k: {"cases": 0})
    sweep.run(SEL, config(tmp_path), log=lambda m: None)
    assert events == [("start", 0)] and stopped == ahead
    assert not multiprocessing.active_children()  # no process left behind


def test_no_worker_is_started_ahead_where_no_gpu_can_be_or_the_selection_is_unreadable(monkeypatch, tmp_path):
    monkeypatch.setattr(sweep, "NVIDIA_CONTROL_DEVICE", str(tmp_path / "absent"))
    assert sweep.worker_ahead(config(tmp_path)) is None
    (tmp_path / "nvidiactl").write_text("")
    monkeypatch.setattr(sweep, "NVIDIA_CONTROL_DEVICE", str(tmp_path / "nvidiactl"))
    assert sweep.worker_ahead(config(tmp_path, "two")) is None  # refused later, with the reason
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # every GPU hidden
    assert sweep.worker_ahead(config(tmp_path)) is None
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")

    def refused(self, fork=False):
        raise OSError("no more processes")
    monkeypatch.setattr(GpuWorker, "start", refused)
    assert sweep.worker_ahead(config(tmp_path)) is None  # only a head start: the sweep starts its own


class StubWorker:
    """Stands in for the worker the sweep command starts ahead: records being handed on and stopped."""
    def __init__(self):
        self.killed = 0

    def kill(self):
        self.killed += 1


class StubHelpers:
    """Stands in for the helpers the sweep command starts ahead: records being shut down."""
    def __init__(self):
        self.shut = 0

    def shutdown(self):
        self.shut += 1


def test_the_sweep_command_starts_the_worker_before_checking_its_input_and_stops_it_when_refused(monkeypatch, tmp_path):
    """And its helpers (sweep.helpers_ahead), after the worker is forked: handed on to the sweep, shut down after it
    or when the input is refused."""
    from harness import cli
    order, stub, helpers = [], StubWorker(), StubHelpers()
    monkeypatch.setattr(sweep, "worker_ahead",
                        lambda cfg, fork=False: order.append(("ahead", cfg.gpus, fork)) or stub)
    monkeypatch.setattr(sweep, "helpers_ahead", lambda cfg: order.append(("helpers", cfg.workers)) or helpers)
    monkeypatch.setattr(sweep, "run", lambda sel, cfg: order.append(("run", cfg.ahead, cfg.helpers))
                        or order.append(("workers on one GPU", cfg.workers_on_one_gpu)) or {"cases": 0})
    same = str(tmp_path / "a.jsonl")
    assert cli.main(["sweep", "--out", same, "--junit", same], own_process=True) == 2  # the XML would overwrite it
    # started (forked), refused, stopped; never run
    assert order == [("ahead", "all", True), ("helpers", None)] and stub.killed == 1 and helpers.shut == 1
    cli.main(["sweep", "--gpus", "count:1", "--jobs", "3", "--out", str(tmp_path / "b.jsonl")], own_process=True)
    assert order[2:] == [("ahead", "count:1", True), ("helpers", 3), ("run", stub, helpers),  # handed on
                         ("workers on one GPU", engine_mod.WORKERS_ON_ONE_GPU)]  # the command's two on a lone GPU
    assert stub.killed == 2 and helpers.shut == 2  # stopped after
    cli.main(["sweep", "--out", str(tmp_path / "c.jsonl")])  # a caller that goes on (with threads of its own)
    assert order[6:] == [("run", None, None), ("workers on one GPU", engine_mod.WORKERS_ON_ONE_GPU)]  # nothing
    # started ahead: the sweep starts its own


def test_the_worker_ahead_is_forked_only_from_a_process_that_made_no_cuda_call(events, monkeypatch, tmp_path):
    """Forked, it skips a Python start-up and its imports; CUDA does not survive a fork once initialised, nor a lock
    another thread holds, so a process that asked CUDA anything, or runs other threads, has the fork server start
    it (harness.run.processes), as every worker started later (after a fault) is."""
    asked = []
    get_context = multiprocessing.get_context
    # the start method asked for is recorded; every worker here is spawned all the same (no fork in a test process)
    monkeypatch.setattr(multiprocessing, "get_context",
                        lambda method=None: asked.append(method) or get_context("spawn"))
    cfg = config(tmp_path)
    monkeypatch.setattr(sweep.threading, "active_count", lambda: 1)  # as the command line's own process: one thread
    for untouched, fork in ((True, True), (False, True), (True, False)):
        monkeypatch.setattr(gpu, "cuda_untouched", lambda: untouched)
        sweep.worker_ahead(cfg, fork=fork).kill()
    monkeypatch.setattr(sweep.threading, "active_count", lambda: 2)  # another thread (a test runner's, say)
    sweep.worker_ahead(cfg, fork=True).kill()
    assert asked == ["fork", "forkserver", "forkserver", "forkserver"]


def test_cuda_counts_as_touched_once_a_module_that_calls_it_is_imported(monkeypatch):
    import sys
    monkeypatch.delitem(sys.modules, "cupy_backends.cuda.api.runtime", raising=False)
    for name in [m for m in sys.modules if any(m == c or m.startswith(c + ".") for c in gpu.CUDA_MODULES)]:
        monkeypatch.delitem(sys.modules, name)
    assert gpu.cuda_untouched()
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.api.runtime", object())
    assert not gpu.cuda_untouched()
