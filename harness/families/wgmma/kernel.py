"""Pack prepared cases into one launch (one CTA per case) and run a compiled kernel through CuPy."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from harness.spec import descriptors
from harness.families.wgmma.reference import POISON, Prepared

PARAMS_DTYPE = np.dtype([("image_offset", "<u8"), ("desc_a", "<u8"), ("desc_b", "<u8"),
                         ("image_bytes", "<u4"), ("variant", "<u4"), ("scale_d", "<u4"), ("inject", "<u4")])
assert PARAMS_DTYPE.itemsize == 40
INJECT = {"": 0, "trap": 1, "hang": 2, "misaligned": 3}  # see kernels/wgmma.cu
WINDOW_SLACK = 1024  # the kernel aligns its window up to 1024 bytes
# The kernel adds the window's (shared address >> 4) to the 14-bit start fields; keep the sum in range.
MAX_IMAGE = 160 * 1024


def encode_desc(layout) -> int:
    return descriptors.encode_wgmma_desc(layout.start, layout.lbo, layout.sbo, layout.swizzle, layout.base_offset)


def pack(preps: list[Prepared]) -> dict:
    """Host buffers for one launch: images, params, A registers, C registers."""
    n = len(preps)
    key = preps[0].case.key
    nreg = key.acc_regs
    params = np.zeros(n, PARAMS_DTYPE)
    sizes = np.array([p.image.size for p in preps], dtype=np.int64)
    if sizes.max() > MAX_IMAGE:
        raise ValueError(f"{preps[int(sizes.argmax())].case.id}: image of {sizes.max()} bytes exceeds {MAX_IMAGE}")
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    images = np.concatenate([p.image for p in preps])
    a_regs = np.zeros((n, 128, 4), np.uint32)
    c_regs = np.zeros((n, 128, nreg), np.uint32)
    for i, p in enumerate(preps):
        params[i]["image_offset"] = offsets[i]
        params[i]["image_bytes"] = p.image.size
        if p.descs is not None:  # raw descriptor values (probes of what the encoder would refuse)
            params[i]["desc_a"], params[i]["desc_b"] = p.descs[0] or 0, p.descs[1]
        else:
            params[i]["desc_a"] = encode_desc(p.a_layout) if p.a_layout is not None else 0
            params[i]["desc_b"] = encode_desc(p.b_layout)
        params[i]["variant"] = p.case.variant_index
        params[i]["scale_d"] = p.case.scale_d
        params[i]["inject"] = INJECT[p.case.inject]
        if p.a_regs is not None:
            a_regs[i] = p.a_regs
        c_regs[i] = p.c_regs
    return {"images": images, "params": params, "a_regs": a_regs, "c_regs": c_regs,
            "smem": int(sizes.max()) + WINDOW_SLACK, "nreg": nreg}


def subset(packed, idx) -> dict:
    """The buffers of a subset of a packed launch (for isolating a faulting case)."""
    packed = load(packed)
    params = packed["params"][idx].copy()
    chunks, off = [], 0
    for i in range(params.size):
        start, size = int(params[i]["image_offset"]), int(params[i]["image_bytes"])
        chunks.append(packed["images"][start:start + size])
        params[i]["image_offset"] = off
        off += size
    return {"images": np.concatenate(chunks), "params": params, "a_regs": packed["a_regs"][idx],
            "c_regs": packed["c_regs"][idx], "smem": packed["smem"], "nreg": packed["nreg"]}


def save(packed: dict, path: str) -> str:
    """Write a packed launch to a file (in /dev/shm during sweeps) so the buffers go from the process that
    prepared them to the GPU worker without passing through the sweep's own process."""
    with open(path, "wb") as fh:
        np.savez(fh, **{k: np.asarray(v) for k, v in packed.items()})
    return path


def load(packed) -> dict:
    """A packed launch, from a dict (returned as is) or a file written by `save`."""
    if isinstance(packed, dict):
        return packed
    with np.load(packed) as z:
        out = {k: z[k] for k in z.files}
    out["smem"], out["nreg"] = int(out["smem"]), int(out["nreg"])
    return out


def use_device(index: int) -> None:
    import cupy as cp
    cp.cuda.Device(index).use()


@lru_cache(maxsize=None)
def _module(cubin_path: str):
    import cupy as cp
    return cp.RawModule(path=cubin_path)


def run(cubin_path: str, kernel_name: str, packed) -> np.ndarray:
    """Launch (packed buffers, or the file they were saved to) and return the raw accumulator registers, uint32 [cases, 128, acc_regs]."""
    import cupy as cp
    packed = load(packed)
    fn = _module(str(cubin_path)).get_function(kernel_name)
    smem = packed["smem"]
    if smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = smem
    n = packed["params"].size
    images = cp.asarray(packed["images"])
    params = cp.asarray(packed["params"].view(np.uint8))
    a_regs = cp.asarray(packed["a_regs"])
    c_regs = cp.asarray(packed["c_regs"])
    d_out = cp.full((n, 128, packed["nreg"]), POISON, dtype=cp.uint32)
    fn((n,), (128,), (images, params, a_regs, c_regs, d_out), shared_mem=smem)
    cp.cuda.get_current_stream().synchronize()
    return cp.asnumpy(d_out)
