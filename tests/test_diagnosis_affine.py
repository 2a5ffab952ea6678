"""The GF(2) affine-map solver (harness/diagnosis/affine.py): random maps of the shapes the probes use are
recovered exactly; random non-affine maps get a witness that this test re-checks against the data."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.diagnosis import affine

# (input bits, output bits) of the probes: smem address (row 6 + k 4 -> byte 14), wgmma D (thread 7 + slot 6 ->
# row 6 + col 8), A k16 (thread 7 + slot 3 -> row 6 + k 4), TMEM (lane 7 + col 8 -> row 7 + col 8)
SHAPES = [(10, 14), (13, 14), (10, 10), (15, 15), (4, 4), (1, 1)]


@st.composite
def affine_maps(draw):
    nin, nout = draw(st.sampled_from(SHAPES))
    cols = tuple(draw(st.integers(0, (1 << nout) - 1)) for _ in range(nin))
    return affine.AffineMap(nin, nout, cols, draw(st.integers(0, (1 << nout) - 1)))


def _truth(m: affine.AffineMap, x: np.ndarray) -> np.ndarray:
    """The map evaluated bit by bit in plain Python (not through AffineMap.__call__)."""
    out = []
    for xi in x.tolist():
        y = m.constant
        for i in range(m.in_bits):
            if xi >> i & 1:
                y ^= m.columns[i]
        out.append(y)
    return np.array(out, np.int64)


@settings(max_examples=60, deadline=None)
@given(affine_maps(), st.integers(0, 2 ** 32 - 1))
def test_random_affine_maps_are_recovered_exactly(m, seed):
    x = np.arange(1 << m.in_bits)
    got = affine.solve(x, _truth(m, x), m.in_bits, m.out_bits)
    assert isinstance(got, affine.AffineMap)
    assert got.columns == m.columns and got.constant == m.constant and got.span_bits == -1
    # a shuffled subset that still spans (every unit vector, 0, and random others) gives the same map
    rng = np.random.default_rng(seed)
    keep = np.unique(np.concatenate([[0], 1 << np.arange(m.in_bits), rng.choice(x, size=x.size // 3 + 1)]))
    rng.shuffle(keep)
    again = affine.solve(keep, _truth(m, keep), m.in_bits, m.out_bits)
    assert again == got


@settings(max_examples=40, deadline=None)
@given(affine_maps(), st.integers(0, 2 ** 32 - 1))
def test_subsets_without_zero_or_units_are_recovered(m, seed):
    """A tile of 24 rows: inputs 0..23 of 5 bits; and a random affine-spanning subset from an offset."""
    x = np.arange(min(24, 1 << m.in_bits) if m.in_bits <= 5 else (1 << m.in_bits) - 7) + (m.in_bits > 5) * 7
    got = affine.solve(x, _truth(m, x), m.in_bits, m.out_bits)
    assert isinstance(got, affine.AffineMap)
    assert np.array_equal(got(x), _truth(m, x))
    if got.span_bits == -1:
        assert got == m


@settings(max_examples=80, deadline=None)
@given(affine_maps(), st.integers(0, 2 ** 32 - 1), st.integers(1, 3))
def test_non_affine_maps_get_a_valid_witness(m, seed, changes):
    """Change a few outputs of an affine map: the result is not affine (unless the change is affine itself, which
    the solver must then reproduce exactly); a witness must hold on the data and be 4 inputs on a full grid."""
    if m.in_bits < 2:
        return
    rng = np.random.default_rng(seed)
    x = np.arange(1 << m.in_bits)
    y = _truth(m, x)
    for i in rng.choice(x.size, size=min(changes, x.size), replace=False):
        y[i] ^= int(rng.integers(1, 1 << m.out_bits))
    got = affine.solve(x, y, m.in_bits, m.out_bits)
    if isinstance(got, affine.AffineMap):
        assert np.array_equal(got(x), y)
        return
    w = got
    assert w.holds(), w
    table = dict(zip(x.tolist(), y.tolist()))
    assert all(table[a] == b for a, b in zip(w.inputs, w.outputs))  # the witness is the data's
    assert len(w.inputs) == 4  # a full grid always has a square showing it


def test_a_single_changed_point_is_caught_by_a_square():
    x = np.arange(16)
    y = x.copy()
    y[13] ^= 1
    w = affine.solve(x, y)
    assert isinstance(w, affine.NotAffine) and w.holds() and len(w.inputs) == 4 and 13 in w.inputs


def test_two_outputs_for_one_input_is_a_two_point_witness():
    w = affine.solve([0, 1, 1, 2], [0, 1, 3, 2])
    assert isinstance(w, affine.NotAffine) and w.inputs == (1, 1) and w.holds()
    assert "not a function" in w.describe()


def test_carry_is_not_affine():
    """SBO 1040 = 1024 + 16: (i // 8) * 16 + (i % 8) * 16 carries, which no XOR map does."""
    i = np.arange(64)
    w = affine.solve(i, (i % 8) * 16 + (i // 8) * 1040)
    assert isinstance(w, affine.NotAffine) and w.holds() and len(w.inputs) == 4


def test_bits_that_never_vary_are_reported_undetermined():
    x = np.array([0, 1, 4, 5])  # bit 1 never set
    got = affine.solve(x, x * 2, 3, 4)
    assert isinstance(got, affine.AffineMap) and got.span_bits == 0b101 and got.columns[1] == 0
    assert np.array_equal(got(x), x * 2)


def test_describe_names_sources():
    m = affine.AffineMap(2, 2, (0b10, 0b11), 1).named(["lane bit 0", "reg bit 0"], ["row bit 0", "col bit 0"])
    assert m.describe() == "row bit 0 = reg bit 0 ^ 1; col bit 0 = lane bit 0 ^ reg bit 0"
    assert affine.differences(m, affine.AffineMap(2, 2, (0b10, 0b10), 1)) == [0]


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        affine.solve([0, 1], [0])
    with pytest.raises(ValueError):
        affine.solve([-1], [0])
    with pytest.raises(ValueError):
        affine.AffineMap(2, 2, (1,), 0)


def test_record_maps_puts_both_maps_and_the_roles_in_a_record():
    """bitmaps.record_maps, the record fields every probe writes: the maps and roles in that order, and the sentence;
    without a recovered map, no maps, no roles and the probe's own words."""
    from harness.diagnosis import bitmaps
    cd = bitmaps.Coding((("row", 4),), (("lane", 4),))
    rows = np.arange(4)
    hw, model = bitmaps.recover(cd, rows, rows ^ 1), bitmaps.recover(cd, rows, rows)
    rec = {"status": "fail"}
    sentence = bitmaps.record_maps(rec, "D", hw, model, "4 of 4 elsewhere")
    assert list(rec) == ["status", "hardware_map", "model_map", "roles"]
    assert rec["hardware_map"] == hw.as_dict() and rec["model_map"] == model.as_dict()
    assert rec["roles"] == ["lane bit 0 comes from row bit 0 ^ 1; the model takes it from row bit 0"]
    assert sentence == ("D: the hardware's map is lane bit 0 = row bit 0 ^ 1; the model's is lane bit 0 = row bit 0 "
                        "(4 of 4 elsewhere)")
    rec = {}
    sentence = bitmaps.record_maps(rec, "D", None, model, "4 of 4 elsewhere", unnamed="no cell names an element")
    assert rec == {"hardware_map": None, "model_map": None, "roles": []}
    assert sentence == "D: no cell names an element (4 of 4 elsewhere)"
