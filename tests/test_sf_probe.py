"""The scale-factor probe (harness/families/tcgen05/sf_probe.py) on the simulated tcgen05 device, which copies the
factors with its own tcgen05.cp and reads them with its own reading of the block-scaled MMA
(tests/simulated/tcgen05_probe_device.py): the faithful device uses every factor the model says, and each plausible
misreading planted in the *device* is named by the diagnosis, through the same family diagnose the sweep calls."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.families import tcgen05
from harness.families.tcgen05 import datapaths, sf_probe
from harness.families.tcgen05.cases import TcCase
from harness.families.tcgen05.forms import Form
from tests.test_tcgen05_probe import kernel_of
from tests.test_tmem_probe import InProcess, tc


def diagnose(c: TcCase, plant: str = "", png_dir=None) -> dict[str, dict]:
    recs = tcgen05.FAMILY.diagnose(kernel_of(c.form), [c], f"sim.cubin#{plant}", InProcess(), 60, png_dir)
    return {r["probe"]: r for r in recs if r.get("probe") in ("tmem-d", "scale-factors")}


FAITHFUL = [tc("mxf8f6f4"), tc("mxf4", n=128), tc("mxf4nvf4"), tc("mxf4", 2, 256, 32),
            tc("mxf8f6f4", 2, 256, 128, ("e2m3", "e3m2", "f32"))]


def test_the_faithful_device_uses_every_factor_the_model_says():
    for c in FAITHFUL:
        r = diagnose(c)["scale-factors"]
        nb = datapaths.SF_BLOCKS[c.form.kind]
        assert r["status"] == "pass" and r["wrong"] == 0 and r["elements"] == (c.m + c.n) * nb, r


PLANTS = [  # (planted in the device, case, the edit the diagnosis must name)
    ("sf-ab-swapped", tc("mxf8f6f4"), "sf:ab-exchanged"),
    ("sf-blocks-reversed@A", tc("mxf4nvf4"), "sf:blocks-reversed@A"),
    ("sf-blocks-reversed@B", tc("mxf4"), "sf:blocks-reversed@B"),
    ("sf-id+1@A", tc("mxf8f6f4"), "sf:sf-id+1@A"),
    ("sf-id+1@B", tc("mxf4"), "sf:sf-id+1@B"),
    ("sf-vec=1X", tc("mxf4nvf4"), "sf:scale-vec-1X@A,B"),
    ("sf-rows-reversed@A", tc("mxf4"), "sf:rows-reversed@A"),
    ("sf-rows-reversed@B", tc("mxf8f6f4"), "sf:rows-reversed@B"),
    ("sf-groups-reversed@A", tc("mxf4nvf4"), "sf:groups-reversed@A"),
    ("sf-groups-reversed@B", tc("mxf8f6f4", n=128), "sf:groups-reversed@B"),
    ("sf-peer@A", tc("mxf4", 2, 256, 32), "sf:peer-cta@A"),
    ("sf-peer@B", tc("mxf8f6f4", 2, 256, 32), "sf:peer-cta@B"),
    ("sf-cp-leader", tc("mxf4", 2, 256, 32), "sf:issuing-cta@A,B"),
]


@pytest.mark.parametrize("plant,c,edit", PLANTS, ids=[f"{p[0]}-{p[1].form.name}" for p in PLANTS])
def test_a_misreading_planted_in_the_device_is_named(plant, c, edit):
    recs = diagnose(c, plant)
    assert recs["tmem-d"]["status"] == "pass", recs["tmem-d"]  # D itself sits where the model says
    r = recs["scale-factors"]
    assert r["status"] == "fail" and r["wrong"] > 0 and r["edit"] == edit, r["summary"]
    words = next(h.words for h in sf_probe.hypotheses(sf_probe.setup_and_jobs(c)[0]) if h.id == edit)
    assert r["summary"].startswith("scale factors: ") and r["summary"].endswith(f"; that is, {words}"), r["summary"]
    assert r["roles"] and all(role.split(" comes from ")[0].split("'s ", 1)[1] in r["summary"] for role in r["roles"])


def test_the_factor_map_says_where_each_factor_came_from():
    """B's columns of each 32-lane group reversed: column n's factor is the byte the model gives column 31-n."""
    r = diagnose(tc("mxf8f6f4"), "sf-rows-reversed@B")["scale-factors"]
    assert r["cols"] == "0-31" and "rows" not in r
    first = r["first"][0]
    assert first == {"operand": "B", "col": 0, "block": 0, "expected": "B's tile byte 0",
                     "observed": f"B's tile byte {16 * 31}"}, first


def test_two_misreadings_at_once_are_named_by_the_recovered_maps():
    """No single edit of the catalogue is this; the recovered maps name both: A's rows of a group reversed (the
    row bits complemented), B's factors one byte on (block 0 -> byte 1, block 1 -> byte 2)."""
    r = diagnose(tc("mxf4"), "sf-rows-reversed@A,sf-id+1@B")["scale-factors"]
    assert r["status"] == "fail" and r["explanation"] is None, r
    assert r["rows"] == "0-127" and r["cols"] == "0-31"
    assert r["roles"] == [f"A's byte bit {4 + i} comes from row bit {i} ^ 1; the model takes it from row bit {i}"
                          for i in range(5)] + [
        "B's byte bit 0 comes from block ^ 1; the model takes it from block",
        "B's byte bit 1 comes from block; the model takes it from 0"], r["roles"]


