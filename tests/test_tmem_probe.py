"""The Tensor Memory D probe (harness/families/tcgen05/tmem_probe.py) on the simulated tcgen05 device, which places
D with its own data paths: a wrong data-path model planted in this process (the device runs in a worker process),
or a changed data path planted in the device, must be found and named."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.diagnosis.digits import code_digits
from harness.families.tcgen05 import cases as T, datapaths, readback, reference, tmem_probe
from harness.families.tcgen05.forms import Form
from harness.run.worker import GpuWorker
from tests.simulated import tcgen05_probe_device as probe_device
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


# ---------------------------------------------------------------------------------------------------- every form
# The forms the address probe does not cover (a CTA pair, .ws, block scaling, 4/6-bit types): the faithful device
# (tests/simulated/tcgen05_probe_device.py, its own data paths) must place D as the model says, and a change of the
# data path planted in the *device* must be named. The device runs in this process (nothing is planted here).

class InProcess:
    def run(self, cubin_path, name, launch, timeout):
        return probe_device.run(cubin_path, name, launch)


def tc(kind, cg=1, m=128, n=32, types=None, ws=False, a_src="SS", sa="128B", sb="64B"):
    a, b, acc = types or T.type_combos(kind)[0]
    return T.TcCase(Form(kind, cg, ws, a_src), m, n, a, b, acc, sa, sb)


def run_on_device(c, plant=""):
    return tmem_probe.diagnose(kernel_of(c.form), [c], f"sim.cubin#{plant}", InProcess(), 60)


NEW_FORMS = [tc("f16", 2, 256, 64), tc("i8", 2, 128, 64, ("s8", "u8", "s32")), tc("f16", ws=True, m=32, n=64),
             tc("tf32", ws=True, m=64, n=128, sa="32B", sb="128B"), tc("f16", ws=True, m=128, n=64,
                                                                       types=("f16", "f16", "f16")),
             tc("mxf8f6f4"), tc("mxf4", 2, 256, 32), tc("mxf4nvf4", n=128),
             tc("mxf8f6f4", 2, 256, 32, ("e2m3", "e3m2", "f32")), tc("f8f6f4", types=("e2m1", "e3m2", "f32")),
             tc("f8f6f4", m=64, types=("e3m2", "e4m3", "f32"), a_src="TS")]


def test_the_faithful_device_places_d_of_every_form_as_the_model_says():
    for c in NEW_FORMS:
        r, = run_on_device(c)
        assert r["status"] == "pass" and r["wrong"] == 0 and r["elements"] == c.m * c.n, r


DEVICE_PLANTS = [  # (planted in the device, case, what the hardware does, what the model does)
    ("d-ctas-swapped", tc("f16", 2, 256, 64), "data path A (M=256 pair: 128 rows per CTA) with the pair's CTAs "
     "exchanged", "data path A (M=256 pair: 128 rows per CTA)"),
    ("d-pair-by-columns", tc("f16", 2, 128, 64), "the pair split by columns (CTA c // (N/2) holds every row of its "
     "columns)", "data path B (M=128 pair: 64 rows per CTA, column halves on lanes +64)"),
    ("d-halves-reversed", tc("f16", ws=True, m=64, n=64), "data path E (.ws M=64: column halves on lanes +64) with "
     "the column halves in reverse order", "data path E (.ws M=64: column halves on lanes +64)"),
    ("d-columns-interleaved", tc("f16", ws=True, m=64, n=64), "data path E (.ws M=64: column halves on lanes +64) "
     "with even / odd columns on lanes +0 / +64", "data path E (.ws M=64: column halves on lanes +64)"),
    ("d-columns-interleaved", tc("f16", ws=True, m=32, n=64), "data path G (.ws M=32: column quarters on lanes +32) "
     "with columns interleaved over the four lane quarters (column c on quarter c % 4)",
     "data path G (.ws M=32: column quarters on lanes +32)"),
    ("d-quarters-reversed", tc("mxf4"), "data path D (lane = row) with the 32-lane quarters in reverse order",
     "data path D (lane = row)"),
    ("d-columns^1", tc("mxf8f6f4", 2, 256, 32, ("e5m2", "e2m1", "f32")), "data path A (M=256 pair: 128 rows per "
     "CTA) with columns c and c+1 exchanged", "data path A (M=256 pair: 128 rows per CTA)"),
]


@pytest.mark.parametrize("plant,c,hw,model", DEVICE_PLANTS, ids=[f"{p[0]}-{p[1].form.name}" for p in DEVICE_PLANTS])
def test_a_data_path_planted_in_the_device_is_named(plant, c, hw, model):
    r, = run_on_device(c, plant)
    assert r["status"] == "fail" and r["wrong"] > 0, r
    assert r["explanation"] == hw and r["model_is"] == model, r["summary"]
    assert f"the hardware places D exactly as {hw}; the model places it as {model}" in r["summary"]


def test_two_changes_at_once_are_named_by_the_recovered_map():
    """No single edit of the catalogue is this; the recovered map names both changes, bit by bit."""
    r, = run_on_device(tc("f16", 2, 256, 64), "d-ctas-swapped,d-columns^1")
    assert r["status"] == "fail" and r["explanation"] is None, r
    assert r["roles"] == ["column bit 0 comes from col bit 0 ^ 1; the model takes it from col bit 0",
                          "cta comes from row bit 7 ^ 1; the model takes it from row bit 7"], r["roles"]
    assert r["summary"].startswith("D placement: the hardware's map is column bit 0 = col bit 0 ^ 1, "
                                   "cta = row bit 7 ^ 1; the model's is column bit 0 = col bit 0, cta = row bit 7")


@settings(max_examples=4, deadline=None)
@given(st.sampled_from([tc("f16", m=128, n=64), tc("f16", 2, 256, 32), tc("tf32", m=64, n=32, sa="32B", sb="128B")]),
       st.integers(0, 2 ** 32 - 1))
def test_random_affine_misplacements_are_recovered_exactly(c, seed):
    """The device places element e where its data path puts Q(e), Q a random invertible affine map of the element's
    (row, col) bits: the recovered map is exactly that (read off the planted placement at element 0 and at each
    unit element, no solver)."""
    from tests.simulated import misreading_probe as MR
    rb, cb = (c.m - 1).bit_length(), (c.n - 1).bit_length()
    q, k = MR.random_invertible(rb + cb, np.random.default_rng(seed))

    def index(m, n):
        r, col = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
        return MR.compose(r, col, rb, q, k)
    probe_device.MISREAD_D = index
    try:
        r, = run_on_device(c)
        cta, lane, col = probe_device.d_cells(c.m, c.n, c.form.cta_group, c.form.ws)
    finally:
        probe_device.MISREAD_D = None
    assert r["status"] == "fail", r["summary"]
    width = r["hardware_map"]["out_bits"]
    cd = tmem_probe.coding(c, 1 << sum(1 for x in width if x.startswith("column")))
    half = np.zeros_like(lane)
    place = tmem_probe._places(c, cd, cta, lane, col, half)
    const = int(place[0, 0])
    columns = [int(place[1 << i, 0]) ^ const for i in range(rb)] + [int(place[0, 1 << i]) ^ const for i in range(cb)]
    assert r["hardware_map"]["columns"] == columns and r["hardware_map"]["constant"] == const


def test_a_pair_the_kernel_cannot_feed_is_not_probed_with_the_reason():
    """Block-scaled M=128 pairs take CUTLASS's 2x2 scale-factor layout, which one copy cannot produce."""
    r, = run_on_device(T.TcCase(Form("mxf4", 2), 128, 64, "e2m1", "e2m1", "f32", "128B", "128B"))
    assert r["status"] == "not-probed" and "2x2" in r["summary"], r


