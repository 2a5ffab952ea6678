"""The tcgen05 family through the real sweep on a simulated sm_100a GPU (tests/simulated/tcgen05_device.py):
what the simulator supports passes, what it refuses is listed with its reason, nothing is skipped silently."""
from collections import Counter

import numpy as np
import pytest

from harness import plan, registry
from harness.families.tcgen05 import cases as T, datapaths as DP, readback as RB, reference as R
from harness.plan import Plan
from tests.run import simsweep
from tests.simulated import fake_gpus, oracle_cache, tcgen05_device

pytestmark = pytest.mark.cute  # the simulated GPUs read their layouts from CuTe DSL


@pytest.fixture(scope="module")
def split():
    """(supported plan, {case id: refusal reason}, the whole plan)."""
    whole = plan.make(plan.Selection(families=("tcgen05",)), {"tcgen05": "sm_100a"})
    fam = registry.get("tcgen05")
    supported, refused, reqs = [], {}, set()
    for kernel, cases in whole.work:
        inp, _ = fam.prepare(kernel, cases)
        cg = inp.ctas_per_case
        keep = []
        for i, c in enumerate(cases):
            why = tcgen05_device.refusal(kernel.name, inp.params[i * cg])
            if c.b_atoms == "cutlass_base32b":  # T.unsettled_reason: the simulator takes the ISA's 8-row reading
                why = "B tiled as CUTLASS's SW128_32B atoms: an unsettled reading the simulator does not share"
            if why:
                refused[c.id] = why
            else:
                keep.append(c)
                reqs.update(tcgen05_device.oracle_requests(kernel.name, inp.params[i * cg]))
        if keep:
            supported.append((kernel, keep))
    oracle_cache.ensure_tmem(sorted(reqs))  # one CuTe DSL process for every layout, before the workers
    return Plan(supported), refused, whole


def test_supported_cases_pass_and_refused_ones_are_reported(split, monkeypatch, tmp_path):
    supported, refused, whole = split
    planned = {c.id: c for _, cs in whole.work for c in cs}
    ran = {c.id for _, cs in supported.work for c in cs}
    assert ran | set(refused) == set(planned) and not ran & set(refused)  # none silently skipped
    fake_gpus.install(monkeypatch, ["sm_100a"])
    summary, recs, _, _ = simsweep.sweep(supported, tmp_path / "r.jsonl")
    assert set(recs) == ran
    observed = {i for i in ran if planned[i].control.partition("@")[0] in T.OBSERVATIONS}
    assert {r["status"] for i, r in recs.items() if i not in observed} == {"pass"}, \
        [(i, r["status"], r.get("error"), r.get("first_mismatches")) for i, r in recs.items()
         if r["status"] != "pass"][:3]
    assert all(recs[i]["status"] == "observed" for i in observed)  # T.OBSERVATIONS: neither pass nor fail
    # what must be simulated: cta_group::1 K-major f16 / tf32 / i8 from shared memory, and more
    must = [c for c in planned.values() if c.form.cta_group == 1 and not c.form.ws and c.form.a_src == "SS"
            and c.form.kind in ("f16", "tf32", "i8") and c.major_a == c.major_b == "K" and not c.control
            and not c.form.variant]  # the qualifier forms are refused (tcgen05_device.refusal)
    assert must and all(c.id in ran for c in must)
    covered = {(c.form.kind, c.form.cta_group, c.form.a_src, c.major_b, c.swizzle_b) for c in map(planned.get, ran)}
    assert {("f16", 2, "SS"), ("f16", 1, "TS"), ("f8f6f4", 1, "SS")} <= {x[:3] for x in covered}
    assert ("tf32", 1, "SS", "MN", "128B_base32b") in covered
    # every sparse case the simulator runs passes, by its own decompression and CUTLASS's metadata layout
    sparse = {(c.form.kind, c.form.cta_group, c.form.a_src) for c in map(planned.get, ran) if c.form.sparse}
    assert {(k, cg, "SS") for k in ("tf32", "f16", "f8f6f4", "i8") for cg in (1, 2)} | {("f16", 1, "TS")} <= sparse
    assert any(planned[i].sp_selector for i in ran)
    # the refusals, reported: each with its reason
    reasons = Counter(why.split(":")[0] for why in refused.values())
    print(f"\ntcgen05 on the simulator: {len(ran)} cases ran and passed, {len(refused)} refused:")
    for why, n in reasons.most_common():
        print(f"  {n:4d}  {why}")
    assert all(isinstance(w, str) and w for w in refused.values())
    assert any(planned[i].form.ws for i in refused) and any(planned[i].form.block_scaled for i in refused)


def test_a_refused_case_sent_anyway_is_a_fault_naming_the_reason(split, monkeypatch, tmp_path):
    _, refused, whole = split
    kernel, cases = next((k, cs) for k, cs in whole.work if k.form.ws)
    case = next(c for c in cases if c.id in refused)
    fake_gpus.install(monkeypatch, ["sm_100a"])
    _, recs, _, _ = simsweep.sweep(Plan([(kernel, [case])]), tmp_path / "r.jsonl")
    assert recs[case.id]["status"] == "fault" and "NotSimulated" in recs[case.id]["error"]


