"""Diff device accumulators against the reference, down to thread, register and element."""
from __future__ import annotations

import numpy as np

from . import fragments
from .reference import POISON, Prepared, decode_d

MAX_REPORTED = 8


def _d_owner(n: int, dtype: str):
    """(row, col) -> (thread, register, half) for the accumulator fragment."""
    frag = fragments.wgmma_d_fragment(n, dtype)
    thread = np.zeros((64, n), np.int64)
    reg = np.zeros((64, n), np.int64)
    half = np.zeros((64, n), np.int64)
    t = np.broadcast_to(np.arange(128)[:, None], frag.row.shape)
    thread[frag.row, frag.col] = t
    reg[frag.row, frag.col] = frag.reg
    half[frag.row, frag.col] = frag.shift // 16
    return thread, reg, half


def diff(prep: Prepared, regs: np.ndarray) -> dict:
    """One result record: status, mismatch count and the first mismatches."""
    case = prep.case
    got, got_bits = decode_d(case, regs)
    unwritten = int(np.sum(np.asarray(regs, np.uint64) == POISON)) if case.key.dtype != "s32" else 0
    with np.errstate(invalid="ignore"):
        if prep.tolerance is not None:
            bad = ~(np.abs(got - prep.expected) <= prep.tolerance)
        else:
            bad = ~(got == prep.expected)  # value equality: NaN never passes, -0 == +0
    nbad = int(bad.sum())
    rec = {"id": case.id, "kernel": case.key.name, "variant": case.variant_index,
           "data": case.data, "mismatches": nbad, "unwritten_registers": unwritten}
    if case.control:
        differs = bool(np.any(~(got == prep.intended)))
        rec["control"] = case.control
        rec["caught"] = differs
        rec["matches_model_prediction"] = nbad == 0
        rec["status"] = "pass" if differs else "fail"
        if not differs:
            rec["why"] = "a deliberately wrong descriptor gave the intended product: the harness could not fail"
    else:
        rec["status"] = "pass" if nbad == 0 else "fail"
    if nbad:
        thread, reg, half = _d_owner(case.key.n, case.key.dtype)
        rows, cols = np.nonzero(bad)
        first = []
        for r, c in list(zip(rows.tolist(), cols.tolist()))[:MAX_REPORTED]:
            item = {"thread": int(thread[r, c]), "register": int(reg[r, c]), "row": r, "col": c,
                    "expected": _num(prep.expected[r, c]), "got": _num(got[r, c]),
                    "got_bits": f"0x{int(got_bits[r, c]):x}"}
            if case.key.dtype == "f16":
                item["half"] = "lo" if half[r, c] == 0 else "hi"
            first.append(item)
        rec["first_mismatches"] = first
        rec["bad_rows"] = _ranges(np.unique(rows))
        rec["bad_cols"] = _ranges(np.unique(cols))
    return rec


def _num(x):
    x = x.item() if hasattr(x, "item") else x
    if isinstance(x, float) and x.is_integer() and abs(x) < 2 ** 53:
        return int(x)
    if isinstance(x, float) and x != x:
        return "nan"
    return x


def _ranges(values) -> str:
    """[0,1,2,5,7,8] -> '0-2,5,7-8'."""
    vals = [int(v) for v in values]
    out, i = [], 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        out.append(f"{vals[i]}-{vals[j]}" if j > i else f"{vals[i]}")
        i = j + 1
    return ",".join(out)
