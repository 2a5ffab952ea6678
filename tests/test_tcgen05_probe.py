"""The tcgen05 address probe on the CPU: a simulated device (tests/simulated/tcgen05_probe_device.py) runs the
probe's launches from their raw buffers through the descriptors it decodes, in a GPU worker process like a GPU.
A faithful device must read as the model; a device with a planted misreading must be diagnosed with that
misreading named; A in Tensor Memory must come back as its lane/column map; what the probe does not cover must
say 'not-probed' and why."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.enums import Arch, FamilyName
from harness.families import tcgen05
from harness.contract import Kernel
from harness.families.tcgen05 import cases as T, datapaths, probe
from harness.families.tcgen05.forms import Form
from harness.run.worker import GpuWorker
from harness.spec import layouts

SIM = "tests.simulated.tcgen05_probe_device"


@pytest.fixture(scope="module")
def worker():
    w = GpuWorker(0, backend=SIM)
    yield w
    w.close()


def kernel_of(form: Form) -> Kernel:
    return Kernel(FamilyName.TCGEN05, Arch.SM_100A, form.name, form)


def diagnose(cases, worker, plant: str = "", png_dir=None):
    form = cases[0].form
    return tcgen05.FAMILY.diagnose(kernel_of(form), cases, f"sim.cubin#{plant}", worker, 60, png_dir)


def case(kind="f16", a_src="SS", m=128, n=64, sa="128B", sb="128B", ma="K", mb="K", types=None, control=""):
    f = Form(kind, 1, a_src=a_src)
    a, b, acc = types or T.type_combos(kind)[0]
    return T.TcCase(f, m, n, a, b, acc, sa, sb, major_a=ma, major_b=mb, control=control)


FAITHFUL = [
    case("f16", "SS", 128, 64, "128B", "64B"),
    case("f16", "SS", 64, 8, "none", "32B", types=("bf16", "bf16", "f32")),
    case("f16", "SS", 128, 16, "128B", "none", types=("f16", "f16", "f16")),
    case("f16", "SS", 128, 128, "64B", "128B", "MN", "MN"),
    case("tf32", "SS", 128, 32, "32B", "128B_base32b", "K", "MN"),
    case("tf32", "SS", 64, 256, "none", "64B"),
    case("f16", "TS", 128, 64, sb="128B"),
    case("f16", "TS", 64, 8, sb="none", types=("bf16", "bf16", "f32")),
    case("tf32", "TS", 64, 16, sb="32B"),
    case("f8f6f4", "SS", 128, 32, "128B", "64B", types=("e4m3", "e5m2", "f32")),
    case("f8f6f4", "TS", 64, 16, sb="128B", types=("e5m2", "e4m3", "f16")),
    case("i8", "SS", 128, 64, "64B", "none", types=("s8", "u8", "s32")),
    case("i8", "TS", 128, 8, sb="32B", types=("u8", "s8", "s32")),
]


def test_faithful_device_reads_every_operand_as_the_model(worker):
    by_form = {}
    for c in FAITHFUL:
        by_form.setdefault(c.form, []).append(c)
    for cs in by_form.values():
        every = diagnose(cs, worker)
        tmem = [r for r in every if r.get("probe") == "tmem-d"]  # where D sits in Tensor Memory (tmem_probe.py)
        assert len(tmem) == len(cs) and all(r["status"] == "pass" for r in tmem), tmem
        recs = [r for r in every if r.get("probe") != "tmem-d"]
        assert len(recs) == 2 * len(cs), recs
        for r in recs:
            assert r["status"] == "pass" and r["reads_as_model"] and r["reads_as_intended"], r
            assert r["wrong"] == 0


def test_controls_read_as_their_descriptor_and_the_change_is_named(worker):
    """A negative control's wrong descriptor is read as the model says (pass), not as intended, and the
    explanation names the descriptor's change."""
    f = Form("f16", 1)
    want = {"wrong-swizzle": "swizzle 128B expected, 64B observed", "swapped-lbo-sbo": "LBO and SBO swapped",
            "start+16": "start +16 bytes"}
    cs = [c for c in T.negative_controls(f) if c.control.split("@")[0] in want]
    recs = {(r["id"], r["operand"]): r for r in diagnose(cs, worker)}
    for c in cs:
        name, _, target = c.control.partition("@")
        r = recs[(c.id, target)]
        assert r["status"] == "pass" and r["reads_as_model"] and not r["reads_as_intended"], r
        assert want[name] in r["summary"], r["summary"]


