"""A stand-in wgmma tensor core for the CPU tests, written from the PTX ISA text and not from the harness's models.

The "perfect device" tests used to build the device's registers from the harness's own reference
(`reference.accumulate`, `round_to_accumulator`) and fragment model (`fragments.gather_registers` with
`wgmma_d_fragment`): a bug in either was then in the device too, and the test could not fail. This device
shares neither:
  * the product: D = scale-d * C + (imm-scale-a * A) x (imm-scale-b * B)^T over the case's logical operands
    (prep.a_vals, prep.b_vals: the values drawn, as the harness's dtypes decode them, which tests/test_dtypes.py
    checks against ml_dtypes), in Python integers for s32 (wrap modulo 2^32, or clamp with .satfinite, as PTX
    ISA 9.7.15.5 says) and float64 otherwise; tf32 operands are truncated here (the low 13 mantissa bits
    ignored), whatever the harness did; the result is rounded to the accumulator by numpy's own float16/float32;
  * the registers: the inverse of the fragment figures (Figures 149-155, written out in /work/shared/spec/README.md):
    D[row, col] goes to thread 32*(row // 16) + 4*(row % 8) + (col % 8) // 2, element
    i = 4*(col // 8) + 2*((row % 16) // 8) + col % 2; f32/s32 element i is register i, f16 element i is the
    low (i even) or high half of register i // 2.
It models a correct device on a positive case only: what a negative control's wrong descriptor reads is the
layout model's business (checked against CuTe and the spec's worked examples elsewhere).
"""
from __future__ import annotations

import numpy as np


def _tf32(x: np.ndarray) -> np.ndarray:
    bits = np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    return bits.view(np.float32).astype(np.float64)


def product(prep) -> np.ndarray:
    """The M x N accumulator values a correct tensor core returns for a positive case."""
    case = prep.case
    key, v = case.key, case.variant
    a, b, c = np.asarray(prep.a_vals), np.asarray(prep.b_vals), np.asarray(prep.c_vals)
    if key.dtype == "s32":
        # exact in int64: |A|, |B| <= 255 and K <= 256, so a dot product stays far below 2^62 (numpy's integer
        # matmul is exact; no BLAS, no float)
        d = a.astype(np.int64) @ b.astype(np.int64).T + (c.astype(np.int64) if case.scale_d else 0)
        if v.satfinite:
            return np.clip(d, -2 ** 31, 2 ** 31 - 1)
        return (d + 2 ** 31) % 2 ** 32 - 2 ** 31
    if v.atype == "tf32":
        a, b = _tf32(a), _tf32(b)
    sa = -1.0 if v.scale_a == -1 else 1.0
    sb = -1.0 if v.scale_b == -1 else 1.0
    d = np.einsum("mk,nk->mn", sa * a.astype(np.float64), sb * b.astype(np.float64))
    if case.scale_d:
        d = d + c.astype(np.float64)
    return d.astype(np.float16 if key.dtype == "f16" else np.float32).astype(np.float64)


def registers(dtype: str, n: int, values: np.ndarray) -> np.ndarray:
    """uint32 [128 threads, registers] holding the M x N (64 x n) accumulator `values` as the figures say."""
    nregs = n // 4 if dtype == "f16" else n // 2
    regs = np.zeros((128, nregs), np.uint32)
    if dtype == "f16":
        raw = np.asarray(values, np.float16).view(np.uint16).astype(np.uint32)
    elif dtype == "f32":
        raw = np.asarray(values, np.float32).view(np.uint32)
    else:
        raw = (np.asarray(values, np.int64) & 0xFFFFFFFF).astype(np.uint32)
    row, col = np.divmod(np.arange(64 * n), n)  # every accumulator element, row-major
    t = 32 * (row // 16) + 4 * (row % 8) + (col % 8) // 2
    i = 4 * (col // 8) + 2 * ((row % 16) // 8) + col % 2
    if dtype == "f16":
        for half in (0, 1):  # each (thread, register) gets one element of each parity, at most once a parity
            sel = i % 2 == half
            regs[t[sel], i[sel] // 2] |= raw[row[sel], col[sel]] << np.uint32(16 * half)
    else:
        regs[t, i] = raw[row, col]
    return regs


def device_registers(prep) -> np.ndarray:
    key = prep.case.key
    return registers(key.dtype, key.n, product(prep))
