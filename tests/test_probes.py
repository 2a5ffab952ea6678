"""The base-offset probe can tell the hypotheses apart: a hardware that ignored the base offset, or that XORed
it into the row phase instead of subtracting it, would read different bytes in most of its cases."""
import numpy as np

from harness.spec import desc_wgmma, layouts
from harness.experiments import probes


def _xor_model_addresses(lay):
    b, m, s = layouts.SWIZZLE_BMS[lay.swizzle]
    off = layouts.canonical_bit_offsets(lay) >> 3
    addr = lay.start + off
    phase = ((addr >> (m + s)) ^ lay.base_offset) & ((1 << b) - 1)
    return addr ^ (phase << m)


def test_base_offset_probe_discriminates():
    (key, cases), = probes.work("base-offset")
    assert len(cases) == 2 * (2 + 4 + 8) * 8
    differs_from_ignored = differs_from_xor = 0
    for c in cases:
        lay = c.b.layout
        model = layouts.smem_address(lay)
        if not np.array_equal(model, layouts.smem_address(lay.moved(base_offset=0))):
            differs_from_ignored += 1
        if not np.array_equal(model, _xor_model_addresses(lay)):
            differs_from_xor += 1
    # every case whose base offset matters for its swizzle width is sensitive to "ignored"
    assert differs_from_ignored >= len(cases) // 2
    assert differs_from_xor >= len(cases) // 4


def test_spec_examples_probe_writes_the_spec_layout_and_the_model_agrees():
    from harness.spec import descriptors
    from harness.families.wgmma import forms as wgmma
    setups = probes.spec_example_setups()
    assert len(setups) == 7  # the two tf32 K-major examples are two K-steps wide
    for case, prep, st, claim in setups:
        f = desc_wgmma.decode_wgmma_desc(prep.descs[1])["fields"]
        v = wgmma.variants(case.key)[case.variant_index]
        lay = layouts.SmemLayout("MN" if v.trans_b else "K", f["swizzle"], v.btype, case.key.n, case.key.k,
                                 f["leading_byte_offset"], f["stride_byte_offset"], f["start_address"])
        assert np.array_equal(layouts.element_bit_addresses(lay), st.b.addr), claim
        # the values sit where the spec says: the bytes at the spec's addresses are B's elements
        # (this used to assert only the shape of the indexing, which cannot fail)
        from harness.spec import dtypes
        t = dtypes.get(v.btype)
        assert t.bits % 8 == 0 and st.b.addr.shape == (case.key.n, case.key.k)
        byte = (st.b.addr >> 3).astype(np.int64)
        got = sum(prep.image[byte + i].astype(np.uint64) << np.uint64(8 * i) for i in range(t.bits // 8))
        assert np.array_equal(got, t.to_bits(prep.b_vals)), claim


def test_overflow_descriptors_decode_as_intended():
    from harness.spec import descriptors
    by_name = {c.id.split("overflow-")[1]: p.descs[1] for c, p, _, _ in probes.overflow_setups()}
    f = desc_wgmma.decode_wgmma_desc(by_name["sbo-wraps"])["fields"]
    assert f["stride_byte_offset"] == (1 << 18) - 256
    assert desc_wgmma.decode_wgmma_desc(by_name["lbo-wraps"])["fields"]["leading_byte_offset"] == (1 << 18) - 128
    assert by_name["start-bit14"] & (1 << 14) and by_name["sbo-bit46"] & (1 << 46)