PLANTS = [  # (planted misreading, the case's B swizzle, the differing fields the recovered map names, its name)
    ("swizzle=64B@B", "128B", "swizzle XORs bits 7-8 into 4-5 (Swizzle<2,4,3>, 64B), model XORs bits 7-9 into 4-6 "
                              "(Swizzle<3,4,3>, 128B)", "swizzle 64B"),
    ("swizzle=none@B", "128B", "swizzle XORs nothing (Swizzle<0,4,3>, none), model XORs bits 7-9 into 4-6 "
                               "(Swizzle<3,4,3>, 128B)", "swizzle none"),
    ("swap-lbo-sbo@B", "none", "LBO 256, model 128; SBO 128, model 256", "LBO and SBO swapped"),
    ("start+16@B", "128B", "start 8208, model 8192", "start +16 bytes"),
]


# The two tests that draw a picture (matplotlib: seconds each) run apart from the module's other tests under
# pytest -n, each with a simulated worker of its own: together they were a 37 s chain on one worker of an H100 node.
@pytest.mark.xdist_group("test_tcgen05_probe-draws-smem")
@pytest.mark.parametrize("plant,swz,words,name", PLANTS, ids=[p[0] for p in PLANTS])
def test_planted_smem_misreadings_are_named(worker, plant, swz, words, name, tmp_path):
    c = case("f16", "SS", 128, 64, "64B", swz)
    draw = plant == PLANTS[0][0]  # one picture is enough (matplotlib takes seconds)
    recs = {r["operand"]: r for r in diagnose([c], worker, plant, tmp_path if draw else None)}
    b = recs["B"]
    assert b["status"] == "fail" and not b["reads_as_model"] and not b["reads_as_intended"], b
    assert "; ".join(b["recovered"]["field_differences"]) == words, b["summary"]
    assert b["summary"] == f"{b['vs_model']} (known as: {name})"  # intended == model: one sentence, both ways
    assert b["recovered"]["hardware_cute"] in b["summary"] and b["recovered"]["model_cute"] in b["summary"]
    if draw:
        assert b["png"].endswith("-B.png") and open(b["png"], "rb").read(4) == b"\x89PNG"


def test_planted_start_offset_on_a_is_named(worker):
    c = case("tf32", "SS", 128, 32, "128B", "32B")
    recs = {r["operand"]: r for r in diagnose([c], worker, "start+16@A")}
    assert recs["A"]["status"] == "fail" and recs["A"]["observed_change"] == "start +16 bytes", recs["A"]
    # B's first probe put its one-hot A where A's descriptor says, and the device reads A 16 bytes on: no digits.
    # Probed again with the one-hot where the hardware was seen to read A, B reads as the model: B is not blamed
    assert recs["B"]["status"] == "pass" and "second_look" in recs["B"], recs["B"]