def test_d_is_read_where_the_tensor_memory_probe_found_it(tmp_path):
    """With D's lane quarters reversed as well, the scale-factor probe still names its edit, reading D through the
    placement the Tensor Memory probe named, and says so; both pictures are drawn."""
    recs = diagnose(tc("mxf4"), "d-quarters-reversed,sf-rows-reversed@A", tmp_path)
    t, r = recs["tmem-d"], recs["scale-factors"]
    assert t["explanation"] == "data path D (lane = row) with the 32-lane quarters in reverse order", t
    assert r["edit"] == "sf:rows-reversed@A" and t["explanation"] in r["caveat"], r
    for rec in (t, r):
        assert rec["png"].endswith(".png") and open(rec["png"], "rb").read(4) == b"\x89PNG", rec["png"]
    assert diagnose(tc("mxf4"), "d-quarters-reversed")["scale-factors"]["status"] == "pass"


def test_cases_the_probe_cannot_feed_are_not_probed_with_the_reason():
    recs = diagnose(TcCase(Form("mxf4nvf4", 2), 128, 64, "e2m1", "e2m1", "f32", "128B", "128B"))
    assert recs["scale-factors"]["status"] == "not-probed" and "2x2" in recs["scale-factors"]["summary"]
    with pytest.raises(ValueError, match="no scale factors"):
        sf_probe.setup_and_jobs(tc("f16"))


def test_the_codes_name_64_digits_apart_from_one_exactly_in_f32():
    for scale_type, codes in sf_probe.CODES.items():
        assert len(set(codes.tolist())) == sf_probe.BASE and datapaths.SF_ONE[scale_type] not in codes
        v = sf_probe.scale_values(scale_type, codes)
        prod = np.outer(v, v).astype(np.float32)
        assert np.all(np.isfinite(prod)) and np.array_equal(prod.astype(np.float64), np.outer(v, v))
    assert sf_probe.BASE ** sf_probe.DIGITS >= 2 * 2 * datapaths.SF_TILE_BYTES  # every byte of a pair's tiles


