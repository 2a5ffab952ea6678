"""The Tensor Memory D probe (harness/families/tcgen05/tmem_probe.py) on the simulated tcgen05 device, which runs
in a spawned worker and places D with the unchanged data paths; a wrong data-path model is planted in this process
only, and the probe must find the difference and name where the hardware put D."""
import numpy as np
import pytest

from harness.families.tcgen05 import datapaths, readback, reference, tmem_probe
from harness.run.worker import GpuWorker
from tests.test_tcgen05_probe import SIM, case, kernel_of


@pytest.fixture(scope="module")
def worker():
    w = GpuWorker(0, backend=SIM)
    yield w
    w.close()


def run(cases, worker):
    return tmem_probe.diagnose(kernel_of(cases[0].form), cases, "sim.cubin", worker, 60)


def plant(monkeypatch, change):
    orig = datapaths.d_position

    def edited(m, n, cg, ws, dtype):
        cta, lane, col, half = orig(m, n, cg, ws, dtype)
        return (cta, *change(m, lane, col, half))
    for mod in (datapaths, reference, readback):
        if hasattr(mod, "d_position"):
            monkeypatch.setattr(mod, "d_position", edited)


def test_faithful_model_passes(worker):
    cs = [case("f16", "SS", 128, 64), case("f16", "SS", 64, 32, types=("f16", "f16", "f16")),
          case("tf32", "SS", 128, 256, "32B", "128B")]
    for c in cs:
        r, = run([c], worker)
        assert r["status"] == "pass" and r["wrong"] == 0, r


PLANTS = [
    ("M=64 model uses lane = row", 64, lambda m, l, c, h: (np.where(m == 64, 32 * (l // 32) * 0 + (l // 32) * 16 + l % 32, l), c, h),
     "data path F (rows 16 per 32-lane quarter)", "data path D (lane = row)"),
    ("lane quarters reversed", 128, lambda m, l, c, h: (32 * (3 - l // 32) + l % 32, c, h),
     "data path D (lane = row)", "data path D (lane = row) with the 32-lane quarters in reverse order"),
    ("column pairs", 128, lambda m, l, c, h: (l, c ^ 1, h), "data path D (lane = row)",
     "data path D (lane = row) with columns c and c+1 exchanged"),
    ("rows +8", 64, lambda m, l, c, h: (l ^ 8, c, h), "data path F (rows 16 per 32-lane quarter)",
     "data path F (rows 16 per 32-lane quarter) with rows r and r+8 exchanged"),
]


@pytest.mark.parametrize("name,m,change,hw,model", PLANTS, ids=[p[0] for p in PLANTS])
def test_planted_data_path_is_named(worker, monkeypatch, name, m, change, hw, model):
    plant(monkeypatch, change)
    r, = run([case("f16", "SS", m, 64)], worker)
    assert r["status"] == "fail" and r["wrong"] > 0, r
    assert r["explanation"] == hw and r["model_is"] == model, r["summary"]
    assert hw in r["summary"]
