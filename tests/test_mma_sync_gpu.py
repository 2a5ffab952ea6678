"""mma_sync on a real sm_90a GPU (an H100): the family's whole sweep, every form from registers and through ldmatrix
tiles, every register of every lane diffed, every negative control caught as the model predicts. Without an sm_90a
GPU it skips with the reason."""
import subprocess
import sys

import pytest

from harness.records import results

pytestmark = pytest.mark.gpu("sm_90a")


def test_the_whole_family_sweep_passes(tmp_path):
    out = tmp_path / "mma_sync.jsonl"
    proc = subprocess.run([sys.executable, "-m", "harness", "sweep", "--family", "mma_sync", "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    env_rec, recs, summary = results.load(out)
    sm120 = {i for i, r in recs.items() if r["arch"] == "sm_120a"}  # no sm_120 GPU here: recorded not run
    failing = [(i, r["status"], r.get("why"), r.get("first_mismatches", [])[:2]) for i, r in recs.items()
               if r["status"] != "pass" and i not in sm120]
    assert proc.returncode == 0 and not failing, (proc.stderr[-2000:], failing[:10])
    assert {recs[i]["status"] for i in sm120} == {"not-run"} and len(sm120) == 180
    assert env_rec["compute_capability"] == "9.0" and len(recs) - len(sm120) == 642
    assert summary["controls"] == {"pass": 74}


# a sample of kernels for the probes: 16-bit A and B by ldmatrix (with .trans) and D stored by stmatrix, sparse 8-bit,
# .b1, m8n8k4 .f16's four MMAs a warp, f64
PROBED = ("mmasync_m16n8k16_f16_f16_dense", "mmasync_m16n8k32_i8_s32_sp", "mmasync_m16n8k128_b1_s32_dense",
          "mmasync_m8n8k4_f16_f32_dense", "mmasync_m16n8k8_f64_f64_dense")


def test_the_probes_recover_the_models_maps_on_the_gpu():
    """The diagnosis (probe.py) on the hardware, for cases that pass: every map it recovers -- D, A and B as loaded
    from global memory and by ldmatrix, ldmatrix's addresses -- is the model's, and each case's own launch replays
    through them; a control's ldmatrix reads as the model predicts the control's addresses."""
    from harness.families.mma_sync import FAMILY, kernel as K, probe
    from harness.run import compile as C
    from harness.run.worker import GpuWorker
    kernels = [(k, cs) for k, cs in FAMILY.kernels("sm_90a") if k.name in PROBED]
    cubins = {c.name: c.cubin_path for c in C.compile_many([C.CompileJob(k.name, K.source(k.form), "sm_90a")
                                                            for k, _ in kernels])}
    worker = GpuWorker()
    try:
        for k, cs in kernels:
            sample = ([c for c in cs if not c.control][:4] + [c for c in cs if c.a.via == "ldmatrix"][:2]
                      + [c for c in cs if c.st.num][:1] + [c for c in cs if c.control][:2])
            recs = probe.diagnose(k.form, sample, str(cubins[k.name]), worker, 60)
            bad = [(r["id"], r["operand"], r["summary"]) for r in recs if r["status"] != "pass"]
            assert len(recs) == 3 * len(sample) and not bad, (k.name, bad[:4])
            assert all(r["replays_case"] for r in recs if r["operand"] == "D"), k.name
    finally:
        worker.close()
