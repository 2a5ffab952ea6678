"""The wgmma family through the real sweep on a simulated sm_90a GPU (tests/simulated/wgmma_device.py): the
simulator reads shared memory through the descriptors with its own reading of the PTX ISA and places D with
CuTe DSL's fragment layouts, so every case passing says the harness's model agrees with an independent one;
planting a bug in the model makes cases fail (the test can fail)."""
import dataclasses

import pytest

from harness import plan
from harness.spec import fragments, layouts
from tests.run import simsweep
from tests.simulated import fake_gpus, wgmma_device

pytestmark = pytest.mark.cute  # the simulated GPUs read their layouts from CuTe DSL

SAMPLE = plan.Selection(families=("wgmma",), n_values=(32,))  # every kind, dtype, SS and RS; all swizzles


@pytest.fixture(scope="module")
def sample_plan():
    p = plan.make(SAMPLE, {"wgmma": "sm_90a"})
    simsweep.warm_wgmma_oracle(p)
    return p


def test_every_sampled_case_agrees_with_the_simulated_hardware(sample_plan, monkeypatch, tmp_path):
    fake_gpus.install(monkeypatch, ["sm_90a"])
    summary, recs, _, _ = simsweep.sweep(sample_plan, tmp_path / "r.jsonl")
    planned = {c.id: c for _, cs in sample_plan.work for c in cs}
    assert set(recs) == set(planned)
    assert {r["status"] for r in recs.values()} == {"pass"}, \
        [(i, r["status"], r.get("error")) for i, r in recs.items() if r["status"] != "pass"][:5]
    # the sample covers what it claims
    kinds = {c.key.kind for c in planned.values()}
    assert kinds == {"f16", "tf32", "f8", "s8", "b1"}
    assert {c.key.a_src for c in planned.values()} == {"SS", "RS"}
    assert {c.b.layout.swizzle for c in planned.values()} == {"none", "32B", "64B", "128B"}
    assert {c.b.layout.major for c in planned.values()} == {"K", "MN"}
    controls = [i for i, c in planned.items() if c.control]
    assert controls and all(recs[i].get("matches_model_prediction", True) is not False for i in controls)
    assert summary["pass"] == len(planned) and summary["fail"] == 0


@pytest.fixture
def fresh_model_caches():
    """The model caches addresses and fragments; a planted bug must not hide behind (or outlive) them."""
    from harness.families.wgmma import readback

    cached = (layouts.element_bit_addresses, layouts.is_distinct, fragments.wgmma_d_fragment,
              readback._d_owner, readback._d_gather)

    def clear():
        for f in cached:
            f.cache_clear()
    clear()
    yield
    clear()


def _kernel(p, kind, src="SS"):
    return next((k, cs) for k, cs in p.work if k.form.kind == kind and k.form.a_src == src)


def test_a_swizzle_bug_in_the_model_makes_cases_fail(sample_plan, monkeypatch, fresh_model_caches):
    kernel, cases = _kernel(sample_plan, "f16")
    ok = simsweep.in_process(kernel, cases, wgmma_device.run)
    assert {r["status"] for r in ok} == {"pass"}
    layouts.element_bit_addresses.cache_clear()
    real = layouts.swizzle_address

    def wrong(addr, swizzle, base_offset=0):  # the model's 128B swizzle behaves like 64B
        return real(addr, "64B" if swizzle == "128B" else swizzle, base_offset)

    monkeypatch.setattr(layouts, "swizzle_address", wrong)
    recs = simsweep.in_process(kernel, cases, wgmma_device.run)
    by_id = {r["id"]: r for r in recs}
    failed = {i for i, r in by_id.items() if r["status"] == "fail"}
    uses_128 = {c.id for c in cases if "128B" in (c.b.layout.swizzle, c.a.layout.swizzle)
                and not c.control}
    assert uses_128 and uses_128 <= failed


def test_a_d_fragment_bug_in_the_model_makes_cases_fail(sample_plan, monkeypatch, fresh_model_caches):
    kernel, cases = _kernel(sample_plan, "s8", "RS")
    real = fragments.wgmma_d_fragment

    def wrong(n, dtype):  # the model puts values 0 and 2 of each thread in each other's rows (8 apart)
        f = real(n, dtype)
        row = f.row.copy()
        row[:, [0, 2]] = row[:, [2, 0]]
        return dataclasses.replace(f, row=row)

    monkeypatch.setattr(fragments, "wgmma_d_fragment", wrong)
    recs = simsweep.in_process(kernel, cases, wgmma_device.run)
    assert sum(r["status"] == "fail" for r in recs) >= len(recs) // 2
