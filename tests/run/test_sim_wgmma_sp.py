"""The wgmma_sp family through the real sweep on a simulated sm_90a GPU (tests/simulated/wgmma_sp_device.py): the
simulator reads the metadata registers through CUTLASS's metadata layouts and compressor encoding, A and B through
its own descriptor decoding, and places D with CuTe DSL's fragments, so every case passing (and every control giving
exactly its predicted misread) says the harness's sparsity model agrees with an independent one; a planted
misreading of the spec's metadata figure makes cases fail."""
import collections

import numpy as np
import pytest

from harness import plan
from harness.spec import sparsity
from tests.run import simsweep
from tests.simulated import fake_gpus, wgmma_sp_device

pytestmark = pytest.mark.cute  # the simulated GPUs read their layouts from CuTe DSL

SAMPLE = plan.Selection(families=("wgmma_sp",), n_values=(16,))  # every kind, accumulator, SS and RS


@pytest.fixture(scope="module")
def sample_plan():
    p = plan.make(SAMPLE, {"wgmma_sp": "sm_90a"})
    simsweep.warm_wgmma_oracle(p)
    return p


def test_every_sampled_sparse_case_agrees_with_the_simulated_hardware(sample_plan, monkeypatch, tmp_path):
    fake_gpus.install(monkeypatch, ["sm_90a"])
    summary, recs, _, _ = simsweep.sweep(sample_plan, tmp_path / "r.jsonl")
    planned = {c.id: c for _, cs in sample_plan.work for c in cs}
    assert set(recs) == set(planned)
    assert {r["status"] for r in recs.values()} == {"pass"}, \
        [(i, r["status"], r.get("why"), r.get("error")) for i, r in recs.items() if r["status"] != "pass"][:5]
    assert {c.key.kind for c in planned.values()} == {"f16", "tf32", "f8", "s8"}
    assert {c.key.a_src for c in planned.values()} == {"SS", "RS"}
    controls = {i: c for i, c in planned.items() if c.control}
    kinds = collections.Counter(c.control for c in controls.values())
    assert {"meta:other-pattern", "meta:swapped-nibbles", "meta:swapped-threads", "wrong-selector",
            "wrong-swizzle", "start+16"} <= set(kinds)
    # caught as predicted: not the intended product and exactly the model's misread
    assert all(recs[i]["caught"] and recs[i]["matches_model_prediction"] for i in controls), \
        [(i, recs[i]) for i in controls if not (recs[i].get("caught") and recs[i].get("matches_model_prediction"))][:2]
    assert {r["selector"] for r in recs.values()} == {0, 1} and "reversed" in {r["metadata"] for r in recs.values()}
    assert all(recs[i].get("unsettled") for i, c in planned.items() if c.pattern == "reversed")
    assert summary["pass"] == len(planned) and summary["fail"] == 0


def _misread_figure(real):
    """A plausible misreading of Figure 176/178: thread T(2s) describes all 8 chunks of row g, T(2s+1) row g+8
    (the 8-bit layout's shape), instead of half the chunks of both rows each."""
    def wrong(atype, selector):
        row, chunk = real(atype, selector)
        if sparsity.format_of(atype).chunks != 8:
            return row, chunk
        t = np.arange(128)[:, None]
        w, g, h = t // 32, (t % 32) // 4, t % 4 - 2 * selector
        read = (h == 0) | (h == 1)
        i = np.arange(8)[None, :]
        return (np.broadcast_to(np.where(read, 16 * w + g + 8 * h, -1), (128, 8)),
                np.broadcast_to(np.where(read, i, -1), (128, 8)))
    return wrong


def test_a_misread_metadata_figure_in_the_model_makes_cases_fail(sample_plan, monkeypatch):
    kernel, cases = next((k, cs) for k, cs in sample_plan.work if k.form.kind == "f16" and k.form.a_src == "RS")
    ok = simsweep.in_process(kernel, cases, wgmma_sp_device.run)
    assert {r["status"] for r in ok} == {"pass"}
    monkeypatch.setattr(sparsity, "metadata_map", _misread_figure(sparsity.metadata_map.__wrapped__))
    recs = {r["id"]: r for r in simsweep.in_process(kernel, cases, wgmma_sp_device.run)}
    cycle = [c.id for c in cases if c.pattern in ("cycle", "random") and not c.control]
    assert cycle and all(recs[i]["status"] == "fail" for i in cycle)
    assert any(recs[c.id]["status"] == "fail" for c in cases if c.control.startswith("meta:"))


def test_a_selector_read_the_wrong_way_round_in_the_model_makes_cases_fail(sample_plan, monkeypatch):
    kernel, cases = next((k, cs) for k, cs in sample_plan.work if k.form.kind == "tf32" and k.form.a_src == "SS")
    real = sparsity.metadata_map.__wrapped__
    monkeypatch.setattr(sparsity, "metadata_map", lambda atype, sel: real(atype, 1 - sel))
    recs = simsweep.in_process(kernel, [c for c in cases if not c.control], wgmma_sp_device.run)
    assert recs and all(r["status"] == "fail" for r in recs), [r["id"] for r in recs if r["status"] == "pass"][:3]


@pytest.mark.slow
def test_every_sparse_case_agrees_with_the_simulated_hardware(monkeypatch, tmp_path):
    whole = plan.make(plan.Selection(families=("wgmma_sp",)), {"wgmma_sp": "sm_90a"})
    simsweep.warm_wgmma_oracle(whole)
    fake_gpus.install(monkeypatch, ["sm_90a"])
    summary, recs, _, _ = simsweep.sweep(whole, tmp_path / "r.jsonl")
    assert summary["cases"] == whole.cases and summary["pass"] == whole.cases, \
        [(i, r["status"], r.get("why")) for i, r in recs.items() if r["status"] != "pass"][:5]
