"""harness.api against values worked by hand from the PTX ISA's field tables and layouts, CuTe DSL's own tiles where
it applies, and negative cases: every function must refuse what the spec forbids and name the field that
disagrees."""
import numpy as np
import pytest

from harness import api
from harness.spec import cute_layout


# ---------------------------------------------------------------------------------------------------- descriptors

def test_wgmma_descriptor_encodes_the_hand_worked_value():
    # start 1024 >> 4 = 0x40 in bits 0-13, LBO 16 >> 4 = 1 in bits 16-29, SBO 1024 >> 4 = 0x40 in bits 32-45,
    # 128B swizzle = 1 in bits 62-63
    d = api.SmemDescriptor("sm_90a", start=1024, lbo=16, sbo=1024, swizzle="128B")
    assert api.encode_smem_descriptor(d) == 0x4000_0040_0001_0040
    dec = api.decode_smem_descriptor("0x4000004000010040", "sm_90a")
    assert dec.ok and dec.fields["start_address"] == 1024 and dec.fields["stride_byte_offset"] == 1024
    assert dec.fields["swizzle"] == "128B"


def test_tcgen05_descriptor_carries_the_version_bits():
    # as above, but 128B is code 2 in bits 61-63 and bits 46-48 are fixed to 0b001
    d = api.SmemDescriptor("sm_100a", start=1024, lbo=16, sbo=1024, swizzle="128B")
    assert api.encode_smem_descriptor(d) == 0x4000_4040_0001_0040
    assert api.smem_descriptor_problems(0x4000_4040_0001_0040, "sm_100a") == ()
    # triton#8032: bit 46 missing
    probs = api.smem_descriptor_problems(0x4000_0040_0001_0040, "sm_100a")
    assert len(probs) == 1 and "bits 46-48" in probs[0]


@pytest.mark.parametrize("kwargs, rule", [
    (dict(start=8, lbo=16, sbo=16), "16-byte aligned"),
    (dict(start=0, lbo=16, sbo=1 << 18), "does not fit the 14-bit field"),
    (dict(start=0, lbo=16, sbo=16, base_offset=1), "no-swizzle"),
    (dict(start=0, lbo=16, sbo=16, swizzle="128B_base32b"), "wgmma swizzle must be one of"),
])
def test_a_wgmma_descriptor_the_spec_forbids_is_refused_naming_the_rule(kwargs, rule):
    with pytest.raises(api.DescriptorError, match=rule):
        api.encode_smem_descriptor(api.SmemDescriptor("sm_90a", **kwargs))


def test_the_descriptor_record_refuses_an_unknown_arch_and_absolute_lbo_on_sm90():
    with pytest.raises(api.DescriptorError, match="arch must be"):
        api.SmemDescriptor("sm_89", 0, 16, 16)
    with pytest.raises(api.DescriptorError, match="sm_103a"):
        api.SmemDescriptor("sm_90a", 0, 16, 16, "128B", lbo_mode="absolute")


def test_decoding_names_reserved_bits_on_wgmma():
    probs = api.decode_smem_descriptor(1 << 46, "sm_90a").problems
    assert probs == ("reserved bits set: 0x0000400000000000",)


def test_instruction_descriptor_hand_worked():
    # .kind::f16, f16 x f16 -> f32 (dtype code 1 in bits 4-5), N = 256 (256 >> 3 = 32 in bits 17-22),
    # M = 128 (128 >> 4 = 8 in bits 24-28)
    d = api.InstrDescriptor("f16", "f16", "f16", "f32", 128, 256)
    assert api.encode_instr_descriptor(d) == 0x0840_0010
    dec = api.decode_instr_descriptor(0x0840_0010, "f16")
    assert dec.ok and (dec.fields["m"], dec.fields["n"], dec.fields["dtype"]) == (128, 256, "f32")
    with pytest.raises(api.DescriptorError, match="N = 12 is not legal"):
        api.encode_instr_descriptor(api.InstrDescriptor("f16", "f16", "f16", "f32", 128, 12))
    # bit 6 is reserved
    assert any("reserved" in p for p in api.decode_instr_descriptor(0x0840_0050, "f16").problems)


