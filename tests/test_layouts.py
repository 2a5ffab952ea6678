"""Properties of the canonical layout model, independent of any worked example."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.spec import layouts
from harness.spec.layouts import LayoutError, SmemLayout

DTYPES = {"b1": 1, "e2m1": 4, "e4m3": 8, "f16": 16, "tf32": 32}
SW = layouts.SWIZZLES


def packed(major, sw, dtype, rows, cols, start=0):
    lbo, sbo = layouts.packed_strides(major, sw, dtype, rows, cols)
    return SmemLayout(major, sw, dtype, rows, cols, lbo, sbo, start)


def tile_shape(major, sw, dtype, rows_groups=2):
    T = 128 // DTYPES[dtype]
    W = layouts.SWIZZLE_ROW_BYTES[sw] // 16
    if major == "K":
        return 8 * rows_groups, T * (W if sw != "none" else 2)
    return T * W * rows_groups, 16


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("sw", SW)
@pytest.mark.parametrize("major", ["K", "MN"])
def test_packed_tile_is_a_bijection_onto_whole_16_byte_chunks(major, sw, dtype):
    rows, cols = tile_shape(major, sw, dtype)
    lay = packed(major, sw, dtype, rows, cols)
    bits = layouts.element_bit_addresses(lay)
    assert np.unique(bits).size == bits.size  # injective
    lo, hi = layouts.footprint(lay)
    assert hi - lo == rows * cols * DTYPES[dtype] // 8  # dense: onto the footprint
    T = 128 // DTYPES[dtype]
    chunks = bits >> 7
    # every chunk holds exactly T elements that are consecutive along the contiguous dimension
    if major == "K":
        grouped = chunks.reshape(rows, cols // T, T)
    else:
        grouped = chunks.T.reshape(cols, rows // T, T)
    assert (grouped == grouped[..., :1]).all()
    assert np.unique(grouped[..., 0]).size == grouped[..., 0].size


@settings(max_examples=150, deadline=None)
@given(major=st.sampled_from(["K", "MN"]), sw=st.sampled_from(SW), dtype=st.sampled_from(list(DTYPES)),
       groups=st.integers(1, 3), pad_l=st.integers(0, 6), pad_s=st.integers(0, 6),
       start=st.integers(0, 64), base=st.integers(0, 7), seed=st.integers(0, 2 ** 31))
def test_write_then_read_round_trips(major, sw, dtype, groups, pad_l, pad_s, start, base, seed):
    rows, cols = tile_shape(major, sw, dtype, groups)
    lay = packed(major, sw, dtype, rows, cols, start * 16)
    lay = lay.moved(lbo=lay.lbo + 16 * pad_l * (sw == "none" or major == "MN"), sbo=lay.sbo + 128 * pad_s,
                    base_offset=base if sw != "none" else 0)
    if not layouts.is_distinct(lay):
        with pytest.raises(LayoutError, match="overlap"):
            layouts.check_distinct(lay)
        return
    rng = np.random.default_rng(seed)
    vals = rng.integers(0, 1 << DTYPES[dtype], size=(rows, cols)).astype(np.uint64)
    img = np.zeros(layouts.footprint(lay)[1] + 64, np.uint8)
    layouts.write_image(lay, vals, img)
    assert np.array_equal(layouts.read_image(lay, img), vals)


@settings(max_examples=150, deadline=None)
@given(major=st.sampled_from(["K", "MN"]), sw=st.sampled_from(SW), dtype=st.sampled_from(list(DTYPES)),
       groups=st.integers(1, 3), pad_s=st.integers(0, 6), start=st.integers(0, 64), seed=st.integers(0, 2 ** 31))
def test_whole_tile_writes_and_reads_agree_with_element_by_element_ones(major, sw, dtype, groups, pad_s, start,
                                                                        seed):
    """write_image / read_image take shortcuts (whole words; sub-byte bytes merged by sums): over an image of junk
    they must change and read exactly the bytes the element-by-element write (write_bits, ufunc.at) and a
    little-endian read of each element's own bytes do."""
    rows, cols = tile_shape(major, sw, dtype, groups)
    lay = packed(major, sw, dtype, rows, cols, start * 16)
    lay = lay.moved(sbo=lay.sbo + 128 * pad_s)
    if not layouts.is_distinct(lay):
        return
    rng = np.random.default_rng(seed)
    bits = DTYPES[dtype]
    vals = rng.integers(0, 1 << bits, size=(rows, cols)).astype(np.uint64)
    junk = rng.integers(0, 256, size=layouts.footprint(lay)[1] + 64, dtype=np.uint8)
    fast, slow = junk.copy(), junk.copy()
    layouts.write_image(lay, vals, fast)
    addr = layouts.element_bit_addresses(lay)
    layouts.write_bits(slow, addr, vals, bits)  # disjoint=False: one element at a time
    assert np.array_equal(fast, slow)
    byte = (addr >> 3)[..., None] + np.arange(max(1, bits // 8))  # each element's own bytes, low first
    word = (junk[byte].astype(np.uint64) << (8 * np.arange(byte.shape[-1], dtype=np.uint64))).sum(axis=-1)
    expected = (word >> (addr & 7).astype(np.uint64)) & np.uint64((1 << bits) - 1)
    assert np.array_equal(layouts.read_image(lay, junk), expected)


@pytest.mark.parametrize("sw", ["32B", "64B", "128B"])
@pytest.mark.parametrize("major", ["K", "MN"])
def test_base_offset_anchors_the_pattern_at_the_start(major, sw):
    """The spec: base offset = (pattern start >> 7) & 7 when the pattern does not start on its boundary.
    In the model that makes a tile starting at P swizzle exactly like the same tile starting at 0."""
    rows, cols = tile_shape(major, sw, "f16")
    ref = layouts.smem_address(packed(major, sw, "f16", rows, cols))
    for p in range(128, layouts.PATTERN_BYTES[sw], 128):
        bo = (p >> 7) & 7
        moved = layouts.smem_address(packed(major, sw, "f16", rows, cols, p).moved(base_offset=bo))
        assert np.array_equal(moved - p, ref)
        # without the base offset the pattern stays anchored to address bits: a different relative layout
        unanchored = layouts.smem_address(packed(major, sw, "f16", rows, cols, p))
        assert not np.array_equal(unanchored - p, ref)


@pytest.mark.parametrize("sw", ["64B", "128B"])
def test_k_step_inside_a_swizzle_atom_reads_the_next_columns(sw):
    """Production kernels advance the descriptor start by 32 bytes per K-step inside a swizzle row."""
    width = layouts.SWIZZLE_ROW_BYTES[sw] // 2  # f16 elements per swizzle row
    full = layouts.smem_address(packed("K", sw, "f16", 64, width))
    for step in range(width // 16):
        part = packed("K", sw, "f16", 64, 16, start=32 * step)
        assert np.array_equal(layouts.smem_address(part), full[:, 16 * step:16 * step + 16])


def test_swizzle_is_the_documented_xor():
    # 128B: address bits 7-9 XOR into bits 4-6
    assert layouts.swizzle_address(np.array([0x80]), "128B") == 0x90
    assert layouts.swizzle_address(np.array([0x380 + 0x10]), "128B") == 0x380 + 0x60
    assert layouts.swizzle_address(np.array([0x180]), "64B") == 0x1B0
    assert layouts.swizzle_address(np.array([0x80]), "32B") == 0x90
    assert layouts.swizzle_address(np.array([0x100]), "32B") == 0x100  # bit 8 is outside 32B's mask


@pytest.mark.parametrize("bad,msg", [
    (dict(lbo=8), "lbo = 8 must be a non-negative multiple of 16"),
    (dict(start=24), "start = 24"),
    (dict(base_offset=9), "base offset 9"),
    (dict(rows=12), "core matrices of 8 rows"),
    (dict(cols=36), "whole number of 16-byte chunks"),
    (dict(swizzle="16B"), "unknown swizzle"),
    (dict(major="X"), "major must be K or MN"),
])
def test_invalid_layouts_are_refused(bad, msg):
    base = dict(major="K", swizzle="128B", dtype="f16", rows=64, cols=64, lbo=16, sbo=1024)
    base.update(bad)
    with pytest.raises(LayoutError, match=msg):
        layouts.validate(SmemLayout(**base))


def test_base_offset_without_swizzle_is_refused():
    with pytest.raises(LayoutError, match="not valid with no swizzle"):
        layouts.validate(SmemLayout("K", "none", "f16", 8, 16, 128, 256, 0, 1))


def test_wide_k_major_swizzled_tile_is_refused():
    with pytest.raises(LayoutError, match="128 bytes wide along K but one swizzle row holds 64 bytes"):
        layouts.validate(SmemLayout("K", "64B", "f16", 8, 64, 16, 512))


def test_overlapping_strides_are_refused_on_write():
    lay = SmemLayout("K", "none", "f16", 16, 16, 128, 64)  # second 8-row group lands inside the first
    with pytest.raises(LayoutError, match="overlap"):
        layouts.write_image(lay, np.zeros((16, 16), np.uint64), np.zeros(1024, np.uint8))


def test_sub_byte_elements_share_bytes_low_bits_first():
    lay = SmemLayout("K", "none", "e2m1", 8, 32, 128, 256)
    bits = layouts.element_bit_addresses(lay)
    assert bits[0, 0] == 0 and bits[0, 1] == 4 and bits[0, 2] == 8


@settings(max_examples=300, deadline=None)
@given(major=st.sampled_from(["K", "MN", "X"]), sw=st.sampled_from(list(layouts.SWIZZLE_BMS) + ["16B"]),
       dtype=st.sampled_from(["f16", "tf32", "e4m3", "e2m1", "e2m3", "b1", "f12"]), rows=st.integers(-8, 300),
       cols=st.integers(-8, 300), lbo=st.integers(-32, 5000), sbo=st.integers(-32, 5000),
       start=st.integers(-32, 5000), base=st.integers(-1, 8))
def test_layout_api_either_works_or_raises_a_clear_error(major, sw, dtype, rows, cols, lbo, sbo, start, base):
    lay = SmemLayout(major, sw, dtype, rows, cols, lbo, sbo, start, base)
    try:
        layouts.validate(lay)
    except (LayoutError, ValueError) as e:  # ValueError: unknown element type, from dtypes.get
        assert str(e)
        return
    if rows * cols > 20000:
        return
    addr = layouts.smem_address(lay)
    assert addr.shape == (rows, cols) and (addr >= 0).all()