def test_ts_lane_and_column_map_is_recovered(worker):
    for c in (case("f16", "TS", 128, 64), case("tf32", "TS", 64, 16, sb="32B"),
              case("f8f6f4", "TS", 64, 16, types=("e4m3", "e4m3", "f32"))):
        st = probe.setup_of(c)
        slot, valid = probe.run_jobs(st, "A", worker, "sim.cubin", c.form.name)
        assert valid.all()
        lane, col, part = probe.tmem_position_of_slot(st, slot)
        rows, ks = np.meshgrid(np.arange(c.m), np.arange(c.k), indexing="ij")
        per = 32 // st.a.bits
        assert np.array_equal(lane, datapaths.a_lane(c.m, rows))
        assert np.array_equal(col, st.params["a_tmem_col"] + ks // per)
        assert np.array_equal(part, ks % per)


@pytest.mark.xdist_group("test_tcgen05_probe-draws-tmem")
def test_ts_planted_column_offset_is_named(worker, tmp_path):
    c = case("f16", "TS", 128, 64)
    a = next(r for r in diagnose([c], worker, "tmem-a-col+4", tmp_path) if r["operand"] == "A")
    col0 = probe.setup_of(c).params["a_tmem_col"]
    assert a["status"] == "fail" and a["where"] == "tmem" and a["wrong"] == a["elements"], a
    assert f"A read from column {col0 + 4} instead of {col0} (the A address +4 columns off)" in a["summary"]
    assert a["summary"].startswith(f"A (Tensor Memory): A starts at column {col0 + 4}, the model's at {col0}; the "
                                   "rest of the map is the model's")
    cols = np.array(a["observed_columns"])
    assert cols.shape == (128, 16) and np.array_equal(cols - col0, np.broadcast_to(np.arange(16) // 2 + 4, cols.shape))
    assert a["png"].endswith(".png")


def test_ts_planted_lane_path_is_named(worker):
    c = case("f16", "TS", 64, 32, sb="64B")
    a = next(r for r in diagnose([c], worker, "tmem-a-lanes=128") if r["operand"] == "A")
    assert a["status"] == "fail", a
    assert ("rows read from the lanes of row r on lane r (layout D, M=128) instead of 16 rows in each 32-lane "
            "quarter (layout F, M=64)") in a["summary"], a["summary"]
    assert a["rows"] == "16-63"  # rows 0-15 sit on lanes 0-15 under both paths
    assert a["roles"] == ["lane bit 4 comes from row bit 4; the model takes it from 0",
                          "lane bit 5 comes from row bit 5; the model takes it from row bit 4",
                          "lane bit 6 comes from 0; the model takes it from row bit 5"], a["roles"]


UNSUPPORTED = [
    (T.TcCase(Form("mxf8f6f4", 1), 128, 32, "e4m3", "e4m3", "f32", "128B", "128B"), "block-scaled"),
    (T.TcCase(Form("f16", 2), 256, 64, "f16", "f16", "f32", "128B", "128B"), "cta_group::2"),
    (T.TcCase(Form("f16", 1, ws=True), 64, 64, "f16", "f16", "f32", "128B", "128B"), ".ws"),
    (case(control="version-cleared@B"), "outside the ISA"),
]


def test_unsupported_forms_are_not_probed_with_a_reason(worker):
    """The address probe says why it cannot probe these; the Tensor Memory and scale-factor probes, which cover
    every form, find the faithful device placing D and using the factors as the model says."""
    for c, words in UNSUPPORTED:
        recs = tcgen05.FAMILY.diagnose(kernel_of(c.form), [c], "sim.cubin", worker, 60, None)
        address = [r for r in recs if r.get("probe") not in ("tmem-d", "scale-factors")]
        assert address and all(r["status"] == "not-probed" for r in address), address
        assert all(words in r["summary"] for r in address), (words, address)
        others = [r for r in recs if r.get("probe") in ("tmem-d", "scale-factors")]
        assert all(r["status"] == "pass" for r in others), others
        assert len(others) == (0 if c.control else 1 + c.form.block_scaled), others


PACKED = [  # (case, the packed operand the address probe does not number, its words)
    (T.TcCase(Form("f8f6f4", 1), 128, 32, "e2m1", "e4m3", "f32", "128B", "64B"), "A", "4-bit type packed"),
    (T.TcCase(Form("f8f6f4", 1, a_src="TS"), 128, 32, "e4m3", "e3m2", "f32", "128B", "128B"), "B", "6-bit type"),
    (T.TcCase(Form("f8f6f4", 1, a_src="TS"), 64, 16, "e3m2", "e2m1", "f32", "128B", "32B"), "B", "4-bit type"),
]


def test_a_packed_operand_is_not_numbered_but_holds_the_other_ones_one_hot(worker):
    """4/6-bit operands in shared memory sit packed 16 per 16-byte chunk: the probe does not number them (says why)
    but writes the other operand's one-hot there, so the other operand -- A in Tensor Memory of a 4/6-bit type
    too -- is probed and read as the model says."""
    for c, packed, words in PACKED:
        recs = {r["operand"]: r for r in diagnose([c], worker) if r.get("probe") != "tmem-d"}
        assert recs[packed]["status"] == "not-probed" and words in recs[packed]["summary"], recs[packed]
        other = recs["B" if packed == "A" else "A"]
        assert other["status"] == "pass" and other["reads_as_model"], other


def test_ts_4_and_6_bit_a_planted_dense_packing_is_named(worker):
    """A 4/6-bit A in Tensor Memory one per 8-bit container (the model: e2m1 in bits 5-2, e2m3 / e3m2 in bits 5-0),
    or packed densely as CUTLASS's tmem_frg would; a device reading it densely is named, a device reading from 4
    columns further on is named as that."""
    for t, w in (("e2m1", 4), ("e2m3", 6)):
        c = T.TcCase(Form("f8f6f4", 1, a_src="TS"), 128, 32, t, "e4m3", "f32", "128B", "128B")
        a = next(r for r in diagnose([c], worker, "tmem-a-dense") if r["operand"] == "A")
        assert a["status"] == "fail" and a["explanation"].startswith(
            f"A read densely packed, element k of a row at bits {w}k .. {w}k+{w - 1}"), a
    c = T.TcCase(Form("f8f6f4", 1, a_src="TS"), 64, 16, "e3m2", "e2m1", "f32", "128B", "32B")
    a = next(r for r in diagnose([c], worker, "tmem-a-col+4") if r["operand"] == "A")
    col0 = probe.setup_of(c).params["a_tmem_col"]
    assert a["status"] == "fail" and "explanation" not in a, a
    assert f"A read from column {col0 + 4} instead of {col0} (the A address +4 columns off)" in a["summary"]
    assert a["summary"].startswith(f"A (Tensor Memory): A starts at column {col0 + 4}, the model's at {col0}; the "
                                   "rest of the map is the model's")


E2M1_TS = T.TcCase(Form("f8f6f4", 1, a_src="TS"), 128, 32, "e2m1", "e4m3", "f32", "128B", "128B")


def test_ts_e2m1_a_is_numbered_in_the_central_bits_of_its_container(worker):
    """An e2m1 A in Tensor Memory: the probe numbers every container (and puts B's probe's one-hot) in bits 5-2, where
    the model (datapaths.tmem_a_container) and the ISA ('the central 4 bits of the 8-bit container') say the MMA
    reads it; the simulated device, which reads it there by its own constant, gives back the model's map, and
    both operands read as the model."""
    st = probe.setup_of(E2M1_TS)
    op = st.a
    assert op.element == "e2m1" and op.bits == 8 and op.shift == 2
    for p in range(probe.plan_passes(st, "A")[0]):  # every container holds bits 5-2 only, and some hold them
        cells = probe.tmem_numbering(st, p)
        assert not np.any(cells.view(np.uint8) & np.uint8(0b11000011)) and np.any(cells), p
    hot = np.zeros((128, st.read_cols), np.uint32)  # B's one-hot A: 1.0 is e2m1 0b0010, in bits 5-2 0b00001000
    probe._tmem_write(hot, op, np.full((op.rows, op.k), 0b0010))
    lane, col, part = op.model
    assert np.all((hot[lane, col] >> (8 * part).astype(np.uint32)) & 0xFF == 0b1000)
    # the probe's own prediction of the model's reading gives back every slot
    slot, valid = probe.predicted_tmem_slots(st, *probe.container_reading(op))
    assert valid.all() and [np.array_equal(a, b) for a, b in zip(probe.tmem_position_of_slot(st, slot), op.model)] \
        == [True] * 3
    slot, valid = probe.run_jobs(st, "A", worker, "sim.cubin", E2M1_TS.form.name)
    assert valid.all()
    assert all(np.array_equal(a, b) for a, b in zip(probe.tmem_position_of_slot(st, slot), op.model))
    recs = {r["operand"]: r for r in diagnose([E2M1_TS], worker) if r.get("probe") != "tmem-d"}
    for r in recs.values():
        assert r["status"] == "pass" and r["reads_as_model"] and r["reads_as_intended"] and r["wrong"] == 0, r


def test_ts_e2m1_a_written_in_the_low_bits_is_a_misreading(worker, monkeypatch):
    """Planted bug: the probe writes e2m1 in the low bits of its container (the model's shift 0 in the probe's use,
    as before the model followed the ISA); the device reads bits 5-2, so A's recovered map is not the model's and
    the record names the container position the device read, and B's probe (A's one-hot written low) fails too."""
    faithful = {r["operand"]: r for r in diagnose([E2M1_TS], worker) if r.get("probe") != "tmem-d"}
    monkeypatch.setitem(datapaths.CONTAINER_SHIFT, "e2m1", 0)
    assert probe.setup_of(E2M1_TS).a.shift == 0
    recs = {r["operand"]: r for r in diagnose([E2M1_TS], worker) if r.get("probe") != "tmem-d"}
    a, b = recs["A"], recs["B"]
    assert a["status"] == "fail" and not a["reads_as_model"] and a["wrong"] > 0, a
    assert a["summary"] != faithful["A"]["summary"]
    assert a["explanation"] == ("e2m1 A read from bits 5-2 of its 8-bit Tensor Memory container, not bits 3-0 "
                                "(the model's: datapaths.tmem_a_container)"), a
    assert b["status"] != "pass" and not b["reads_as_model"], b


def test_ts_e2m1_a_read_from_the_low_bits_is_named(worker):
    """A device reading an e2m1 A from bits 3-0 of its container (tmem-a-container-low): named against the ISA."""
    a = next(r for r in diagnose([E2M1_TS], worker, "tmem-a-container-low") if r["operand"] == "A")
    assert a["status"] == "fail" and a["explanation"] == (
        "e2m1 A read from bits 3-0 of its 8-bit Tensor Memory container, not bits 5-2 (the model's: "
        "datapaths.tmem_a_container; the PTX ISA's 'central 4 bits of the 8-bit container')"), a
    assert a["summary"].startswith("A (Tensor Memory): e2m1 A read from bits 3-0"), a["summary"]


def test_aliasing_descriptor_of_the_other_operand_is_not_probed(worker):
    """swapped-lbo-sbo on B's 128B K-major descriptor makes B's rows overlap: no one-hot B can be placed to probe
    A, and the record says so; B itself is probed and read as its descriptor."""
    c = case(control="swapped-lbo-sbo@B")
    recs = {r["operand"]: r for r in diagnose([c], worker)}
    assert recs["A"]["status"] == "not-probed" and "cannot hold a one-hot" in recs["A"]["summary"]
    assert recs["B"]["status"] == "pass"


def test_probe_launches_fit_the_kernel():
    from harness.families.tcgen05 import kernel as tk
    for c in FAITHFUL:
        st = probe.setup_of(c)
        for which in ("A", "B"):
            inp = tk.pack(probe.probe_jobs(st, which))
            assert inp.smem <= 227 * 1024
            assert inp.params["read_cols"].max() <= 512 and inp.params["enable_input_d"].max() == 0
            assert layouts.footprint(st.b.desc_layout)[1] <= st.size


def test_a_d_map_taken_with_misread_operands_says_so(worker):
    """B read with another swizzle: the Tensor Memory probe's coded B is misread as well, and its record says that
    its map is not about D's placement alone."""
    c = case("f16", "SS", 128, 64, "64B", "128B")
    recs = {r.get("probe", "address") + r["operand"]: r for r in diagnose([c], worker, "swizzle=64B@B")}
    assert recs["addressB"]["status"] == "fail" and recs["tmem-dD"]["status"] == "fail"
    assert "the address probe found B read elsewhere" in recs["tmem-dD"]["caveat"], recs["tmem-dD"]


class _InStorm:
    """The worker as the sweep's storm guard (engine.NoRelaunch) hands it to the family: it names the storm
    (contract.Device.fault_storm) and counts the launches of each probe."""
    fault_storm = "a fault storm: 4 of the 8 launches of tcgen05 on sm_100a answered had failed"

    def __init__(self, worker):
        self.worker, self.launches = worker, 0

    def run(self, cubin_path, name, launch, timeout):
        self.launches += 1
        return self.worker.run(cubin_path, name, launch, timeout)


def test_in_a_fault_storm_addresses_read_astray_skip_the_tmem_probe(worker):
    """In a fault storm, a case whose address probe found an operand read astray gets no Tensor Memory probe: it
    launches on the same descriptors, so it would most likely fault too (a second each) and could not explain a
    fault. Its record says 'not-probed', the storm and what the address probe found. The same case outside a storm,
    and a storm's case whose addresses read as the model says, do get the probe."""
    c = case("f16", "SS", 128, 64, "64B", "128B")
    stormy = _InStorm(worker)
    recs = {r.get("probe", "address") + r["operand"]: r for r in diagnose([c], stormy, "swizzle=64B@B")}
    assert recs["addressB"]["status"] == "fail" and recs["tmem-dD"]["status"] == "not-probed", recs["tmem-dD"]
    assert recs["tmem-dD"]["summary"].startswith(f"tmem-d probe not run: {_InStorm.fault_storm}; the B address probe: "
                                                 f"{recs['addressB']['summary']}. This probe's launch reads")
    calm = _InStorm(worker)
    calm.fault_storm = None
    assert diagnose([c], calm, "swizzle=64B@B") and calm.launches == stormy.launches + 1  # the one probe skipped
    faithful = {r.get("probe", "address") + r["operand"]: r for r in diagnose([c], _InStorm(worker))}
    assert faithful["tmem-dD"]["status"] == "pass" and faithful["addressB"]["status"] == "pass"


def test_in_a_fault_storm_a_faulting_address_probe_skips_the_tmem_probe_and_is_quoted(monkeypatch):
    """A case whose address probe launch faulted, in a storm: no Tensor Memory probe, its record quoting the last
    operand read astray (B, as wgmma's does); another case of the kernel, read as modelled, gets the probe."""
    from harness.families.tcgen05 import tmem_probe
    faulted, fine = case("f16", "SS", 128, 64), case("f16", "SS", 128, 128)
    monkeypatch.setattr(probe, "diagnose", lambda kernel, cases, *a, **k: [
        {"type": "diagnosis", "id": faulted.id, "operand": "A", "status": "fault", "error": "illegal address (A)"},
        {"type": "diagnosis", "id": faulted.id, "operand": "B", "status": "fault", "error": "illegal address (B)"},
        {"type": "diagnosis", "id": fine.id, "operand": "A", "status": "pass"}])
    ran = []
    monkeypatch.setattr(tmem_probe, "diagnose", lambda kernel, cases, *a: ran.append(cases) or [])
    recs = tcgen05.FAMILY.diagnose(kernel_of(faulted.form), [faulted, fine], "sim.cubin", _InStorm(None), 60, None)
    assert ran == [[fine]]
    (skipped,) = [r for r in recs if r["status"] == "not-probed"]
    assert (skipped["id"], skipped["probe"]) == (faulted.id, "tmem-d")
    assert skipped["summary"].startswith(f"tmem-d probe not run: {_InStorm.fault_storm}; the B address probe: "
                                         "illegal address (B).")


def test_in_a_fault_storm_a_form_the_address_probe_does_not_cover_keeps_its_d_and_scale_factor_probes(worker):
    """A block-scaled form: the address probe does not cover it (its records 'not-probed', never read astray), so in
    a storm its Tensor Memory and scale-factor probes still run: they are all that can be learnt of it."""
    c = UNSUPPORTED[0][0]
    assert c.form.block_scaled
    recs = tcgen05.FAMILY.diagnose(kernel_of(c.form), [c], "sim.cubin", _InStorm(worker), 60, None)
    by_probe = {r.get("probe", "address"): r["status"] for r in recs}
    assert by_probe == {"address": "not-probed", "tmem-d": "pass", "scale-factors": "pass"}, recs


# ---------------------------------------------------------------------------------------------------- random maps

class _InProcess:
    """The probe device in this process, so that its misreading hooks apply."""
    def run(self, cubin_path, name, launch, timeout):
        from tests.simulated import tcgen05_probe_device
        return tcgen05_probe_device.run(cubin_path, name, launch)


def _affine_smem_case():
    """A case whose A and B address maps are both affine (the precondition of an exact affine plant)."""
    from harness.diagnosis import affine
    for c in (case("f16", "SS", 128, 64, "128B", "128B"), case("f16", "SS", 128, 64, "64B", "128B"),
              case("f16", "SS", 128, 64, "none", "none")):
        st = probe.setup_of(c)
        if all(isinstance(affine.solve(np.arange(op.addr.size), op.addr.T.ravel()), affine.AffineMap)
               for op in (st.a, st.b)):
            return c
    raise AssertionError("no affine tcgen05 case")


def _index_plant(rows, k, seed):
    from tests.simulated import misreading_probe as MR
    rb = (rows - 1).bit_length()
    q, c = MR.random_invertible(rb + (k - 1).bit_length(), np.random.default_rng(seed))

    def index(r_, k_):
        y = MR.apply(q, c, np.arange(r_)[:, None] | (np.arange(k_)[None, :] << rb))
        return y & ((1 << rb) - 1), y >> rb
    return index


def _unit_columns(table: np.ndarray) -> tuple[list[int], int]:
    rows, cols = table.shape
    c = int(table[0, 0])
    return ([int(table[1 << i, 0]) ^ c for i in range((rows - 1).bit_length())]
            + [int(table[0, 1 << j]) ^ c for j in range((cols - 1).bit_length())], c)


@settings(max_examples=4, deadline=None)
@given(st.sampled_from(["A", "B"]), st.integers(0, 2 ** 32 - 1))
def test_random_affine_smem_misreadings_are_recovered_exactly(which, seed):
    """The device reads element [i, j] where element Q(i, j) sits, Q a random invertible affine map of the index
    bits: the recovered map is exactly the planted table's (read at the zero and unit elements), and only that
    operand is blamed."""
    from tests.simulated import tcgen05_probe_device as dev
    c = _affine_smem_case()
    st_ = probe.setup_of(c)
    op = st_.a if which == "A" else st_.b
    index = _index_plant(*op.addr.shape, seed)
    dev.MISREAD_SMEM[which] = index
    try:
        recs = {r["operand"]: r for r in probe.diagnose(kernel_of(c.form), [c], "sim.cubin", _InProcess(), 60)}
    finally:
        dev.MISREAD_SMEM.clear()
    r_, k_ = index(*op.addr.shape)
    planted = op.addr[r_, k_]
    columns, const = _unit_columns(planted - (planted.min() & ~7))  # the map is of offsets from the lowest
    rec = recs[which]
    assert rec["status"] == "fail" and rec["recovered"]["hardware_map"]["columns"] == columns
    assert rec["recovered"]["hardware_map"]["constant"] == const
    # the other operand's first probe put its one-hot where this operand's model says; probed again with it where
    # the hardware was seen to read this operand, it reads as the model
    other = recs["B" if which == "A" else "A"]
    assert other["status"] == "pass" and "second_look" in other, other["summary"]


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_random_affine_tmem_a_misreadings_are_recovered_exactly(seed):
    from harness.diagnosis import bitmaps
    from tests.simulated import tcgen05_probe_device as dev
    c = case("f16", "TS", 128, 64)
    op = probe.setup_of(c).a
    index = _index_plant(op.rows, op.k, seed)
    dev.MISREAD_TMEM_A = index
    try:
        a = next(r for r in probe.diagnose(kernel_of(c.form), [c], "sim.cubin", _InProcess(), 60)
                 if r["operand"] == "A")
    finally:
        dev.MISREAD_TMEM_A = None
    ml, mc, mp = op.model
    r_, k_ = index(op.rows, op.k)
    lane, col, part = ml[r_, k_], mc[r_, k_], mp[r_, k_]
    span = int((col - col.min()).max()) + 1
    cd = bitmaps.Coding((("row", op.rows), ("k", op.k)), (("part", op.per), ("column", span), ("lane", 128)))
    columns, const = _unit_columns(cd.elements(part, col - col.min(), lane))
    assert a["status"] == "fail" and a["hardware_map"]["columns"] == columns and a["hardware_map"]["constant"] == const


# ---------------------------------------------------------------------------------------------------- both operands

SW_128B_AS_64B = ("swizzle XORs bits 7-8 into 4-5 (Swizzle<2,4,3>, 64B), model XORs bits 7-9 into 4-6 "
                  "(Swizzle<3,4,3>, 128B)")


def _words(plant: str, lay: layouts.SmemLayout) -> list[str]:
    """The field difference a device plant makes in an operand's record, from the layout its descriptor encodes."""
    if plant.startswith("start+"):
        return [f"start {lay.start + int(plant[len('start+'):])}, model {lay.start}"]
    if plant == "swizzle=64B" and lay.swizzle == "128B":
        return [SW_128B_AS_64B]
    if plant == "swizzle=64B" and lay.swizzle == "32B":
        return ["swizzle XORs bits 7-8 into 4-5 (Swizzle<2,4,3>, 64B), model XORs bit 7 into 4 (Swizzle<1,4,3>, 32B)"]
    raise AssertionError(f"no words for {plant} on {lay}")


def _named(rec: dict, words: list[str], which: str) -> None:
    assert rec["status"] == "fail" and rec["recovered"]["field_differences"] == words, rec["summary"]
    assert rec["summary"].startswith(f"{which} addresses: the hardware's layout is"), rec["summary"]


# (case, A's plant, B's plant)
TWO_PLANTS = [(case("f16", "SS", 128, 64, "128B", "128B"), "swizzle=64B", "start+16"),
              (case("f16", "SS", 128, 64, "64B", "128B"), "start+16", "swizzle=64B"),
              (case("tf32", "SS", 128, 32, "32B", "128B_base32b", "K", "MN"), "swizzle=64B", "start+16")]


@pytest.mark.parametrize("c,a_plant,b_plant", TWO_PLANTS,
                         ids=[f"{p[0].form.kind}-A-{p[1]}-B-{p[2]}" for p in TWO_PLANTS])
def test_two_operands_misread_each_named_for_its_own(worker, c, a_plant, b_plant):
    """The device misreads one field of A's descriptor and another of B's. Neither first probe can be trusted: B is
    probed in the TS form (A in Tensor Memory), A with B's one-hot where that probe saw B read, and each record
    names exactly its own operand's field."""
    st_ = probe.setup_of(c)
    recs = {r["operand"]: r for r in diagnose([c], worker, f"{a_plant}@A,{b_plant}@B") if r.get("probe") != "tmem-d"}
    _named(recs["A"], _words(a_plant, st_.a.desc_layout), "A")
    _named(recs["B"], _words(b_plant, st_.b.desc_layout), "B")
    ts = f"tcgen05_{c.form.kind}_cg1_TS"
    assert recs["B"]["second_look"].endswith(f"B was probed in the {ts} form (A in Tensor Memory), where no A "
                                             "address enters its probe"), recs["B"]["second_look"]
    assert f"A was probed with B's one-hot where the hardware was seen to read B in the {ts} form" in \
        recs["A"]["second_look"], recs["A"]["second_look"]


@pytest.mark.parametrize("c,plant", [(case("f16", "SS", 128, 64, "128B", "128B"), "swizzle=64B"),
                                     (case("f16", "SS", 128, 64, "64B", "64B"), "start+16")], ids=["swizzle", "start"])
def test_one_device_bug_in_both_operands_is_named_for_each(worker, c, plant):
    """One planted bug in the device's descriptor decoding, hitting every shared-memory descriptor: each operand's
    record names the field for that operand."""
    st_ = probe.setup_of(c)
    recs = {r["operand"]: r for r in diagnose([c], worker, plant) if r.get("probe") != "tmem-d"}
    _named(recs["A"], _words(plant, st_.a.desc_layout), "A")
    _named(recs["B"], _words(plant, st_.b.desc_layout), "B")


# (operand planted, case, its plant, probed apart or None: either): each two-plant case with one plant, and one
# whose plant reads A 1024 bytes into B's tile, which leaves the second look nothing clean to place B's one-hot by
ONE_PLANT = [(w, c, a_p if w == "A" else b_p, None) for c, a_p, b_p in TWO_PLANTS for w in "AB"] + [
    ("A", case("f16", "SS", 128, 64, "128B", "128B"), "start+1024", True)]


@pytest.mark.parametrize("which,c,plant,apart", ONE_PLANT, ids=[f"{p[0]}-{p[2]}-{p[1].id}" for p in ONE_PLANT])
def test_one_operand_misread_leaves_the_other_reading_as_the_model(worker, which, c, plant, apart):
    """The negative control of the two-plant tests: one operand planted. It alone is named; the other reads as the
    model (after the second look, or probed apart)."""
    st_ = probe.setup_of(c)
    recs = {r["operand"]: r for r in diagnose([c], worker, f"{plant}@{which}") if r.get("probe") != "tmem-d"}
    _named(recs[which], _words(plant, (st_.a if which == "A" else st_.b).desc_layout), which)
    other = recs["B" if which == "A" else "A"]
    assert other["status"] == "pass" and other["reads_as_model"] and other["wrong"] == 0, other["summary"]
    assert "recovered" not in other
    if apart is not None:  # the path the diagnosis took, where the case was chosen for it
        assert other["second_look"].startswith("A and B both read other than the model says") == apart, other


@settings(max_examples=3, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 32 - 1))
def test_random_affine_smem_misreadings_of_both_operands_are_recovered_exactly(seed_a, seed_b):
    """A and B each read through its own random invertible affine map of its index bits: each operand's recovered
    map is exactly its own plant."""
    from tests.simulated import tcgen05_probe_device as dev
    c = _affine_smem_case()
    st_ = probe.setup_of(c)
    planted = {}
    for which, seed in (("A", seed_a), ("B", seed_b)):
        op = st_.a if which == "A" else st_.b
        index = _index_plant(*op.addr.shape, seed)
        dev.MISREAD_SMEM[which] = index
        r_, k_ = index(*op.addr.shape)
        planted[which] = op.addr[r_, k_]
    try:
        recs = {r["operand"]: r for r in probe.diagnose(kernel_of(c.form), [c], "sim.cubin", _InProcess(), 60)}
    finally:
        dev.MISREAD_SMEM.clear()
    for which, table in planted.items():
        columns, const = _unit_columns(table - (table.min() & ~7))
        hw = recs[which]["recovered"]["hardware_map"]
        assert recs[which]["status"] == "fail" and hw["columns"] == columns and hw["constant"] == const, which
        assert np.array_equal(np.array(recs[which]["observed_bytes"]), table >> 3), which


class _NoTmemForm(_InProcess):
    def run(self, cubin_path, name, launch, timeout):
        from harness.contract import LaunchFailed
        if name.endswith("_TS"):
            raise LaunchFailed("fault", f"{name}: simulated fault")
        return super().run(cubin_path, name, launch, timeout)


def test_operands_that_cannot_be_probed_apart_are_not_blamed():
    """Both operands misread and the TS form's probe fails: neither first probe is trusted, so neither operand is
    failed on it; both records say why they are inconclusive."""
    c = TWO_PLANTS[0][0]
    recs = {r["operand"]: r for r in probe.diagnose(kernel_of(c.form), [c], "sim.cubin#swizzle=64B@A,start+16@B",
                                                    _NoTmemForm(), 60)}
    for which in "AB":
        assert recs[which]["status"] == "inconclusive", recs[which]["summary"]
        assert recs[which]["summary"].startswith(
            "A and B both read other than the model says, so neither first probe's one-hot surely sat where the "
            "hardware read it, and the probe of B in the tcgen05_f16_cg1_TS form failed (tcgen05_f16_cg1_TS: "
            "simulated fault); "), recs[which]["summary"]


def test_probe_apart_launches_fit_the_kernel():
    """B in the TS form and A with B moved past its numbers: every launch of the probe apart fits shared memory and
    Tensor Memory."""
    from harness.families.tcgen05 import kernel as tk
    for c in FAITHFUL:
        if c.form.a_src != "SS":
            continue
        st_ = probe.setup_of(c)
        ts, (moved, shift) = probe.tmem_form(st_), probe.b_moved_on(st_)
        assert shift % 1024 == 0 and moved.b.desc_layout.start == st_.b.desc_layout.start + shift
        for s, which in ((ts, "B"), (probe.b_moved_on(ts)[0], "B"), (moved, "A")):
            inp = tk.pack(probe.probe_jobs(s, which))
            assert inp.smem <= 227 * 1024 and inp.params["read_cols"].max() <= 512, c.id


def test_the_tensor_memory_picture_counts_as_drawing(tmp_path):
    """A TS form's A picture (Tensor Memory lanes and columns) is drawn through pictures.counted, as the shared kit's
    pictures are: its seconds reach the sweep's timing.pictures_s."""
    pytest.importorskip("matplotlib")
    from harness.diagnosis import pictures
    op = probe.TmemOperand("f16", 64, 16, 0, 64, 64)
    lane, col, part = (np.array(a) for a in op.intended)
    lane[0, :2] = lane[0, 1::-1] + 1
    before = pictures.DRAWN["seconds"]
    probe.tmem_comparison_png(op, lane, col, part, tmp_path / "tmem.png", "a title")
    assert (tmp_path / "tmem.png").read_bytes().startswith(b"\x89PNG") and pictures.DRAWN["seconds"] > before
