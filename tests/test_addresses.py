"""Probe mode on the CPU: a device that reads exactly what the layout model says (`model_device`) must give
back, through the numbered images and one-hot operands, the model's address of every element; a device
that reads through a wrong descriptor (the negative controls) must give back that descriptor's addresses,
and the explanation must name the wrong setting."""
import numpy as np
import pytest

from harness.diagnosis import explain
from harness.families.wgmma import addresses
from harness.spec import desc_wgmma, dtypes, fragments, layouts
from harness import plan
from harness.families.wgmma import forms as wgmma
from harness.families.wgmma.cases import negative_controls, operand_scenarios, majors

pytestmark = pytest.mark.spread  # no module-scoped fixture: under pytest -n, each test on any free worker


def model_device(st, jobs):
    """D of each probe CTA as the layout model says the tensor core computes it."""
    v = st.variant
    out = []
    for j in jobs:
        at, bt = dtypes.get(v.atype), dtypes.get(v.btype)
        if st.a is not None:
            a = at.from_bits(layouts.read_image(st.a.desc_layout, j.image))
        else:
            a = at.from_bits(fragments.scatter_registers(fragments.wgmma_a_fragment(v.atype), j.a_regs,
                                                         (64, st.key.k)))
        b = bt.from_bits(layouts.read_image(st.b.desc_layout, j.image))
        out.append((v.scale_a * a) @ (v.scale_b * b).T)
    return np.stack(out)


PLAN = {k.form: cs for k, cs in plan.make(plan.Selection(families=("wgmma",), n_values=(8, 64), data_modes=("exact",)), cache=True).work}
FORMS = sorted({(k.kind, k.n, k.dtype, k.a_src): k for k in PLAN}.values(), key=lambda k: k.name)


@pytest.mark.parametrize("key", FORMS, ids=lambda k: k.name)
def test_recovered_addresses_equal_the_model(key):
    case = PLAN[key][-1 - len([c for c in PLAN[key] if c.control])]  # a positive case
    st = addresses.setup_of(case)
    for which in (("A", "B") if st.a is not None else ("B",)):
        jobs = addresses.probe_jobs(st, which)
        observed = addresses.recover(st, which, model_device(st, jobs))
        expected = (st.a if which == "A" else st.b).addr
        assert np.array_equal(observed, expected), which
        assert explain.explain(expected, observed)["wrong"] == 0


def test_an_element_read_as_no_number_is_an_address_no_layout_gives():
    """An element whose probe value is NaN or infinite (read from outside the probe's digits, as a planted LBO makes
    it) is recovered as -1, never as whatever NaN cast to an integer happens to be (a number that may be a real
    address, and a RuntimeWarning on the H100 node)."""
    key = FORMS[0]
    case = PLAN[key][-1 - len([c for c in PLAN[key] if c.control])]
    st = addresses.setup_of(case)
    d = model_device(st, addresses.probe_jobs(st, "B")).astype(np.float64)
    d[0, 0, 0] = np.nan  # pass 0, first row/column: one element of B
    d[-1, 1, 2] = np.inf
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        observed = addresses.recover(st, "B", d)
    expected = st.b.addr
    wrong = observed != expected
    assert np.all(observed[wrong] == -1) and 1 <= wrong.sum() <= 2
    assert np.array_equal(observed[~wrong], expected[~wrong])


@pytest.mark.parametrize("control", ["wrong-swizzle", "swapped-lbo-sbo", "start+16"])
def test_controls_are_explained_by_their_wrong_descriptor(control):
    key = wgmma.KernelKey("f16", 64, "f32", "SS")
    a_s = operand_scenarios("f16", 64, 16, majors(key))
    case = next(c for c in negative_controls(key, a_s, operand_scenarios("f16", 64, 16, majors(key)))
                if c.control == control)
    st = addresses.setup_of(case)
    observed = addresses.recover(st, "B", model_device(st, addresses.probe_jobs(st, "B")))
    assert np.array_equal(observed, layouts.element_bit_addresses(st.b.desc_layout))
    # the operand with the right descriptor still reads as intended: the probe's one-hot B sits where
    # B's (wrong) descriptor makes the tensor core read it, unless that descriptor aliases B's elements
    if control == "swapped-lbo-sbo":
        with pytest.raises(addresses.ProbeImpossible):
            addresses.probe_jobs(st, "A")
    else:
        assert np.array_equal(addresses.recover(st, "A", model_device(st, addresses.probe_jobs(st, "A"))),
                              st.a.addr)
    why = explain.explain(st.b.addr, observed, st.b.layout)
    assert why["wrong"] > 0
    want = {"wrong-swizzle": "swizzle 64B", "swapped-lbo-sbo": "LBO and SBO swapped", "start+16": "start +16 bytes"}
    assert why["observed_change"] == want[control], why["summary"]


def test_missing_swizzle_is_described_in_address_bits():
    lay = layouts.SmemLayout("K", "128B", "f16", 64, 16, 16, 1024)
    why = explain.explain(layouts.element_bit_addresses(lay), layouts.element_bit_addresses(lay.moved(swizzle="none")), lay)
    assert "XOR of address bits 7-9 into bits 4-6 missing: swizzle 128B expected, none observed" in why["summary"]
    assert why["rows"] == "1-7,9-15,17-23,25-31,33-39,41-47,49-55,57-63"  # row 8g reads the same either way


