"""Diff a sequence kernel's accumulators against the reference, down to thread, register and element.

Warpgroup w of a CTA holds rows 64w .. 64w + 63 of D in the dense wgmma fragment of its own 128 threads
(harness.families.wgmma.readback decodes each warpgroup's registers)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from harness.contract import ranges
from harness.families.wgmma import readback as wgmma_readback
from harness.families.wgmma_seq.forms import SeqKey
from harness.families.wgmma_seq.reference import POISON, SeqPrepared
from harness.spec import fragments

MAX_REPORTED = 8


def decode_launch(key: SeqKey, regs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """uint32 [cases, threads, acc_regs] -> (values, raw bits) [cases, M, N], warpgroup by warpgroup."""
    parts = [wgmma_readback.decode_launch(key.inst, regs[:, 128 * w:128 * w + 128]) for w in range(key.warpgroups)]
    return np.concatenate([p[0] for p in parts], axis=1), np.concatenate([p[1] for p in parts], axis=1)


@lru_cache(maxsize=None)
def _owner(key: SeqKey):
    """(row, col) -> (thread of the CTA, register) of the accumulator."""
    frag = fragments.wgmma_d_fragment(key.inst.n, key.inst.dtype)
    thread = np.zeros((key.m, key.inst.n), np.int64)
    reg = np.zeros((key.m, key.inst.n), np.int64)
    t = np.broadcast_to(np.arange(128)[:, None], frag.row.shape)
    for w in range(key.warpgroups):
        thread[64 * w + frag.row, frag.col] = 128 * w + t
        reg[64 * w + frag.row, frag.col] = frag.reg
    return thread, reg


def _value(x):
    x = x.item()
    if isinstance(x, float) and x != x:
        return "nan"
    return int(x) if isinstance(x, float) and x.is_integer() else x


def diff_launch(preps: list[SeqPrepared], regs: np.ndarray) -> list[dict]:
    """One result per case: an ordinary case passes when every register equals the reference bit for bit; a
    negative control passes when the result is not the intended product and is exactly the predicted misread."""
    key = preps[0].case.key
    regs = np.asarray(regs, dtype=np.uint32)
    got, got_bits = decode_launch(key, regs)
    thread, reg = _owner(key)
    out = []
    for i, p in enumerate(preps):
        case = p.case
        rec = {"id": case.id, "variant": case.variant_index, "data": case.data,
               "unwritten_registers": int((regs[i] == POISON).sum()) if key.inst.dtype != "s32" else 0}
        if case.control is None and np.array_equal(regs[i], p.expected_regs):
            out.append({**rec, "status": "pass", "mismatches": 0})
            continue
        with np.errstate(invalid="ignore"):
            bad = ~(got[i] == p.expected)  # by value: NaN never passes, -0 == +0
        rec["mismatches"] = int(bad.sum())
        if case.control is None:
            rec["status"] = "pass" if not bad.any() else "fail"
        else:
            with np.errstate(invalid="ignore"):
                differs = bool(np.any(~(got[i] == p.intended)))
            rec.update(control=f"{case.control}@{case.control_operand}", caught=differs,
                       matches_model_prediction=not bad.any(),
                       status="pass" if differs and not bad.any() else "fail")
            if not differs:
                rec["why"] = "the deliberate mistake gave the intended product: the harness could not fail"
            elif bad.any():
                rec["why"] = "the mistake changed the result, but not into the misread the model predicts"
        if bad.any():
            rows, cols = np.nonzero(bad)
            rec["first_mismatches"] = [
                {"thread": int(thread[r, c]), "register": int(reg[r, c]), "row": int(r), "col": int(c),
                 "expected": _value(p.expected[r, c]), "got": _value(got[i][r, c]),
                 "got_bits": f"0x{int(got_bits[i][r, c]):x}"}
                for r, c in list(zip(rows.tolist(), cols.tolist()))[:MAX_REPORTED]]
            rec.update(bad_rows=ranges(np.unique(rows)), bad_cols=ranges(np.unique(cols)),
                       bad_threads=ranges(np.unique(thread[rows, cols])),
                       bad_registers=ranges(np.unique(reg[rows, cols])))
        out.append(rec)
    return out