def test_zero_column_mask_hand_worked():
    z = api.ZeroColumnMask(start_count=(1, 2, 3, 4), first_span=(1, 0, 0, 0), skip_span=2, use_span=3)
    assert api.encode_zero_column_mask(z) == 0x0003_0281_0403_0201
    assert api.decode_zero_column_mask("0x0003028104030201") == z
    # sub-mask 0 of M = 128: runs start with 1 (fs0), three 1s (skip 2 + 1), four 0s (use 3 + 1), the first
    # sc0 = 1 bit skipped: 1 1 0 0 0 0 1 | 1 1 0 0 0 0 1 1 1
    assert api.zero_columns(z, 128, 16) == [0, 1, 6, 7, 8, 13, 14, 15]
    with pytest.raises(api.DescriptorError, match="sc0"):
        api.encode_zero_column_mask(api.ZeroColumnMask(start_count=(256, 0, 0, 0)))


# ---------------------------------------------------------------------------------------------------- layouts

def test_canonical_layout_addresses_worked_by_hand():
    lay = api.canonical_layout("f16", "K", "128B", rows=16, cols=64)
    assert (lay.lbo, lay.sbo) == (16, 1024)  # packed: 8 rows of one 128-byte swizzle row each
    a = api.address_map(lay).address
    # (1, 0): row 1 at byte 128, its phase (128 >> 7) & 7 = 1 XORs chunk 0 to chunk 1: 144
    # (0, 8): chunk 1, phase 0: 16; (9, 0): 1024 + 128, phase 9 & 7 = 1: 1168
    assert (a[0, 0], a[1, 0], a[0, 8], a[9, 0]) == (0, 144, 16, 1168)


def test_cute_notation_worked_by_hand_and_evaluates_to_the_address_map():
    k = api.canonical_layout("f16", "K", "128B", rows=16, cols=64)
    assert api.cute_notation(k) == "Swizzle<3,4,3> o ((8,2),(8,8)):((64,512),(1,8))"
    mn = api.canonical_layout("f16", "MN", "128B", rows=128, cols=16)
    assert api.cute_notation(mn) == "Swizzle<3,4,3> o ((8,8,2),(8,2)):((1,8,512),(64,1024))"
    kn = api.canonical_layout("e4m3", "K", "none", rows=16, cols=32)  # T = 16; LBO 128, SBO 256 packed
    assert api.cute_notation(kn) == "Swizzle<0,4,3> o ((8,2),(16,2)):((16,256),(1,128))"
    for lay, ebytes in ((k, 2), (mn, 2), (kn, 1)):
        assert np.array_equal(cute_layout.spec_addresses(api.cute_notation(lay), ebytes),
                              api.address_map(lay).address)


@pytest.mark.parametrize("args, rule", [
    (("f16", "K", "128B", 12, 64), "core matrices of 8 rows"),
    (("f16", "K", "128B", 16, 128), "swizzle row holds 128"),
    (("f16", "diagonal", "128B", 16, 64), "major must be"),
    (("f17", "K", "128B", 16, 64), "unknown element type"),
])
def test_a_tile_the_descriptor_cannot_express_is_refused(args, rule):
    with pytest.raises(api.LayoutError, match=rule):
        api.canonical_layout(*args)


def test_overlapping_strides_are_refused():
    with pytest.raises(api.LayoutError, match="overlap"):
        api.canonical_layout("f16", "K", "none", rows=16, cols=16, lbo=128, sbo=128)


@pytest.mark.cute
@pytest.mark.parametrize("major, swizzle, dtype, rows, cols, strides", [
    ("K", "128B", "f16", 16, 64, None), ("K", "64B", "e4m3", 32, 64, None), ("MN", "128B", "bf16", 128, 16, None),
    ("MN", "32B", "s8", 64, 32, None),
    # CuTe tiles core matrices MN first (tile_to_shape's order): without swizzle SBO is then one core matrix
    # (128 B) and LBO two, the transpose of the packed strides' K-first order
    ("K", "none", "tf32", 16, 8, (256, 128))])
def test_canonical_layouts_equal_cute_dsl_tiles(major, swizzle, dtype, rows, cols, strides):
    import cute_oracle  # the DSL, at need (tests/test_cute_oracle.py says why)
    got = cute_oracle.smem_tiles([(major, swizzle, dtype, rows, cols)])[0]
    lbo, sbo = strides or (None, None)
    lay = api.canonical_layout(dtype, major, swizzle, rows, cols, lbo, sbo)
    assert np.array_equal(api.address_map(lay).address, got["address"]), got["atom"]