def test_b1_needs_binary_digits_and_sub_passes():
    key = wgmma.KernelKey("b1", 8, "s32", "SS")
    case = next(c for c in PLAN[key] if not c.control)
    st = addresses.setup_of(case)
    passes, sub = addresses.plan_passes(st, "A")
    assert sub == 32 and 2 ** passes >= (st.size + addresses.SLACK_BYTES) * 8
    observed = addresses.recover(st, "A", model_device(st, addresses.probe_jobs(st, "A")))
    assert np.array_equal(observed, st.a.addr)


def test_every_address_probe_fits_one_launch_image():
    from harness.families.wgmma import kernel as launch
    from harness.experiments import probes
    cases = probes.address_cases()
    assert any(c.control for c in cases) and any(not c.control for c in cases)
    for c in cases[::7]:
        st = addresses.setup_of(c)
        for which in ("A", "B") if st.a is not None else ("B",):
            try:
                jobs = addresses.probe_jobs(st, which)
            except addresses.ProbeImpossible:
                assert c.control.startswith("swapped")
                continue
            assert max(j.image.size for j in jobs) <= launch.MAX_IMAGE


def test_overflow_experiments_write_the_hypothesis_image():
    from harness.spec import descriptors
    from harness.experiments import probes
    for case, prep, st, hypothesis in probes.overflow_setups():
        f16 = dtypes.get("f16")
        b_read = f16.from_bits(addresses_read(prep.image, st.b.addr))
        assert np.array_equal(b_read, prep.b_vals), case.id
        fields = desc_wgmma.decode_wgmma_desc(prep.descs[1])
        name = case.id.split("overflow-")[1]
        if name.endswith("wraps"):
            assert not fields["problems"]  # an ordinary-looking descriptor whose sums cross 2^18
        else:
            assert "reserved bits set" in fields["problems"][0]
        assert np.array_equal(prep.expected, (prep.a_vals @ prep.b_vals.T).astype(np.float32))


def addresses_read(image, bit_addr):
    byte = bit_addr >> 3
    return image[byte].astype(np.uint64) | (image[byte + 1].astype(np.uint64) << np.uint64(8))


def test_layout_png(tmp_path):
    import subprocess
    import sys
    out = tmp_path / "l.png"
    proc = subprocess.run([sys.executable, "-m", "harness", "layout", "--major", "MN", "--swizzle", "64B", "--dtype",
                           "f16", "--rows", "64", "--cols", "16", "--lbo", "1024", "--sbo", "512", "--png", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_comparison_png(tmp_path):
    from harness.diagnosis import pictures
    lay = layouts.SmemLayout("K", "128B", "f16", 64, 16, 16, 1024)
    out = tmp_path / "c.png"
    pictures.comparison_png(layouts.element_bit_addresses(lay),
                            layouts.element_bit_addresses(lay.moved(swizzle="64B")), out, "wrong swizzle")
    assert out.stat().st_size > 1000


@pytest.mark.parametrize("rows,cols,cell_in,labelled", [(64, 16, 0.3, True), (128, 16, 0.08, False),
                                                        (8, 8, 0.05, False)])
def test_cells_are_labelled_only_where_the_label_fits_legibly(rows, cols, cell_in, labelled):
    """A picture's cells carry their numbers where a label fits its cell at 4 points or more; smaller ones would
    overlap. Each cell's label is the outline of its own number (matplotlib's TextPath, up to scale and place),
    centred on the cell, no digit in it smaller than at 4 points, the widest as wide as fits its cell."""
    from matplotlib.textpath import TextPath
    from harness.diagnosis import pictures
    plt = pictures.pyplot()
    fig, ax = plt.subplots()
    try:
        chunk = np.arange(rows * cols).reshape(rows, cols) % 300
        pictures.draw_chunks(ax, chunk, 0, "t", cell_in=cell_in)
        labels = [c for c in ax.collections if c.get_gid() == pictures.LABELS_GID]
        assert not ax.texts and len(labels) == labelled
        if not labelled:
            return
        paths, offsets = labels[0].get_paths(), labels[0].get_offsets()
        assert sorted(map(tuple, offsets.astype(int).tolist())) == [(c, r) for c in range(cols) for r in range(rows)]

        def normalised(vertices):  # the outline's shape: from its lower left corner, its height 1
            low = vertices.min(axis=0)
            return (vertices - low) / np.ptp(vertices[:, 1])
        flat_digit = np.ptp(TextPath((0, 0), "1", size=pictures.MIN_LABEL_PT).vertices[:, 1])
        for (x, y), path in zip(offsets, paths):
            own = TextPath((0, 0), str(chunk[int(y), int(x)]), size=10).vertices
            assert np.allclose(normalised(path.vertices), normalised(own), atol=1e-6)
            assert np.allclose(path.vertices.min(axis=0) + path.vertices.max(axis=0), 0, atol=1e-6)  # centred
            assert np.ptp(path.vertices[:, 1]) >= flat_digit * (1 - 1e-9)
        # as large as fits: the widest label (in points) within its cell, and not under half of it
        widest = max(np.ptp(p.vertices[:, 0]) for p in paths)
        assert 0.5 * cell_in * 72 <= widest <= cell_in * 72
    finally:
        plt.close(fig)
