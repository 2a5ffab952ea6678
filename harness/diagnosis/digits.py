"""Numbers that name where they came from: the probes of every family fill an operand (shared memory, registers,
Tensor Memory) with values that code each element's own index, so that what the tensor core read, summed into an
accumulator, says which element it was. The digits must be exact in the operand's type and in the accumulator.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from harness.spec import dtypes

# Largest digit base whose values 0..base-1 the operand type holds exactly (and every accumulator, f16's
# 2048 included); s8 stores digit - 128.
DIGIT_BASE = {"f16": 2048, "bf16": 256, "tf32": 2048, "e4m3": 16, "e5m2": 8, "s8": 256, "u8": 256, "b1": 2}


def exact_power_cap(t: str) -> int:
    """The largest power of two, at most 128, that type `t` holds exactly: the largest weight a digit may carry
    (128 for the 16/32-bit and 8-bit float types and u8, 64 for s8, 16 for e3m2, 4 for e2m1 and e2m3)."""
    et, cap = dtypes.get(t), 1
    for j in range(1, 8):
        try:
            exact = et.from_bits(et.to_bits(np.array([2.0 ** j])))[0] == 2.0 ** j
        except ValueError:  # out of the type's range
            exact = False
        if not exact:
            break
        cap = 1 << j
    return cap


def code_digits(t: str, nvalues: int, K: int, base: int = 2, cap: int | None = None) -> tuple[np.ndarray, Callable]:
    """(weights [K], digits(values) -> [len, K]) with sum_k digits[v, k] * weights[k] == v for v < nvalues: the
    digits of v in `base` (a power of two; every digit 0 .. base-1 must be exact in the digits' type), digit j
    weighing base**j, split over several k where base**j exceeds `cap` (default: exact_power_cap(t))."""
    if t == "b1":
        if nvalues > K:
            raise ValueError(f"b1 unary digits: {nvalues} values need more than K = {K}")
        w = np.ones(K)
        return w, lambda v: (np.arange(K)[None, :] < np.asarray(v)[:, None]).astype(np.float64)
    if base < 2 or base & (base - 1):
        raise ValueError(f"digit base {base} is not a power of two")
    ndigits = 1
    while base ** ndigits < nvalues:
        ndigits += 1
    cap = exact_power_cap(t) if cap is None else cap
    ws, which = [], []
    for j in range(ndigits):
        pieces = max(1, base ** j // cap)
        ws += [min(base ** j, cap)] * pieces
        which += [j] * pieces
    if len(ws) > K:
        raise ValueError(f"{t}: {nvalues} values need {len(ws)} k > K = {K}")
    w = np.zeros(K)
    w[:len(ws)] = ws
    place = base ** np.array(which)

    def digits(v):
        out = np.zeros((len(v), K))
        out[:, :len(ws)] = (np.asarray(v)[:, None] // place[None, :]) % base
        return out
    return w, digits
