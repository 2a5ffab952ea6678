"""diff_launch on synthetic device registers: the registers a correct tensor core returns (from
tests/independent_device.py, which shares neither the reference nor the fragment model) pass, every record is
JSON-serialisable, and a single flipped bit is reported at the right thread, register, row and column. A negative
control's registers come from the model (what its wrong descriptor reads is the layout model's prediction):
those tests check the verdict logic, not the model."""
import json

import numpy as np
import pytest

import independent_device

from harness.families.wgmma import readback as diff, reference
from harness.spec import fragments
from harness import plan
from harness.families.wgmma.reference import acc_bits

KEYS = {k.name: (k.form, cs) for k, cs in plan.make(plan.Selection(families=("wgmma",), n_values=(8, 24)), cache=True).work}


def device_registers(key, preps):
    frag = fragments.wgmma_d_fragment(key.n, key.dtype)
    return np.stack([fragments.gather_registers(frag, acc_bits(key.dtype, diff.expected_of(p))) for p in preps])


@pytest.mark.parametrize("name", sorted(KEYS)[::5])
def test_a_correct_device_passes_and_records_serialise(name):
    key, cases = KEYS[name]
    full = [reference.prepare(c) for c in cases]
    regs = np.stack([independent_device.device_registers(p) if not p.case.control else
                     fragments.gather_registers(fragments.wgmma_d_fragment(key.n, key.dtype),
                                                acc_bits(key.dtype, p.expected)) for p in full])
    recs = diff.diff_launch([p.slim() for p in full], regs)
    assert [r["status"] for r in recs] == ["pass"] * len(recs)
    assert all(r["caught"] and r["matches_model_prediction"] for r in recs if r.get("control"))
    assert any(not r.get("control") for r in recs)
    json.dumps(recs)


def test_one_flipped_bit_is_located():
    key, cases = next(v for v in KEYS.values() if v[0].dtype == "f32" and v[0].a_src == "SS")
    preps = [reference.prepare(c).slim() for c in cases[:3]]
    regs = device_registers(key, preps)
    regs[1, 37, 2] ^= np.uint32(1 << 22)
    recs = diff.diff_launch(preps, regs)
    assert [r["status"] for r in recs] == ["pass", "fail", "pass"]
    frag = fragments.wgmma_d_fragment(key.n, key.dtype)
    m = recs[1]["first_mismatches"][0]
    assert (m["thread"], m["register"]) == (37, 2) and recs[1]["mismatches"] == 1
    assert (m["row"], m["col"]) == (int(frag.row[37, 2]), int(frag.col[37, 2]))
    assert recs[1]["bad_threads"] == "37" and recs[1]["bad_registers"] == "2"
    json.dumps(recs)


def test_poison_left_in_a_register_is_counted():
    key, cases = next(v for v in KEYS.values() if v[0].dtype == "f16")
    preps = [reference.prepare(cases[0]).slim()]
    regs = device_registers(key, preps)
    regs[0, 5, 0] = reference.POISON
    rec = diff.diff_launch(preps, regs)[0]
    assert rec["status"] == "fail" and rec["unwritten_registers"] == 1 and rec["mismatches"] == 2


def test_a_control_passes_only_with_the_predicted_misread():
    key, cases = next(v for v in KEYS.values() if v[0].a_src == "SS" and v[0].dtype == "f32")
    control = next(c for c in cases if c.control)
    prep = reference.prepare(control).slim()
    regs = device_registers(key, [prep])
    assert diff.diff_launch([prep], regs)[0]["status"] == "pass"
    regs[0, 0, 0] ^= np.uint32(1 << 22)  # still not the intended product, but not the predicted misread either
    rec = diff.diff_launch([prep], regs)[0]
    assert rec["caught"] and rec["matches_model_prediction"] is False and rec["status"] == "fail" and rec["why"]