def test_digits_fit_every_type_pair():
    assert tmem_probe.digit_plan("f16", "f16", 256, 16) == (2, 128)
    assert tmem_probe.digit_plan("s8", "u8", 256, 32) == (2, 64)
    assert tmem_probe.digit_plan("e2m1", "e2m1", 256, 64) == (4, 4)  # 4 is e2m1's largest exact power of two
    assert tmem_probe.digit_plan("e3m2", "e4m3", 256, 32) == (2, 16)
    for a in T.F8F6F4:
        for b in T.F8F6F4:
            base, cap = tmem_probe.digit_plan(a, b, 256, 32)
            w, digits = code_digits(a, 256, 32, base, cap)
            v = np.arange(256)
            assert np.array_equal(digits(v) @ w, v)


def test_probe_launches_fit_every_forms_kernel():
    from harness.families.tcgen05 import kernel as tk, sf_probe
    for arch in ("sm_100a", "sm_103a"):
        for form, cs in T.all_cases(arch):
            c = next((c for c in cs if not c.control), None)
            if c is None:  # compiled only, no cases: .ws.sp and block-scaled .sp (FINDINGS section 7)
                continue
            if form.sparse:
                with pytest.raises(ValueError, match="sparse form"):
                    tmem_probe.jobs_of(c, arch)
                continue
            if form.variant in ("ashift", "shift_down"):  # a row the ISA leaves undefined: not probed
                with pytest.raises(ValueError, match="not probed"):
                    tmem_probe.jobs_of(c, arch)
                continue
            for jobs in (tmem_probe.jobs_of(c, arch),) + ((sf_probe.setup_and_jobs(c, arch)[1],)
                                                          if form.block_scaled else ()):
                inp = tk.pack(jobs)
                assert inp.smem <= 227 * 1024 and inp.ctas_per_case == form.cta_group
                assert inp.params["read_cols"].max() <= 512 and inp.params["enable_input_d"].max() == 0
                assert inp.params["zero_mask"].max() == 0
