import pytest
from hypothesis import given, settings, strategies as st

from harness.spec import desc_tcgen05, desc_wgmma, descriptors, idesc, zero_mask
from harness.spec.descriptors import DescriptorError

addr = st.integers(0, (1 << 14) - 1).map(lambda x: x << 4)


# ------------------------------------------------------------------ wgmma (sm_90a)

@settings(max_examples=300, deadline=None)
@given(start=addr, lbo=addr, sbo=addr, sw=st.sampled_from(list(desc_wgmma.WGMMA_SWIZZLE_CODE)), base=st.integers(0, 7))
def test_wgmma_desc_round_trip(start, lbo, sbo, sw, base):
    if sw == "none":
        base = 0
    v = desc_wgmma.encode_wgmma_desc(start, lbo, sbo, sw, base)
    info = desc_wgmma.decode_wgmma_desc(v)
    assert info["fields"] == {"start_address": start, "leading_byte_offset": lbo, "stride_byte_offset": sbo,
                              "base_offset": base, "swizzle": sw}
    assert info["problems"] == []


def test_wgmma_desc_bit_positions():
    v = desc_wgmma.encode_wgmma_desc(0x3FFF0, 0x10, 0x20, "32B", 5)
    assert v & 0x3FFF == 0x3FFF
    assert (v >> 16) & 0x3FFF == 1 and (v >> 32) & 0x3FFF == 2
    assert (v >> 49) & 7 == 5 and v >> 62 == 3
    assert desc_wgmma.WGMMA_SWIZZLE_CODE == {"none": 0, "128B": 1, "64B": 2, "32B": 3}


@pytest.mark.parametrize("kw,msg", [
    (dict(start=8), "not 16-byte aligned"),
    (dict(lbo=1 << 18), "does not fit the 14-bit field"),
    (dict(sbo=-16), "non-negative"),
    (dict(base_offset=8), "3-bit field"),
    (dict(swizzle="16B"), "wgmma swizzle must be"),
    (dict(swizzle="none", base_offset=1), "except no-swizzle"),
    (dict(swizzle="128B_base32b"), "wgmma swizzle must be"),
])
def test_wgmma_desc_refuses_each_bad_field(kw, msg):
    args = dict(start=0, lbo=16, sbo=1024, swizzle="128B", base_offset=0)
    args.update(kw)
    with pytest.raises(DescriptorError, match=msg):
        desc_wgmma.encode_wgmma_desc(**args)


def test_wgmma_decode_reports_reserved_bits():
    info = desc_wgmma.decode_wgmma_desc(1 << 47)
    assert any("reserved" in p for p in info["problems"])


def test_expected_base_offset_formula():
    assert descriptors.expected_base_offset(1024 * 3, "128B") == 0
    assert descriptors.expected_base_offset(1024 + 384, "128B") == (1408 >> 7) & 7 == 3
    assert descriptors.expected_base_offset(512, "64B") == 0 and descriptors.expected_base_offset(256 + 128, "32B") == 3


# ------------------------------------------------------------------ tcgen05 smem descriptor

@settings(max_examples=300, deadline=None)
@given(start=addr, lbo=addr, sbo=addr, sw=st.sampled_from(list(desc_tcgen05.TCGEN05_SWIZZLE_CODE)), base=st.integers(0, 7))
def test_tcgen05_desc_round_trip(start, lbo, sbo, sw, base):
    v = desc_tcgen05.encode_tcgen05_smem_desc(start, lbo, sbo, sw, base)
    assert (v >> 46) & 7 == 0b001 and (v >> 53) & 0xFF == 0
    info = desc_tcgen05.decode_tcgen05_smem_desc(v)
    f = info["fields"]
    assert (f["start_address"], f["leading_byte_offset"], f["stride_byte_offset"]) == (start, lbo, sbo)
    assert (f["swizzle"], f["base_offset"], f["lbo_mode"], f["version"]) == (sw, base, "relative", 1)
    assert info["problems"] == []


def test_tcgen05_swizzle_codes_and_invalid_values():
    assert desc_tcgen05.TCGEN05_SWIZZLE_CODE == {"none": 0, "128B_base32b": 1, "128B": 2, "64B": 4, "32B": 6}
    good = desc_tcgen05.encode_tcgen05_smem_desc(0, 16, 1024, "128B")
    for code in (3, 5, 7):
        bad = (good & ~(7 << 61)) | code << 61
        assert any(f"swizzle code {code} is invalid" in p for p in desc_tcgen05.decode_tcgen05_smem_desc(bad)["problems"])


