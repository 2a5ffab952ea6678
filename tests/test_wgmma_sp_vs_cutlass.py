"""The sparsity metadata model of wgmma.mma_async.sp (harness/spec/sparsity.py, written from the PTX ISA) against
NVIDIA's own layout of it for SM90 sparse GMMA: CUTLASS's ELayout_64x32 / 64x16 / 64x64 and the MMA_Traits that
use them (cute/atom/mma_traits_sm90_gmma_sparse.hpp), evaluated on the host (tests/oracles/cutlass_sm90_sparse.cpp).

For value v of thread t, CUTLASS's ELayout names the element (m, k) of the logical 64 x K matrix A that the value's
metadata bits describe; one metadata byte covers ValTypeE::sparsity elements, and the values of a thread fill its
32-bit register from bit 0 up. So nibble (v * 8 / sparsity) / 4 of thread t describes chunk k / chunk_size of row
m, which the model must say too, element by element, for every thread the selector reads."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracles import cutlass_cpp  # noqa: E402

from harness.spec import fragments, sparsity  # noqa: E402

pytestmark = [pytest.mark.cutlass, pytest.mark.skipif(cutlass_cpp.skip_reason() is not None,
                                                      reason=str(cutlass_cpp.skip_reason()))]
ELAYOUT = {"f16": "64x32", "bf16": "64x32", "tf32": "64x16", "e4m3": "64x64", "e5m2": "64x64", "s8": "64x64",
           "u8": "64x64"}


@pytest.fixture(scope="module")
def oracle():
    return cutlass_cpp.run_json("cutlass_sm90_sparse.cpp")


def test_each_type_uses_the_metadata_layout_and_granularity_the_model_has(oracle):
    for name, t in oracle["traits"].items():
        atype = name.split(".")[1]
        fmt = sparsity.format_of(atype)
        assert t["elayout"] == ELAYOUT[atype], name
        assert t["k"] == fmt.k and t["a_sparsity"] == 2, name  # A packed to half of K
        # 4 metadata bits per chunk: a byte covers two chunks
        assert t["e_sparsity"] == 2 * fmt.chunk, name
        assert t["e_values"] * 8 // t["e_sparsity"] == 32, name  # one 32-bit metadata register per thread
    assert {n.split(".")[1] for n in oracle["traits"]} == set(sparsity.FORMATS)


@pytest.mark.parametrize("atype", ["f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"])
def test_the_metadata_register_layout_matches_cutlass_element_by_element(oracle, atype):
    fmt = sparsity.format_of(atype)
    lay = oracle["elayouts"][ELAYOUT[atype]]
    off = np.array(lay["offset"]).reshape(lay["threads"], lay["values"])
    m, k = off % 64, off // 64
    e_sparsity = 2 * fmt.chunk
    v = np.arange(lay["values"])[None, :]
    nib = (v * 8 // e_sparsity) // 4 + 0 * m  # the nibble of the register value v's bits sit in
    compared = 0
    for sel in fmt.selectors:
        row, chunk = sparsity.metadata_map(atype, sel)
        read = row[:, 0] >= 0
        # the selector's threads: T0/T1 or T2/T3 of each group of four (f16/bf16, tf32), all four (8-bit)
        q = np.arange(128) % 4
        assert np.array_equal(read, (q // 2 == sel) if len(fmt.selectors) == 2 else np.ones(128, bool))
        t = np.flatnonzero(read)[:, None] + 0 * v
        assert np.array_equal(row[t, nib[read]], m[read]), f"{atype} selector {sel}: rows differ"
        assert np.array_equal(chunk[t, nib[read]], k[read] // fmt.chunk), f"{atype} selector {sel}: chunks differ"
        compared += int(read.sum()) * lay["values"]
    assert compared == 128 * lay["values"]  # every (thread, value) of the layout, under one selector or the other


def test_cutlass_gives_both_thread_pairs_the_same_metadata(oracle):
    """ELayout_64x32 and 64x16 have stride 0 on the thread bit that tells T0/T1 from T2/T3: CUTLASS fills both
    pairs alike, so its kernels work with either selector; the harness instead fills the pair the selector does
    not read with other valid metadata (a decoy), so that a selector read the wrong way round shows."""
    for name in ("64x32", "64x16"):
        lay = oracle["elayouts"][name]
        off = np.array(lay["offset"]).reshape(128, lay["values"])
        q = np.arange(128) % 4
        assert np.array_equal(off[q < 2], off[(np.flatnonzero(q < 2) + 2)])
    lay = oracle["elayouts"]["64x64"]
    off = np.array(lay["offset"]).reshape(128, lay["values"])
    assert len({tuple(r) for r in off}) == 128  # 8-bit: every thread holds its own metadata


@pytest.mark.parametrize("atype", ["f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"])
def test_the_packed_a_register_fragment_matches_cutlass(oracle, atype):
    """RS: the model puts packed element j of thread t (row, packed column c: the dense A fragment over the K/2
    packed columns) where CUTLASS's sparse ALayout puts values 2j and 2j+1 (two sparse elements, one packed
    element's bits): logical row m = row and logical columns 2c, 2c+1 (K in CUTLASS's sparse-element units)."""
    lay = oracle["a_rs"][atype]
    off = np.array(lay["offset"]).reshape(128, lay["values"])
    m, k = off % 64, off // 64
    frag = fragments.wgmma_a_fragment(atype)
    assert lay["values"] == 2 * frag.row.shape[1]
    assert np.array_equal(m[:, 0::2], frag.row) and np.array_equal(m[:, 1::2], frag.row)
    assert np.array_equal(k[:, 0::2], 2 * frag.col) and np.array_equal(k[:, 1::2], 2 * frag.col + 1)
