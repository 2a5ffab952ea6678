"""The five worked examples of the canonical-layouts section (PTX ISA 9.7.15.5.1.2.1.3, repeated for tcgen05
in 9.7.16.3.3): exact layout, LBO, SBO and their descriptor encodings, each checked against the model.

The exact layouts are CuTe layouts in elements; their swizzle acts on the byte address."""
import numpy as np
import pytest

from harness.spec import desc_tcgen05, desc_wgmma, cute_layout, descriptors, dtypes, layouts
from harness.spec.layouts import LayoutError, SmemLayout

# (name, major, swizzle, dtype, exact layout, T, m, k, LBO bytes or None, SBO bytes, LBO enc, SBO enc)
EXAMPLES = [
    ("K-major none tf32", "K", "none", "tf32", "Swizzle<0,4,3> o ((8,2),(4,4)):((4,32),(1,64))",
     4, 2, 2, 64 * 4, 32 * 4, 16, 8),
    ("K-major 32B tf32", "K", "32B", "tf32", "Swizzle<1,4,3> o ((8,2),(4,4)):((8,64),(1,4))",
     4, 2, 2, None, 64 * 4, 1, 16),
    ("MN-major none bf16", "MN", "none", "bf16", "Swizzle<0,4,3> o ((8,1,2),(8,2)):((1,8,64),(8,128))",
     8, 2, 2, 128 * 2, 64 * 2, 16, 8),
    ("MN-major 32B bf16", "MN", "32B", "bf16", "Swizzle<1,4,3> o ((8,2,2),(8,2)):((1,8,128),(16,256))",
     8, 2, 2, 128 * 2, 256 * 2, 16, 32),
    ("MN-major 64B bf16", "MN", "64B", "bf16", "Swizzle<2,4,3> o ((8,4,2),(8,2)):((1,8,256),(32,512))",
     8, 2, 2, 256 * 2, 512 * 2, 32, 64),
]
CONSISTENT = [e for e in EXAMPLES if e[0] != "K-major 32B tf32"]


def exact_addresses(text: str, dtype: str) -> np.ndarray:
    swz, lay = cute_layout.parse(text)
    eb = dtypes.get(dtype).bits // 8
    rows, cols = lay.size(0), lay.size(1)
    return np.array([[cute_layout.apply_swizzle(lay(r, c) * eb, swz) for c in range(cols)] for r in range(rows)])


@pytest.mark.parametrize("ex", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_parameters_match_canonical_form(ex):
    name, major, swz, dtype, text, T, m, k, lbo, sbo, lbo_enc, sbo_enc = ex
    assert 128 // dtypes.get(dtype).bits == T
    assert descriptors.matrix_descriptor_encode(sbo) == sbo_enc
    if lbo is not None:
        assert descriptors.matrix_descriptor_encode(lbo) == lbo_enc
    _, lay = cute_layout.parse(text)
    # the table's m and k are the repeat counts of the canonical form
    expect_rows = 8 * m if major == "K" else T * {"none": 1, "32B": 2, "64B": 4, "128B": 8}[swz] * m
    expect_cols = T * 2 * k if major == "K" else 8 * k
    assert (lay.size(0), lay.size(1)) == (expect_rows, expect_cols)


@pytest.mark.parametrize("ex", CONSISTENT, ids=[e[0] for e in CONSISTENT])
def test_model_reproduces_exact_layout(ex):
    name, major, swz, dtype, text, T, m, k, lbo, sbo, *_ = ex
    want = exact_addresses(text, dtype)
    lay = SmemLayout(major, swz, dtype, want.shape[0], want.shape[1], lbo, sbo, 0, 0)
    assert np.array_equal(layouts.smem_address(lay), want)


def test_k_major_32B_tf32_example_is_inconsistent_with_the_spec():
    """The spec's Figure 167/189 example is 16 tf32 (64 bytes) wide along K, but a 32B-swizzle row holds 32
    bytes and K-major swizzled layouts have no LBO (it is 'not used, assumed 1'). Its exact layout
    ((8,2),(4,4)):((8,64),(1,4)) therefore puts K-chunk 2 of row r on top of K-chunk 0 of row r+1: 256
    elements land on only 136 distinct addresses. The model refuses the tile instead of inventing a stride."""
    text = EXAMPLES[1][4]
    addr = exact_addresses(text, "tf32")
    assert addr.size == 256 and np.unique(addr).size == 136
    assert addr[0, 8] == addr[1, 0]  # row 0, K elements 8..11 == row 1, K elements 0..3
    with pytest.raises(LayoutError, match="64 bytes wide along K but one swizzle row holds 32 bytes"):
        layouts.validate(SmemLayout("K", "32B", "tf32", 16, 16, 16, 256))
    # What is consistent: the same example restricted to one swizzle row (k = 1, 8 tf32 = 32 bytes).
    half = addr[:, :8]
    lay = SmemLayout("K", "32B", "tf32", 16, 8, 16, 256)
    assert np.array_equal(layouts.smem_address(lay), half)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("ex", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_descriptor_fields_encode_as_the_table_says(ex, arch):
    name, major, swz, dtype, text, T, m, k, lbo, sbo, lbo_enc, sbo_enc = ex
    lbo_bytes = 16 if lbo is None else lbo  # "1 (assumed)"
    if arch == "sm_90a":
        v = desc_wgmma.encode_wgmma_desc(0, lbo_bytes, sbo, swz)
    else:
        v = desc_tcgen05.encode_tcgen05_smem_desc(0, lbo_bytes, sbo, swz)
    assert (v >> 16) & 0x3FFF == lbo_enc
    assert (v >> 32) & 0x3FFF == sbo_enc