def test_the_sweep_diagnoses_a_misreading_planted_in_the_device_with_both_probes(monkeypatch, tmp_path):
    """The real sweep (engine, GPU worker process, records) on the simulated probe device with A's and B's factors
    exchanged: the cases fail, and the diagnosis pass writes the Tensor Memory record (D where the model says)
    and the scale-factor record naming the exchange, every field documented."""
    from pathlib import Path

    from harness import plan, sweep as S
    from harness.run.compile import Compiled
    from tests.run import simsweep
    from tests.simulated import fake_gpus
    from tests.test_results_schema import field_names, undocumented
    p = plan.make(plan.Selection(families=("tcgen05",), kinds=("mxf4",), cta_groups=(1,)), {"tcgen05": "sm_100a"})
    kernel, cases = p.work[0]
    fake_gpus.install(monkeypatch, ["sm_100a"])
    monkeypatch.setattr(fake_gpus, "BACKEND", "tests.simulated.tcgen05_probe_device")
    monkeypatch.setattr(S, "compile_kernels", lambda kernels, cfg, log, helpers=None, submitted=None: {
        k: Compiled(k.name, str(k.arch), Path(f"/nonexistent/{k.name}.cubin#sf-ab-swapped"), True) for k in kernels})
    summary, recs, raw, _ = simsweep.sweep(plan.Plan([(kernel, cases[:1])]), tmp_path / "r.jsonl", diagnose=1)
    assert summary["fail"] == 1, summary
    diag = {r["probe"]: r for r in raw if r["type"] == "diagnosis" and r.get("probe")}
    assert diag["tmem-d"]["status"] == "pass" and diag["scale-factors"]["edit"] == "sf:ab-exchanged", diag
    assert undocumented(field_names(raw)) == set()


def test_the_blackwell_proof_names_its_plants_on_the_simulated_device(tmp_path):
    """benchmarks/tcgen05_probe_proof.py (for a later session on a B200 / B300): two of its model plants, on the
    simulated probe device."""
    import json

    from benchmarks import tcgen05_probe_proof as proof
    out = tmp_path / "proof.jsonl"
    assert proof.main(["--simulated", "--only", "D:ctas-exchanged,SF:blocks-pairs", "--max-cases", "2",
                       "--out", str(out)]) == 0
    recs = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert [r["plant"] for r in recs] == ["D:ctas-exchanged", "SF:blocks-pairs"] and all(r["named"] for r in recs)
    assert all(r["failing"] == r["cases"] == 2 for r in recs), recs


@settings(max_examples=4, deadline=None)
@given(st.sampled_from([("A", tc("mxf4nvf4")), ("B", tc("mxf4nvf4")), ("A", tc("mxf8f6f4")), ("B", tc("mxf4", n=128))]),
       st.integers(0, 2 ** 32 - 1))
def test_random_affine_misreadings_of_the_factors_are_recovered_exactly(which, seed):
    """The device reads the factor of (index, block) as that of Q(index, block), Q a random invertible affine map of
    the index and block bits: the recovered map is exactly the model's byte map composed with Q (evaluated at the
    zero and unit inputs, no solver), and only that operand's factors are blamed."""
    from tests.simulated import misreading_probe as MR, tcgen05_probe_device as dev
    who, c = which
    sst = sf_probe.setup_and_jobs(c)[0]
    extent, nb = (c.m if who == "A" else c.n), sst.blocks
    ib, bb = (extent - 1).bit_length(), (nb - 1).bit_length()
    q, k = MR.random_invertible(ib + bb, np.random.default_rng(seed))

    def misread(x, block):
        y = MR.apply(q, k, np.asarray(x) | (np.asarray(block) << ib))
        return y & ((1 << ib) - 1), y >> ib
    dev.MISREAD_SF[who] = misread
    try:
        r = diagnose(c)["scale-factors"]
    finally:
        dev.MISREAD_SF.clear()
    sf_id = sst.sf_id[0 if who == "A" else 1]
    tile = 0 if who == "A" else 1

    def slot(x, b):  # the model's byte of (index, block), after the misreading
        x2, b2 = misread(np.array(x), np.array(b))
        return int(tile * datapaths.SF_TILE_BYTES + datapaths.sf_smem_offset(x2, b2 + sf_id))
    const = slot(0, 0)
    index_cols = [slot(1 << i, 0) ^ const for i in range(ib)]
    other = [0] * ((c.n if who == "A" else c.m) - 1).bit_length()
    block_cols = [slot(0, 1 << j) ^ const for j in range(bb)]
    columns = index_cols + other + block_cols if who == "A" else other + index_cols + block_cols
    hw = r["hardware_map"][who]
    assert hw["columns"] == columns and hw["constant"] == const, (hw["map"], columns, const)
    assert r["status"] == "fail" and all(x.startswith(f"{who}'s ") for x in r["roles"]), r["roles"]
