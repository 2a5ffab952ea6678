"""D stored with stmatrix (PTX ISA 9.7.14.5.16, sm_90): which kernels store D so, the fragments each stmatrix
.x1/.x2/.x4 [.trans] .b16 stores, and the shared-memory tile they go into.

A 16-bit D of an m16n8 form is two registers, each an 8x8 .b16 matrix row-slice exactly as stmatrix takes it
(register j of lane l: row l // 4 of matrix j, elements 2 (l % 4), +1): .x2 stores D (rows 0-7, then 8-15); .x1
stores register 0 alone (D's rows 0-7); .x4 stores D and C side by side, the 16 x 16 tile [D | C] that two n8
accumulators make in CUTLASS's SM90 STSM copies. With .trans each 8x8 matrix is stored transposed: the tile holds
D's columns as its rows. `store_map` gives each store's fragment as a FragmentMap, and ldmatrix.lane_addresses (the
same solver ldmatrix's loads use) solves each lane's row address into a tile of CuTe's Swizzle<B,4,3> for 32-,
64- and 128-byte rows (16: unswizzled, rows padded by a 16-byte chunk).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from harness.families.mma_sync import forms, fragments
from harness.families.mma_sync.fragments import FragmentMap
from harness.families.mma_sync.ldmatrix import MatrixMoveForm

STORE_MOVES = tuple(MatrixMoveForm(n, t, store=True) for t in (False, True) for n in (1, 2, 4))


def stores_d(key: forms.KernelKey) -> bool:
    """Whether the key's kernel has the stmatrix paths: a 16-bit D of two registers (every f16-accumulator m16n8
    form; m8n8k4 .f16's quad-pair D is no stmatrix fragment)."""
    return key.dtype == "f16" and key.shape is not forms.Shape.M8N8K4


@lru_cache(maxsize=None)
def store_map(key: forms.KernelKey, num: int) -> FragmentMap:
    """The fragment stmatrix .x{num} stores: value v of a lane in register v // 2 (D's registers, then C's)."""
    if not stores_d(key):
        raise ValueError(f"{key.name}: D is not a 16-bit fragment of two registers; no stmatrix stores it")
    if num not in (1, 2, 4):
        raise ValueError(f".x{num} is not a stmatrix count")
    acc = fragments.acc_map(forms.variants(key)[0], "D")

    def coords(lane, v):
        v = np.asarray(v)
        row, col, inst = acc.coords(lane, v % 4)
        return row, col + 8 * (v // 4), inst  # values 4-7 (.x4): C's, beside D

    return FragmentMap("D", 16 if num > 1 else 8, 16 if num == 4 else 8, 16, 2 * num, coords)


def registers(num: int, d_words: np.ndarray, c_words: np.ndarray) -> np.ndarray:
    """The registers stmatrix .x{num} stores, uint32 [32, num]: D's words, then (.x4) C's."""
    both = np.concatenate([np.asarray(d_words, np.uint32).reshape(32, -1), np.asarray(c_words, np.uint32).reshape(
        32, -1)], axis=1)
    return both[:, :num]
