"""Pack tcgen05 cases into one launch (one CTA, or a cluster of two, per case) and run it through CuPy.

Also a GPU-worker backend (use_device, run), so tcgen05 launches get the same fault and hang isolation as
wgmma's."""
from __future__ import annotations

import numpy as np

from harness.families.wgmma.kernel import load, use_device  # noqa: F401  (use_device is part of the worker backend's interface)
from harness.families.tcgen05.cases import POISON, TcPrepared

PARAMS_DTYPE = np.dtype([(k, "<u8") for k in ("image_offset", "desc_a", "desc_b", "zero_mask", "sf_desc_a",
                                             "sf_desc_b")] +
                        [(k, "<u4") for k in ("image_bytes", "idesc", "alloc_cols", "read_cols", "enable_input_d",
                                              "a_tmem_col", "a_tmem_cols", "sf_col_a", "sf_col_b", "spin_limit")])
assert PARAMS_DTYPE.itemsize == 88
SPIN_LIMIT = 1 << 22  # mbarrier polls (tens of milliseconds) before a case reports that its MMA never completed


def pack(preps: list[TcPrepared]) -> dict:
    read_cols = max(p.read_cols for p in preps)
    alloc = max(32, 1 << (read_cols - 1).bit_length())
    images = [img for p in preps for img in p.images]
    params = np.zeros(len(images), PARAMS_DTYPE)
    sizes = np.array([i.size for i in images], np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    tmem_in = np.zeros((len(images), 128, read_cols), np.uint32)
    j = 0
    for p in preps:
        for r, (img, prm) in enumerate(zip(p.images, p.params)):
            for k, v in prm.items():
                params[j][k] = v
            params[j]["image_offset"], params[j]["image_bytes"] = offsets[j], img.size
            params[j]["read_cols"], params[j]["alloc_cols"], params[j]["spin_limit"] = read_cols, alloc, SPIN_LIMIT
            tmem_in[j, :, :p.read_cols] = p.tmem_in[r]
            j += 1
    return {"images": np.concatenate(images), "params": params, "tmem_in": tmem_in,
            "smem": int(sizes.max()) + 1024 + 64, "read_cols": read_cols}


def run(cubin_path: str, kernel_name: str, packed) -> np.ndarray:
    """Launch; returns uint32 [ctas, 128 + 1, read_cols]: the raw TMEM cells, then a row whose first cell
    is the CTA's status (0: the MMA completed; 1: it did not within the spin limit)."""
    import cupy as cp

    from harness.families.wgmma.kernel import _module
    packed = load(packed)
    fn = _module(str(cubin_path)).get_function(kernel_name)
    if packed["smem"] > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = int(packed["smem"])
    n, cols = packed["params"].size, int(packed["read_cols"])
    out = cp.full((n, 128, cols), POISON, dtype=cp.uint32)
    status = cp.full((n,), 2, dtype=cp.uint32)
    fn((n,), (128,), (cp.asarray(packed["images"]), cp.asarray(packed["params"].view(np.uint8)),
                      cp.asarray(packed["tmem_in"]), out, status), shared_mem=int(packed["smem"]))
    cp.cuda.get_current_stream().synchronize()
    res = np.zeros((n, 129, cols), np.uint32)
    res[:, :128] = cp.asnumpy(out)
    res[:, 128, 0] = cp.asnumpy(status)
    return res