def test_tcgen05_fixed_bits_are_checked_on_decode():
    good = desc_tcgen05.encode_tcgen05_smem_desc(0, 16, 1024, "128B")
    assert any("0b001" in p for p in desc_tcgen05.decode_tcgen05_smem_desc(good & ~(1 << 46))["problems"])
    assert any("fixed-zero" in p for p in desc_tcgen05.decode_tcgen05_smem_desc(good | 1 << 55)["problems"])


def test_absolute_lbo_mode_and_its_three_restrictions():
    v = desc_tcgen05.encode_tcgen05_smem_desc(1024, 4096, 1024, "128B", 0, "absolute", "sm_103a")
    assert (v >> 52) & 1 == 1
    assert desc_tcgen05.decode_tcgen05_smem_desc(v, "sm_103a")["fields"]["leading_byte_address"] == 4096
    with pytest.raises(DescriptorError, match="sm_103a only"):
        desc_tcgen05.encode_tcgen05_smem_desc(1024, 4096, 1024, "128B", 0, "absolute", "sm_100a")
    with pytest.raises(DescriptorError, match="only 128B swizzle"):
        desc_tcgen05.encode_tcgen05_smem_desc(1024, 4096, 1024, "64B", 0, "absolute", "sm_103a")
    with pytest.raises(DescriptorError, match="base offset 0"):
        desc_tcgen05.encode_tcgen05_smem_desc(1024, 4096, 1024, "128B", 2, "absolute", "sm_103a")
    # K-major only: the transpose bits of the instruction descriptor must be 0
    with pytest.raises(DescriptorError, match="K-major"):
        idesc.check_absolute_lbo_with_idesc(v, idesc.InstrDescriptor("f16", "f16", "f16", "f32", 128, 64, transpose_b=True))
    idesc.check_absolute_lbo_with_idesc(v, idesc.InstrDescriptor("f16", "f16", "f16", "f32", 128, 64))
    assert any("sm_103a only" in p for p in desc_tcgen05.decode_tcgen05_smem_desc(v, "sm_100a")["problems"])


# ------------------------------------------------------------------ instruction descriptor

KIND_TYPES = {
    "tf32": (["tf32"], ["f32"]), "f16": (["f16", "bf16"], ["f16", "f32"]),
    "f8f6f4": (["e4m3", "e5m2", "e2m3", "e3m2", "e2m1"], ["f16", "f32"]), "i8": (["u8", "s8"], ["s32"]),
    "mxf8f6f4": (["e4m3", "e5m2", "e2m3", "e3m2", "e2m1"], ["f32"]), "mxf4": (["e2m1"], ["f32"]),
    "mxf4nvf4": (["e2m1"], ["f32"]),
}


def _pairs(kind):
    ts, ds = KIND_TYPES[kind]
    for a in ts:
        for b in ts:
            for d in ds:
                if kind == "f16" and (a != b or (d == "f16" and a != "f16")):
                    continue
                yield a, b, d