# ---------------------------------------------------------------------------------------------------- maps

def test_wgmma_accumulator_fragment_worked_by_hand():
    # PTX ISA figure for m64nNk* f32 D: thread t of warp 0 holds rows t/4 and t/4 + 8, columns 2(t%4), +1
    f = api.wgmma_fragment("D", "f32", n=8)
    assert list(zip(f.row[5], f.col[5])) == [(1, 2), (1, 3), (9, 2), (9, 3)]
    assert list(zip(f.row[32], f.col[32])) == [(16, 0), (16, 1), (24, 0), (24, 1)]  # warp 1 owns rows 16-31
    with pytest.raises(ValueError):
        api.wgmma_fragment("D", "f32")
    with pytest.raises(ValueError):
        api.wgmma_fragment("B", "f16")


def test_tmem_map_worked_by_hand():
    m64 = api.tmem_map(64, 64)  # data path F: 16 rows per lane quarter
    assert (m64.lane[16, 0], m64.column[16, 5]) == (32, 5)
    ws = api.tmem_map(64, 64, ws=True)  # E: the right half of N folds onto lanes 64-127
    assert (ws.lane[0, 32], ws.column[0, 32]) == (64, 0)
    pair = api.tmem_map(256, 64, cta_group=2)
    assert (pair.cta[130, 0], pair.lane[130, 0]) == (1, 2)
    with pytest.raises(api.DescriptorError, match="not a tcgen05.mma shape"):
        api.tmem_map(64, 12)


# ---------------------------------------------------------------------------------------------------- check_descriptor

B16 = api.canonical_layout("f16", "K", "128B", rows=16, cols=64)  # B of N = 16, or an N = 24 tile's first 16


def test_the_intended_descriptor_passes():
    v = api.encode_smem_descriptor(api.descriptor_for(B16, "sm_90a"))
    assert api.check_descriptor(v, B16, "sm_90a") == []
    # K-major swizzled layouts do not read LBO: another LBO is not a disagreement
    assert api.check_descriptor(v | (7 << 16), B16, "sm_90a") == []


def test_the_tilelang_sbo_bug_names_the_field_value_and_the_misread_bytes():
    bad = api.encode_smem_descriptor(api.SmemDescriptor("sm_90a", 0, 16, 512, "128B"))
    (f,) = api.check_descriptor(bad, B16, "sm_90a")
    # rows 8-15 (8 x 64 elements) sit at bytes 1024-2047; with SBO 512 they are read from 512-1535
    assert (f.field, f.got, f.want) == ("SBO", 512, 1024)
    assert f.message == ("SBO is 512, the layout needs 1024: rows 8-15 (512 of 1024 elements) would be read "
                         "from bytes 512-1535 instead of 1024-2047")


def test_each_disagreeing_field_is_one_finding():
    kn = api.canonical_layout("f16", "K", "none", rows=16, cols=16)  # LBO 128, SBO 256: both read
    v = api.encode_smem_descriptor(api.SmemDescriptor("sm_90a", 0, 256, 128))  # LBO and SBO swapped
    assert [(f.field, f.got, f.want) for f in api.check_descriptor(v, kn, "sm_90a")] == [
        ("LBO", 256, 128), ("SBO", 128, 256)]
    v = api.encode_smem_descriptor(api.SmemDescriptor("sm_90a", 0, 16, 1024, "64B"))
    (f,) = api.check_descriptor(v, B16, "sm_90a")
    assert (f.field, f.got, f.want) == ("swizzle", "64B", "128B") and "would be read from" in f.message
    v = api.encode_smem_descriptor(api.SmemDescriptor("sm_90a", 2048, 16, 1024, "128B"))
    assert [f.field for f in api.check_descriptor(v, B16, "sm_90a")] == ["start address"]


def test_tcgen05_missing_version_bit_is_a_rule_finding():
    v = api.encode_smem_descriptor(api.descriptor_for(B16, "sm_100a"))
    assert api.check_descriptor(v, B16, "sm_100a") == []
    (f,) = api.check_descriptor(v & ~(1 << 46), B16, "sm_100a")
    assert f.field == "rule" and "bits 46-48" in f.message


