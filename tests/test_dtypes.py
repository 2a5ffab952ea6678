import numpy as np
import pytest

from harness.spec import dtypes


@pytest.mark.parametrize("name", ["f16", "bf16", "tf32", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "f32"])
def test_float_round_trip_of_representable_values(name):
    t = dtypes.get(name)
    v = np.array([0.0, 1.0, -1.0, 0.5, -2.0, 3.0, 1.5])
    assert np.array_equal(t.from_bits(t.to_bits(v)), v)
    assert int(t.to_bits(np.array([1.0]))[0]) < (1 << t.bits)


@pytest.mark.parametrize("name,bits,ptx", [("f16", 16, ".f16"), ("bf16", 16, ".bf16"), ("tf32", 32, ".tf32"),
                                           ("e4m3", 8, ".e4m3"), ("e5m2", 8, ".e5m2"), ("e2m3", 6, ".e2m3"),
                                           ("e3m2", 6, ".e3m2"), ("e2m1", 4, ".e2m1"), ("s8", 8, ".s8"),
                                           ("u8", 8, ".u8"), ("b1", 1, ".b1"), ("f32", 32, ".f32"),
                                           ("s32", 32, ".s32"), ("f16x2", 32, ".f16x2")])
def test_widths_and_ptx_spelling(name, bits, ptx):
    t = dtypes.get(name)
    assert (t.bits, t.ptx) == (bits, ptx)


def test_known_encodings():
    assert int(dtypes.get("f16").to_bits([1.0])[0]) == 0x3C00
    assert int(dtypes.get("bf16").to_bits([1.0])[0]) == 0x3F80
    assert int(dtypes.get("e4m3").to_bits([1.0])[0]) == 0x38
    assert int(dtypes.get("e5m2").to_bits([1.0])[0]) == 0x3C
    assert int(dtypes.get("e2m1").to_bits([1.0])[0]) == 0x2
    assert int(dtypes.get("s8").to_bits([-1])[0]) == 0xFF


def test_tf32_ignores_low_13_mantissa_bits():
    t = dtypes.get("tf32")
    one = 0x3F800000
    assert t.from_bits(np.array([one | 0x1FFF], np.uint64))[0] == 1.0
    assert t.from_bits(np.array([one | 0x2000], np.uint64))[0] != 1.0  # bit 13 is a real mantissa bit
    assert int(t.to_bits([1.0 + 2 ** -12])[0]) & 0x1FFF == 0


def test_integer_ranges_and_sign():
    s8, u8 = dtypes.get("s8"), dtypes.get("u8")
    assert s8.int_range() == (-128, 127) and u8.int_range() == (0, 255)
    assert list(s8.from_bits(np.array([0x80, 0x7F], np.uint64))) == [-128, 127]
    with pytest.raises(ValueError):
        s8.to_bits([128])


def test_f16x2_packs_low_half_first():
    t = dtypes.get("f16x2")
    b = t.to_bits(np.array([[1.0, 2.0]]))
    assert int(b[0]) == 0x4000_3C00
    assert t.from_bits(b).tolist() == [[1.0, 2.0]]


def test_unknown_type_is_one_clear_error():
    with pytest.raises(ValueError, match="unknown element type 'f12'"):
        dtypes.get("f12")


@pytest.mark.parametrize("lo, hi, k", [(-128, 128, 32), (0, 2, 256), (-(1 << 20), 1 << 20, 16), (-(1 << 26), 1 << 26, 8)])
def test_exact_integer_matmul_is_the_int64_product(lo, hi, k):
    """Through float64 BLAS only where every partial sum is an exact integer (the last row is beyond 2**53: int64)."""
    rng = np.random.default_rng(k)
    a, b = rng.integers(lo, hi, (64, k)), rng.integers(lo, hi, (40, k))
    want = a.astype(np.int64) @ b.astype(np.int64).T
    got = dtypes.exact_integer_matmul(a, b)
    assert got.dtype == np.int64 and (got == want).all()


@pytest.mark.parametrize("name", sorted(dtypes.TYPES))
def test_encoded_is_the_encoding_and_what_it_decodes_to(name):
    """encoded(v) == (to_bits(v), from_bits(to_bits(v))) to the bit, NaN, infinities, -0.0, ties and overflow
    included; `native` gives the same numbers in the container's own width (a float that fills it)."""
    t = dtypes.get(name)
    if t.kind in ("int", "uint", "bits"):
        lo, hi = t.int_range()
        v = np.arange(lo, hi + 1, max(1, (hi - lo) // 97))
    else:
        rng = np.random.default_rng(len(name))
        v = np.concatenate([rng.standard_normal(500) * 10.0 ** rng.integers(-8, 8, 500),
                            [0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 2.0 ** -149, 1 + 2.0 ** -11]])
        if name == "f16x2":
            v = v[: len(v) // 2 * 2].reshape(-1, 2)
    with np.errstate(all="ignore"):
        want_bits = t.to_bits(v)
        want_values = t.from_bits(want_bits)
        for native in (False, True):
            bits, values = t.encoded(v, native=native)
            assert np.array_equal(bits.astype(np.uint64), want_bits)
            assert np.array_equal(values.view(np.uint64) if values.dtype == np.float64 else values,
                                  want_values.view(np.uint64) if want_values.dtype == np.float64 else want_values)
            assert bits.dtype == np.uint64 or (native and t.full_container() is not None)