@pytest.mark.parametrize("kind", idesc.KINDS)
def test_idesc_round_trip_every_type_pairing_and_shape(kind):
    for a, b, d in _pairs(kind):
        for cg in (1, 2):
            tb = kind not in ("mxf4", "mxf4nvf4") and b not in idesc.SUBBYTE_TYPES  # 4/6-bit: K-major only
            for m, ns in idesc.legal_shapes(kind, cg, transpose_b=tb).items():
                for n in (ns[0], ns[len(ns) // 2], ns[-1]):
                    desc = idesc.InstrDescriptor(kind, a, b, d, m, n, cta_group=cg,
                                             negate_a=kind != "i8", transpose_b=tb)
                    info = idesc.decode_idesc(idesc.encode_idesc(desc), kind)
                    f = info["fields"]
                    assert (f["atype"], f["btype"], f["dtype"], f["m"], f["n"]) == (a, b, d, m, n), info
                    assert f["negate_a"] == desc.negate_a and f["transpose_b"] == desc.transpose_b
                    assert info["problems"] == [], info


def test_idesc_bit_positions_for_f16():
    v = idesc.encode_idesc(idesc.InstrDescriptor("f16", "bf16", "bf16", "f32", 128, 256, transpose_a=True, negate_b=True))
    assert (v >> 4) & 3 == 1 and (v >> 7) & 7 == 1 and (v >> 10) & 7 == 1
    assert (v >> 14) & 1 and (v >> 15) & 1 and not (v >> 16) & 1
    assert (v >> 17) & 0x3F == 256 >> 3 and (v >> 24) & 0x1F == 128 >> 4


def test_idesc_block_scaled_fields():
    v = idesc.encode_idesc(idesc.InstrDescriptor("mxf8f6f4", "e2m1", "e4m3", "f32", 128, 64, a_sf_id=3, b_sf_id=2))
    assert (v >> 4) & 3 == 2 and (v >> 29) & 3 == 3 and (v >> 23) & 1 == 1 and (v >> 27) & 3 == 1
    v = idesc.encode_idesc(idesc.InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", "f32", 256, 128, scale_type="ue4m3",
                                         k96=True, cta_group=2))
    assert (v >> 23) & 1 == 0 and v >> 31 == 1 and (v >> 27) & 3 == 2


@pytest.mark.parametrize("kw,msg", [
    (dict(m=96), "M = 96 is not legal"),
    (dict(n=12), "N = 12 is not legal"),
    (dict(atype="e4m3"), "takes atype"),
    (dict(dtype="s32"), "accumulates into"),
    (dict(saturate=True), "for .kind::i8 only"),
    (dict(max_shift=1), "applies to .ws only"),
    (dict(a_sf_id=1), "block-scaled kinds"),
    (dict(kind="i8", atype="s8", btype="s8", dtype="s32", negate_a=True), "cannot negate"),
    (dict(kind="mxf4", atype="e2m1", btype="e2m1", transpose_a=True), "K-major A and B only"),
    (dict(kind="mxf4", atype="e2m1", btype="e2m1", b_sf_id=1), "must be one of \\(0, 2\\)"),
    (dict(kind="mxf4", atype="e2m1", btype="e2m1", scale_type="ue4m3"), "scale type"),
    (dict(k96=True), "K = 96 bit"),
    (dict(kind="tf32", atype="tf32", btype="tf32", ws=True, n=72), "N = 72 is not legal"),
    (dict(cta_group=2, n=24), "N = 24 is not legal"),
    (dict(kind="i8", atype="s8", btype="s8", dtype="s32", n=40), "N = 40 is not legal"),
    (dict(kind="i8", atype="s8", btype="s8", dtype="s32", m=256, cta_group=2, n=48), "N = 48 is not legal"),
    (dict(kind="f8f6f4", atype="e4m3", btype="e4m3", n=72, transpose_b=True), "B is MN-major"),
    (dict(kind="mxf4nvf4", atype="e2m1", btype="e2m1", scale_type="ue4m3", a_sf_id=2), "scale_vec::4X"),
    (dict(kind="mxf4nvf4", atype="e2m1", btype="e2m1", scale_type="ue4m3", scale_vec="2X"), "takes scale_vec"),
    (dict(kind="mxf4", atype="e2m1", btype="e2m1", scale_vec="4X"), "takes scale_vec"),
    (dict(kind="mxf4nvf4", atype="e2m1", btype="e2m1", k96=True, transpose_b=True), "K-major A and B"),
    (dict(kind="mxf4nvf4", atype="e2m1", btype="e2m1", k96=True, n=72), "N = 72 is not legal"),
    (dict(kind="mxf4nvf4", atype="e2m1", btype="e2m1", k96=True, sparse=True), "dense shape"),
])
def test_idesc_refuses_illegal_combinations(kw, msg):
    args = dict(kind="f16", atype="f16", btype="f16", dtype="f32", m=128, n=64)
    args.update(kw)
    with pytest.raises(DescriptorError, match=msg):
        idesc.encode_idesc(idesc.InstrDescriptor(**args))


def test_legal_shapes_follow_the_table():
    assert idesc.legal_shapes("f16", 1)[64] == list(range(8, 257, 8))
    assert idesc.legal_shapes("f16", 2)[256] == list(range(16, 257, 16))
    assert idesc.legal_shapes("tf32", 1, ws=True) == {32: [64, 128, 256], 64: [64, 128, 256], 128: [64, 128, 256]}
    assert list(idesc.legal_shapes("mxf4", 1)) == [128] and list(idesc.legal_shapes("mxf4", 2)) == [128, 256]
    assert list(idesc.legal_shapes("mxf8f6f4", 2)) == [256]  # the ISA's M = 128 is refused by CUTLASS: not modelled
    assert idesc.legal_shapes("i8", 1)[128] == [8, 16, 24, 32] + list(range(48, 257, 16))
    assert idesc.legal_shapes("i8", 2)[256] == list(range(32, 257, 32))
    assert idesc.legal_shapes("f8f6f4", 1, transpose_b=True)[64] == list(range(16, 257, 16))
    assert idesc.legal_shapes("mxf4nvf4", 1, k96=True) == {128: list(range(16, 257, 16))}
    assert idesc.KIND_K == {"tf32": 8, "f16": 16, "f8f6f4": 32, "i8": 32, "mxf8f6f4": 32, "mxf4": 64, "mxf4nvf4": 64}


def test_k96_is_sm_103a_only_and_ws_max_shift_is_legal_for_every_ws_m():
    k96 = idesc.InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", "f32", 128, 128, k96=True, scale_type="ue4m3")
    assert idesc.encode_idesc(k96, "sm_103a") == idesc.encode_idesc(k96)
    with pytest.raises(DescriptorError, match="sm_103a shape"):
        idesc.encode_idesc(k96, "sm_100a")
    for m in (32, 64, 128):
        v = idesc.encode_idesc(idesc.InstrDescriptor("f16", "f16", "f16", "f32", m, 128, ws=True, max_shift=3))
        assert v >> 30 == 3
        assert idesc.decode_idesc(v, "f16", ws=True)["problems"] == []


def test_decode_reports_undefined_codes():
    v = idesc.encode_idesc(idesc.InstrDescriptor("f16", "f16", "f16", "f32", 128, 64)) | (7 << 7)
    assert any("atype code 7" in p for p in idesc.decode_idesc(v, "f16")["problems"])


# ------------------------------------------------------------------ arbitrary input: a clear error or a value

anyint = st.integers(-(1 << 20), 1 << 20)


@settings(max_examples=400, deadline=None)
@given(start=anyint, lbo=anyint, sbo=anyint, sw=st.sampled_from(list(desc_tcgen05.TCGEN05_SWIZZLE_CODE) + ["16B", ""]),
       base=st.integers(-2, 9), mode=st.sampled_from(["relative", "absolute", "other"]),
       arch=st.sampled_from(["sm_90a", "sm_100a", "sm_103a", "sm_80"]))
def test_encoders_either_round_trip_or_raise_descriptor_error(start, lbo, sbo, sw, base, mode, arch):
    try:
        if arch == "sm_90a":
            v = desc_wgmma.encode_wgmma_desc(start, lbo, sbo, sw, base)
            assert desc_wgmma.decode_wgmma_desc(v)["problems"] == []
        else:
            v = desc_tcgen05.encode_tcgen05_smem_desc(start, lbo, sbo, sw, base, mode, arch)
            assert desc_tcgen05.decode_tcgen05_smem_desc(v, arch)["problems"] == []
    except DescriptorError:
        pass


@settings(max_examples=400, deadline=None)
@given(value=st.integers(0, (1 << 64) - 1), arch=st.sampled_from(["sm_100a", "sm_103a"]),
       kind=st.sampled_from(list(idesc.KINDS)))
def test_decoders_explain_any_64_bit_value(value, arch, kind):
    desc_wgmma.decode_wgmma_desc(value)
    desc_tcgen05.decode_tcgen05_smem_desc(value, arch)
    idesc.decode_idesc(value & 0xFFFFFFFF, kind)
    zero_mask.decode_zero_column_mask(value)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(list(idesc.KINDS)), a=st.sampled_from(["f16", "bf16", "tf32", "e4m3", "e2m1", "s8", "x"]),
       d=st.sampled_from(["f16", "f32", "s32", "f64"]), m=st.sampled_from([32, 64, 96, 128, 256]),
       n=st.integers(0, 300), flags=st.lists(st.booleans(), min_size=6, max_size=6), cg=st.sampled_from([1, 2, 3]))
def test_idesc_either_round_trips_or_raises_descriptor_error(kind, a, d, m, n, flags, cg):
    try:
        desc = idesc.InstrDescriptor(kind, a, a, d, m, n, *flags[:4], sparse=False, saturate=flags[4], ws=flags[5],
                                 cta_group=cg)
        v = idesc.encode_idesc(desc)
    except DescriptorError:
        return
    f = idesc.decode_idesc(v, kind)["fields"]
    assert (f["m"], f["n"], f["atype"]) == (m, n, a)
