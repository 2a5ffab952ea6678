"""Inputs and the numpy reference of a wgmma_seq case, from the spec's models alone.

`prepare(case)` draws the whole M x (steps * K) A and N x (steps * K) B (integer-valued, deterministically from
the case id), writes every step's sub-tile into the shared-memory image with the layout model, packs each step's
A registers (RS) and C with the fragment model, and computes what the sequence must produce: the sum over the
steps (and per warpgroup) of what each step's descriptor reads (harness.spec.layouts through
cases.read_layouts, which applies the kernel's add / or to the descriptor values). For an ordinary case that is
the intended product A @ B^T (+ C); for a negative control it is the model's prediction of the misread.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.families.wgmma.reference import POISON, acc_bits, draw_values, junk_bytes
from harness.families.wgmma_seq import cases as seq_cases
from harness.families.wgmma_seq.cases import SeqCase, SeqControl
from harness.spec import dtypes, fragments, layouts

__all__ = ["POISON", "SeqPrepared", "prepare"]


@dataclass
class SeqPrepared:
    case: SeqCase
    image: np.ndarray | None  # uint8, multiple of 16 bytes
    handed: seq_cases.Handed
    a_regs: np.ndarray | None  # uint32 [threads, steps * 4] (RS), else None
    c_regs: np.ndarray | None  # uint32 [threads, acc_regs]
    expected: np.ndarray  # M x N what the kernel must produce (int64 / float64; narrowed by slim)
    intended: np.ndarray | None  # M x N the intended product (kept for controls)
    expected_regs: np.ndarray  # `expected` as the device's registers [threads, acc_regs]

    def slim(self) -> "SeqPrepared":
        """Only what the diff needs, in the accumulator's own width (exact results are representable there)."""
        narrow = np.int32 if self.case.key.inst.dtype == "s32" else np.float32
        self.image = self.a_regs = self.c_regs = None
        self.expected = self.expected.astype(narrow)
        self.intended = self.intended.astype(narrow) if self.case.control is not None else None
        return self


def _c_values(rng, dtype: str, shape) -> np.ndarray:
    if dtype == "s32":
        return rng.integers(-(1 << 20), 1 << 20, size=shape).astype(np.int64)
    return rng.integers(-8, 9, size=shape).astype(np.float64)


def _matmul(dtype: str, a, b_nk) -> np.ndarray:
    if dtype == "s32":
        return dtypes.exact_integer_matmul(a, b_nk)
    return a @ b_nk.T


def _finish(dtype: str, d: np.ndarray) -> np.ndarray:
    """The accumulator's arithmetic: s32 wraps (each step wraps; the sum modulo 2**32 is the same), floats must
    be exact in the accumulator (checked: the value pools are chosen so)."""
    if dtype == "s32":
        return ((d + (1 << 31)) % (1 << 32)) - (1 << 31)
    t = dtypes.get(dtype)
    if not np.array_equal(t.from_bits(t.to_bits(d)), d):
        raise AssertionError(f"reference is not exact in {dtype}; the value pools are wrong")
    return d


def prepare(case: SeqCase) -> SeqPrepared:
    key, v = case.key, case.variant
    inst, S, K, M, N = key.inst, key.steps, key.inst.k, key.m, key.inst.n
    rng = np.random.default_rng(case.seed)
    at, bt = dtypes.get(v.atype), dtypes.get(v.btype)
    a_vals = draw_values(rng, at, (M, S * K), "exact")
    b_vals = draw_values(rng, bt, (N, S * K), "exact")
    c_vals = _c_values(rng, inst.dtype, (M, N))
    a_bits, b_bits = at.to_bits(a_vals), bt.to_bits(b_vals)

    p = seq_cases.place(case)
    image = np.concatenate([junk_bytes(rng, at, p.region_b), junk_bytes(rng, bt, p.size - p.region_b)])
    for j in range(S):
        cols = slice(j * K, (j + 1) * K)
        if case.a is not None:
            layouts.write_image(case.a.sub(j), a_bits[:, cols], image)
        b = case.b.sub(j)
        layouts.write_image(b.moved(start=p.region_b + b.start), b_bits[:, cols], image)

    h = seq_cases.handed(case)
    with np.errstate(invalid="ignore", over="ignore"):  # junk bytes may decode to NaN / Inf
        b_read = [bt.from_bits(layouts.read_image(got, image)) for got, _ in seq_cases.read_layouts(case, "B")[0]]
        a_read = []  # [warpgroup][step] the 64 x K values each step multiplies
        a_regs = None
        if case.a is not None:
            a_read = [[at.from_bits(layouts.read_image(got, image)) for got, _ in row]
                      for row in seq_cases.read_layouts(case, "A")]
        else:
            frag = fragments.wgmma_a_fragment(v.atype)
            a_regs = np.zeros((key.threads, S * 4), np.uint32)
            for w in range(key.warpgroups):
                src_w = 1 - w if case.control == SeqControl.SWAPPED_WG else w
                row = []
                for j in range(S):
                    src_j = j - 1 if case.control == SeqControl.STALE_A and j else j
                    block = a_bits[64 * src_w:64 * src_w + 64, src_j * K:(src_j + 1) * K]
                    a_regs[128 * w:128 * w + 128, 4 * j:4 * j + 4] = fragments.gather_registers(frag, block)
                    row.append(at.from_bits(block))
                a_read.append(row)
        expected = np.zeros((M, N), np.int64 if inst.dtype == "s32" else np.float64)
        for w in range(key.warpgroups):
            part = sum(_matmul(inst.dtype, a_read[w][j], b_read[j]) for j in range(S))
            expected[64 * w:64 * w + 64] = part + (c_vals[64 * w:64 * w + 64] if case.scale_d else 0)
        intended = _matmul(inst.dtype, at.from_bits(a_bits), bt.from_bits(b_bits)) + (c_vals if case.scale_d else 0)
    expected, intended = _finish(inst.dtype, expected), _finish(inst.dtype, intended)
    if case.control is None and not np.array_equal(expected, intended):
        raise AssertionError(f"{case.id}: the descriptors the kernel is handed do not read the tile the image "
                             "holds (the sub-tile model and the descriptor arithmetic disagree)")

    dfrag = fragments.wgmma_d_fragment(N, inst.dtype)
    per_wg = lambda x: np.concatenate([fragments.gather_registers(dfrag, acc_bits(inst.dtype, x[64 * w:64 * w + 64]))
                                       for w in range(key.warpgroups)])
    return SeqPrepared(case, image, h, a_regs, per_wg(c_vals), expected, intended, per_wg(expected))
