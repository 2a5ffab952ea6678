"""The base-offset probe can tell the hypotheses apart: a hardware that ignored the base offset, or that XORed
it into the row phase instead of subtracting it, would read different bytes in most of its cases."""
import numpy as np

from harness import layouts, probes


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
