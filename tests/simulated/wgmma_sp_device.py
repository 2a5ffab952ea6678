"""A simulated sm_90a GPU for wgmma.mma_async.sp launches (kernels named wgmma_sp_*).

It does per CTA what families/wgmma/wgmma.cu with the sparse instruction does, from the launch's raw buffers only, with
its own reading of the sparsity, not harness/spec/sparsity.py (the model under test):
  * which thread's metadata register describes which elements of A: CUTLASS's metadata layouts for SM90 sparse
    GMMA (cute/atom/mma_traits_sm90_gmma_sparse.hpp, ELayout_64x32 / 64x16 / 64x64), written below as CuTe
    shape:stride and evaluated here; value v of a thread is bits v*32/values.. of its register; of each group of
    four, the selector picks threads 2s and 2s+1 (f16/bf16, tf32; the PTX ISA text: "0 (threads T0, T1) or 1
    (threads T2, T3)"), all four for the 8-bit types;
  * what one chunk's 4 bits say: CUTLASS's compressor (cutlass/transform/kernel/sm90_sparse_gemm_compressor.hpp,
    MetadataOneChunk2to4 / 1to2): stored element p at index bits 2p+1..2p; tf32 0b0100 = position 0, 0b1110 =
    position 1; anything else is undefined and not simulated;
  * A (the packed 64 x K/2, from shared memory or from registers) and B (N x K) are read, C and D placed, by the
    dense simulator's independent code (wgmma_device.mma_cta); A is expanded by the metadata before the MMA.
"""
from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from harness.families.wgmma_sp import forms
from harness.contract import LaunchInput
from tests.simulated import wgmma_device
from tests.simulated.sim_common import fault, log_launch, planted
from tests.simulated.smem import NotSimulated

NAME = re.compile(r"^wgmma_sp_(?P<kind>\w+?)_m64n(?P<n>\d+)k(?P<k>\d+)_(?P<dtype>\w+)_(?P<src>SS|RS)$")

# CUTLASS's ELayouts: ((thread modes), (value modes)) : ((strides), (strides)), codomain m + 64 * k of A (64 x K)
E_LAYOUTS = {
    32: (((2, 2, 8, 4), (16, 2)), ((1024, 0, 1, 16), (64, 8))),  # f16/bf16, K = 32
    16: (((2, 2, 8, 4), (8, 2)), ((512, 0, 1, 16), (64, 8))),  # tf32, K = 16
    64: (((2, 2, 8, 4), (32,)), ((8, 2048, 1, 16), (64,))),  # e4m3/e5m2, s8/u8, K = 64
}
CHUNK = {32: 4, 16: 2, 64: 4}  # elements per chunk of a row
STORED = {32: 2, 16: 1, 64: 2}


def key_of(kernel_name: str) -> forms.KernelKey:
    m = NAME.match(kernel_name)
    if not m:
        raise ValueError(f"{kernel_name!r} is not a wgmma.mma_async.sp kernel name")
    key = forms.validate_key(forms.KernelKey(m["kind"], int(m["n"]), m["dtype"], m["src"]))
    if key.k != int(m["k"]):
        raise ValueError(f"{kernel_name}: K = {m['k']} does not match kind {key.kind}")
    return key


def _evaluate(shape, stride, index: int) -> int:
    """A CuTe layout at a 1-D index: colexicographic coordinates times strides."""
    off = 0
    for s, d in zip(shape, stride):
        off += (index % s) * d
        index //= s
    return off


@lru_cache(maxsize=None)
def element_of(k: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) [128 threads, values] of A that value v of thread t's metadata describes (CUTLASS's ELayout)."""
    (tshape, vshape), (tstride, vstride) = E_LAYOUTS[k]
    nvals = int(np.prod(vshape))
    off = np.array([[_evaluate(tshape, tstride, t) + _evaluate(vshape, vstride, v) for v in range(nvals)]
                    for t in range(128)])
    return off % 64, off // 64


def chunk_positions(k: int, value: int) -> tuple[int, ...]:
    value &= 0xF
    if STORED[k] == 1:
        pos = {0b0100: 0, 0b1110: 1}.get(value)
        if pos is None:
            raise NotSimulated(f"tf32 metadata {value:#06b} is undefined behaviour")
        return (pos,)
    p0, p1 = value & 3, (value >> 2) & 3
    if p0 == p1:
        raise NotSimulated(f"metadata {value:#06b} is invalid (equal indices)")
    return (p0, p1)


# Misreading hook for the diagnosis tests (tests/simulated/misreading_probe.py): None, or (k, row, col) -> (row, col)
# [128, values]: the element of A each metadata value of each thread describes, instead of CUTLASS's ELayout's.
MISREAD_META = None


def metadata_positions(k: int, e_regs: np.ndarray, selector: int) -> np.ndarray:
    """[64, chunks, stored]: the position in its chunk of each stored element of A, from the threads the selector
    reads."""
    row, col = element_of(k)
    if MISREAD_META is not None:  # the 'hardware' takes value v of thread t for another element
        row, col = MISREAD_META(k, row, col)
    nvals = row.shape[1]
    bits_per_value = 32 // nvals
    per_chunk = CHUNK[k]
    out = np.full((64, k // per_chunk, STORED[k]), -1, np.int64)
    lane_q = np.arange(128) % 4
    readers = (lane_q // 2 == selector) if k in (32, 16) else np.ones(128, bool)
    for t in np.flatnonzero(readers):
        reg = int(e_regs[t])
        for v in range(0, nvals, per_chunk):
            nib = (reg >> (v * bits_per_value)) & 0xF
            r, c = int(row[t, v]), int(col[t, v]) // per_chunk
            out[r, c] = chunk_positions(k, nib)
    if (out < 0).any():
        raise AssertionError("the ELayout leaves chunks of A without metadata")
    return out


def expand(k: int, packed: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The 64 x K matrix A the tensor core multiplies: stored element p of chunk c at column CHUNK*c + pos."""
    out = np.zeros((packed.shape[0], k), dtype=packed.dtype)
    per_chunk, stored = CHUNK[k], STORED[k]
    for r in range(packed.shape[0]):
        for c in range(k // per_chunk):
            for p in range(stored):
                out[r, per_chunk * c + pos[r, c, p]] = packed[r, stored * c + p]
    return out


def simulate_cta(key: forms.KernelKey, prm, image, a_regs, c_regs, e_regs, out) -> None:
    v = forms.variants(key)[int(prm["variant"])]
    pos = metadata_positions(key.k, e_regs, v.selector)
    wgmma_device.mma_cta(v, key, key.k // 2, key.k, prm, image, a_regs, c_regs, out,
                         expand_a=lambda packed: expand(key.k, packed, pos))


def run(cubin_path, kernel_name, launch) -> dict[str, np.ndarray]:
    inp = LaunchInput.load(launch)
    key = key_of(kernel_name)
    log_launch(kernel_name, inp)
    modes = {i: wgmma_device.INJECT_MODES[int(x)] for i, x in enumerate(inp.params["inject"])
             if int(x) in wgmma_device.INJECT_MODES}
    modes.update(planted(kernel_name, inp))
    fault(modes.values())
    return wgmma_device.each_cta(inp, lambda p, image, i, out: simulate_cta(
        key, p, image, inp.inputs["a_regs"][i], inp.inputs["c_regs"][i], inp.inputs["e_regs"][i], out))
