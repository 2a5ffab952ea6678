"""A sweep's end (harness/sweep.py): the engine's GPU workers and pool processes are told to stop before the results
file's last sync, so that they end while it is written to the disk, and the engine is closed (every process joined)
after it. The GPUs and their backend are stand-ins (tests/simulated/)."""
import multiprocessing

from harness import sweep
from harness.records import results
from harness.run import engine as engine_mod
from tests.simulated import fake_gpus

SEL = sweep.Selection(families=("wgmma",), kinds=("f16",), n_values=(8,), a_srcs=("RS",), data_modes=("exact",))


def test_the_engine_winds_down_before_the_results_file_is_closed_and_is_closed_after(monkeypatch, tmp_path):
    fake_gpus.install(monkeypatch, ["sm_90a"])
    order, engines = [], []
    for owner, name, event in ((engine_mod.Engine, "wind_down", "wind down"),
                               (engine_mod.Engine, "close", "engine closed"),
                               (results.ResultsWriter, "close", "results closed")):
        real = getattr(owner, name)

        def recorded(self, *a, _real=real, _event=event, **k):
            order.append(_event)
            if isinstance(self, engine_mod.Engine) and self not in engines:
                engines.append(self)
            return _real(self, *a, **k)
        monkeypatch.setattr(owner, name, recorded)
    before = set(multiprocessing.active_children())
    cfg = sweep.SweepConfig(out_path=tmp_path / "r.jsonl", backend="tests.simulated.passthrough_device", workers=2,
                            diagnose=0)
    summary = sweep.run(SEL, cfg, log=lambda m: None)
    assert summary["ran"] == summary["cases"] > 0
    assert order == ["wind down", "results closed", "engine closed"], order
    assert results.load(tmp_path / "r.jsonl")[2]["ran"] == summary["ran"]  # the file ends with its summary
    assert len(engines) == 1 and not set(multiprocessing.active_children()) - before  # every process joined


def test_a_wind_down_that_fails_still_leaves_the_results_file_its_summary(monkeypatch, tmp_path):
    """Winding the engine down is only a head start: where it fails, the results file still ends with its summary
    and the engine is still closed."""
    fake_gpus.install(monkeypatch, ["sm_90a"])

    def broken(self):
        raise RuntimeError("can't start new thread")
    monkeypatch.setattr(engine_mod.Engine, "wind_down", broken)
    before = set(multiprocessing.active_children())
    cfg = sweep.SweepConfig(out_path=tmp_path / "r.jsonl", backend="tests.simulated.passthrough_device", workers=2,
                            diagnose=0)
    summary = sweep.run(SEL, cfg, log=lambda m: None)
    assert results.load(tmp_path / "r.jsonl")[2]["ran"] == summary["ran"] == summary["cases"] > 0
    assert not set(multiprocessing.active_children()) - before