def test_an_intended_layout_that_is_not_canonical_is_refused():
    with pytest.raises(api.LayoutError):
        api.check_descriptor(0, api.SmemLayout("K", "128B", "f16", 12, 64, 16, 1024), "sm_90a")


def test_all_names_exist():
    assert all(hasattr(api, n) for n in api.__all__)


@pytest.mark.parametrize("dtype", ["f16", "e4m3", "tf32", "e2m1"])
@pytest.mark.parametrize("swizzle", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("major", ["K", "MN"])
def test_the_misread_model_is_the_layout_model_on_canonical_tiles(major, swizzle, dtype):
    """check_descriptor reads a wrong field's tile with its own copy of the address formulas (one that a tile
    the canonical rules refuse still reads through): on every canonical tile it must be the layout model."""
    from harness.spec import layouts
    T = 128 // {"f16": 16, "e4m3": 8, "tf32": 32, "e2m1": 4}[dtype]
    rows, cols = (16, T) if major == "K" else (2 * T, 16)
    lay = api.canonical_layout(dtype, major, swizzle, rows, cols, start=2048)
    assert np.array_equal(api._read_addresses(lay), layouts.smem_address(lay))


def test_an_absolute_lbo_value_is_named_not_checked_in_silence():
    v = api.encode_smem_descriptor(api.SmemDescriptor("sm_103a", 0, 2048, 1024, "128B", lbo_mode="absolute"))
    fs = api.check_descriptor(v, B16, "sm_103a")
    assert [f.field for f in fs] == ["LBO mode"] and "not checked" in fs[0].message


def test_what_the_cli_commands_need_besides():
    # a value the rules refuse still has fields: f16 M = 128 (8 << 24), N = 12 (12 >> 3 = 1 << 17), f32 (1 << 4)
    assert api.pack_instr_descriptor(api.InstrDescriptor("f16", "f16", "f16", "f32", 128, 12)) == 0x0802_0010
    assert api.zero_mask_legal_n(32) == [64, 128, 256]  # M = 32 is .ws only: N 64, 128, 256, four sub-masks
    assert api.zero_mask_legal_n(128) == list(range(8, 257, 8))
    with pytest.raises(api.DescriptorError):
        api.zero_mask_legal_n(16)
    m = api.address_map(B16)  # 16 rows of 128 bytes from byte 0
    assert m.footprint == (0, 2048) and (m.chunk == m.address >> 4).all()


# ---------------------------------------------------------------------------------------------------- validate

def test_validate_smem_descriptor_decodes_what_encodes_and_names_the_rule_of_what_does_not():
    ok = api.validate_smem_descriptor(api.SmemDescriptor("sm_90a", 1024, 16, 1024, "128B"))
    assert (ok.value, ok.problems, ok.refused) == ("0x4000004000010040", (), False)
    bad = api.validate_smem_descriptor(api.SmemDescriptor("sm_90a", 8, 16, 16))  # start not a multiple of 16
    assert bad.refused and bad.value is None and not bad.ok and "16-byte aligned" in bad.problems[0]
    assert bad.fields == {"start_address": 8, "leading_byte_offset": 16, "stride_byte_offset": 16, "base_offset": 0,
                          "swizzle": "none"}
    bad = api.validate_smem_descriptor(api.SmemDescriptor("sm_100a", 0, 4096, 1024, "128B", lbo_mode="absolute"))
    assert bad.refused and bad.fields["lbo_mode"] == "absolute" and "sm_103a only" in bad.problems[0]


def test_the_operand_rule_ties_an_mn_major_tf32_descriptor_to_the_32_byte_atomicity_swizzle():
    d = api.SmemDescriptor("sm_100a", 0, 16, 1024, "128B")
    (why,) = api.validate_smem_descriptor(d, "tf32", "MN").problems
    assert "needs swizzle 128B_base32b, not 128B" in why
    assert api.validate_smem_descriptor(d, "tf32").ok and api.validate_smem_descriptor(d, "f16", "MN").ok
    v = api.encode_smem_descriptor(api.SmemDescriptor("sm_100a", 0, 16, 1024, "128B_base32b"))
    assert api.decode_smem_descriptor(v, "sm_100a", "tf32", "MN").ok
    with pytest.raises(api.DescriptorError, match="not an sm_90a operand"):
        api.decode_smem_descriptor(0, "sm_90a", "tf32")
    with pytest.raises(api.DescriptorError, match="give the kind too"):
        api.validate_smem_descriptor(d, major="MN")


def test_validate_instr_descriptor_keeps_what_a_refused_descriptor_packs_to():
    ok = api.validate_instr_descriptor(api.InstrDescriptor("f16", "f16", "f16", "f32", 128, 256))
    assert ok == api.decode_instr_descriptor(0x0840_0010, "f16", 1, False) and not ok.refused
    bad = api.validate_instr_descriptor(api.InstrDescriptor("f16", "f16", "f16", "f32", 128, 12))
    assert bad.refused and bad.value == "0x08020010" and bad.fields["n"] == 12  # pack_instr_descriptor's value
    assert bad.problems == ("N = 12 is not legal for .kind::f16 cta_group::1 M = 128; legal N: 8..256 step 8",)
    bad = api.validate_instr_descriptor(api.InstrDescriptor("f16", "zz", "f16", "f32", 128, 64))
    assert bad.refused and bad.value is None and "not 'zz'" in bad.problems[0]  # no code for zz: nothing packs


def test_the_operands_swizzles_are_checked_against_the_transpose_bits():
    d = api.InstrDescriptor("tf32", "tf32", "tf32", "f32", 128, 64, transpose_b=True)  # B MN-major, A K-major
    (why,) = api.validate_instr_descriptor(d, swizzle_a="128B", swizzle_b="128B").problems
    assert "operand B needs swizzle 128B_base32b" in why
    assert api.validate_instr_descriptor(d, swizzle_a="128B", swizzle_b="128B_base32b").ok
    with pytest.raises(api.DescriptorError, match="unknown swizzle"):
        api.decode_instr_descriptor(0x0811_0910, "tf32", swizzle_a="256B")


def test_the_default_accumulator_is_f32_where_the_kind_has_it():
    assert [api.default_accumulator_dtype(k) for k in ("f16", "tf32", "f8f6f4", "i8", "mxf4")] == [
        "f32", "f32", "f32", "s32", "f32"]
    with pytest.raises(api.DescriptorError, match="unknown kind"):
        api.default_accumulator_dtype("f64")


def test_a_tile_larger_than_shared_memory_is_refused_before_its_strides_are_checked():
    with pytest.raises(api.LayoutError, match="larger than shared memory"):  # 4 MiB, and overlapping strides
        api.canonical_layout("f32", "K", "none", 1024, 1024, lbo=16, sbo=16)


def test_mn_major_32_byte_atomicity_cute_notation_steps_sbo_every_4_k_rows():
    lay = api.canonical_layout("tf32", "MN", "128B_base32b", 32, 16)  # packed: LBO = SBO = 512 (4 rows of 128 B)
    m = api.address_map(lay)
    assert m.cute == api.cute_notation(lay) == "Swizzle<2,5,2> o ((4,8),(4,4)):((1,4),(32,128))"
    # k = 1: row 1 of the atom at byte 128, whose bits 7-8 (1) swizzle bits 5-6: 160; k = 8: third atom, 2 * SBO
    assert (m.address[0, 1], m.address[0, 4], m.address[0, 8]) == (160, 512, 1024)
    for dtype, rows, cols in (("tf32", 32, 16), ("f16", 64, 16), ("e4m3", 256, 8)):
        for wide in (False, True):
            lay = api.canonical_layout(dtype, "MN", "128B_base32b", rows, cols)
            if wide:
                lay = api.canonical_layout(dtype, "MN", "128B_base32b", rows, cols, lay.lbo * 2, lay.sbo * 2)
            assert np.array_equal(cute_layout.spec_addresses(api.cute_notation(lay), lay.bits // 8),
                                  api.address_map(lay).address), lay


def test_a_tile_cute_cannot_write_as_a_product_still_has_its_address_map():
    lay = api.canonical_layout("f16", "MN", "128B", 72, 16)  # 9 chunks along MN: one swizzle row and one more
    with pytest.raises(api.LayoutError, match="not a whole number"):
        api.cute_notation(lay)
    m = api.address_map(lay)
    assert m.cute == "" and m.address.shape == (72, 16) and m.address[64, 0] == lay.lbo  # chunk 8: the next LBO