def test_a_trap_in_a_cta_pair_faults_exactly_that_case(split, monkeypatch, tmp_path):
    supported, _, _ = split
    kernel, cases = next((k, cs) for k, cs in supported.work if k.form.cta_group == 2 and len(cs) >= 4)
    victim = cases[2]
    monkeypatch.setenv("TC_SIM_FAULTS", f"{kernel.name}:#{simsweep.case_fingerprint(kernel, victim)}:trap")
    fake_gpus.install(monkeypatch, ["sm_100a"])
    _, recs, _, _ = simsweep.sweep(Plan([(kernel, cases)]), tmp_path / "r.jsonl")
    assert recs[victim.id]["status"] == "fault"
    assert all(r["status"] == "pass" for i, r in recs.items() if i != victim.id) and len(recs) == len(cases)


def test_a_data_path_bug_in_the_model_makes_cases_fail(split, monkeypatch):
    supported, _, _ = split
    kernel, cases = next((k, cs) for k, cs in supported.work if k.name == "tcgen05_f16_cg1_SS")
    cases = [c for c in cases if c.control not in T.BUG_CONTROLS]  # those fault the launch (one at a time, below)
    assert {r["status"] for r in simsweep.in_process(kernel, cases, tcgen05_device.run)} == {"pass"}
    real = DP.d_position

    def wrong(m, n, cta_group, ws, dtype):  # the model's M=64 layout without the 16-rows-per-warp split
        cta, lane, col, half = real(m, n, cta_group, ws, dtype)
        if m == 64 and cta_group == 1 and not ws:
            lane = np.arange(m)[:, None] + 0 * col
        return cta, lane, col, half

    for module in (DP, R, RB):  # every module that looks the data path up by name
        monkeypatch.setattr(module, "d_position", wrong)
    recs = {r["id"]: r for r in simsweep.in_process(kernel, cases, tcgen05_device.run)}
    # a wrong-m control of M = 128 predicts through the M = 64 path too, so it fails with it
    m64 = [c.id for c in cases if c.m == 64 or c.control == "wrong-m"]
    assert m64 and all(recs[i]["status"] == "fail" for i in m64)
    assert all(recs[c.id]["status"] == "pass" for c in cases if c.id not in m64)


def test_both_families_in_one_sweep_on_two_simulated_gpus(monkeypatch, tmp_path):
    p = plan.make(plan.Selection(families=("wgmma", "tcgen05"), n_values=(256,), kinds=("f16",)),
                  {"wgmma": "sm_90a", "tcgen05": "sm_100a"})
    p = Plan([(k, cs[:3]) for k, cs in p.work if not getattr(k.form, "ws", False)
              and not getattr(k.form, "variant", "")][::4])  # qualifier forms: refused by the simulator
    assert {str(k.family) for k, _ in p.work} == {"wgmma", "tcgen05"}
    simsweep.warm_wgmma_oracle(Plan([(k, cs) for k, cs in p.work if str(k.family) == "wgmma"]))
    fake_gpus.install(monkeypatch, ["sm_90a", "sm_100a"])
    summary, recs, _, _ = simsweep.sweep(p, tmp_path / "r.jsonl")
    assert {(r["family"], r["gpu"]) for r in recs.values()} == {("wgmma", 0), ("tcgen05", 1)}
    assert {r["status"] for r in recs.values()} == {"pass"}, [(i, r["status"], r.get("error")) for i, r in recs.items()
                                                             if r["status"] != "pass"]


def test_a_sparse_metadata_bug_in_the_model_makes_sparse_cases_fail(split, monkeypatch):
    """The model's metadata layout with rows r and r + 8 of a 16-row group swapped (the 16-bit halves of a word):
    every sparse f16 case fails on the simulator, whose nibbles come from CUTLASS's tmem_e_frg."""
    supported, _, _ = split
    kernel, cases = next((k, cs) for k, cs in supported.work if k.name == "tcgen05_f16_cg1_sp_SS")
    assert {r["status"] for r in simsweep.in_process(kernel, cases, tcgen05_device.run)} == {"pass"}
    real = DP.meta_position

    def wrong(kind, rows=128):
        lane, col, bit = real(kind, rows)
        return lane, col, bit ^ 16 if kind in ("tf32", "f16") else bit

    monkeypatch.setattr(R, "meta_position", wrong)
    recs = simsweep.in_process(kernel, cases, tcgen05_device.run)
    assert recs and {r["status"] for r in recs} == {"fail"}


def test_public_bug_controls_the_simulator_models_are_caught_through_the_real_sweep(split, monkeypatch, tmp_path):
    """N > 256 (triton-lang/triton#8910) and a column beyond the allocation: this device faults on both (as the bug
    reports the hardware did); the engine bisects the launch down to each, records the fault, and the family
    settles it as caught, naming the bug. The ordinary cases of the same launch still pass."""
    supported, refused, whole = split
    kernel, cases = next((k, cs) for k, cs in whole.work if k.name == "tcgen05_f16_cg1_SS")
    bugs = [c for c in cases if c.control == "n-above-256"]  # tmem-beyond-alloc: an observation (its own form)
    assert len(bugs) == 1 and not {c.id for c in bugs} & set(refused)
    ordinary = [c for c in cases if not c.control][:3]
    fake_gpus.install(monkeypatch, ["sm_100a"])
    summary, recs, _, _ = simsweep.sweep(Plan([(kernel, ordinary + bugs)]), tmp_path / "r.jsonl")
    for c in bugs:
        r = recs[c.id]
        assert (r["status"], r["caught_by"], r["launch_status"]) == ("pass", "fault", "fault"), r
        assert r["models_bug"] == T.MODELS_BUG[c.control] and r["prediction"] == "undefined"
    assert all(recs[c.id]["status"] == "pass" for c in ordinary)
    assert summary["controls"] == {"pass": 1} and not summary.get("fault")
