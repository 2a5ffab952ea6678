"""Diff device accumulators against the reference, down to thread, register and element."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from harness.contract import ranges
from harness.spec import fragments
from harness.families.wgmma.reference import POISON, Prepared

MAX_REPORTED = 8


@lru_cache(maxsize=None)
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
    return diff_launch([prep], np.asarray(regs)[None])[0]


@lru_cache(maxsize=None)
def _d_gather(n: int, dtype: str):
    """For each accumulator element in row-major order: its flat register index (thread * regs + reg) and
    the bit shift of its field, so a whole launch decodes with one gather along one axis."""
    frag = fragments.wgmma_d_fragment(n, dtype)
    flat = np.zeros((64, n), np.int64)
    shift = np.zeros((64, n), np.uint32)
    t = np.broadcast_to(np.arange(128)[:, None], frag.row.shape)
    flat[frag.row, frag.col] = t * frag.regs_per_thread + frag.reg
    shift[frag.row, frag.col] = frag.shift
    return flat.ravel(), shift.ravel(), np.uint32((1 << frag.bits) - 1 if frag.bits < 32 else 0xFFFFFFFF)


def decode_launch(key, regs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Registers of a whole launch, uint32 [cases, 128, acc_regs] -> (values, raw bits), [cases, 64, N]."""
    flat, shift, mask = _d_gather(key.n, key.dtype)
    r = np.asarray(regs, dtype=np.uint32).reshape(len(regs), -1)
    bits = ((r[:, flat] >> shift) & mask).reshape(len(regs), 64, key.n)
    if key.dtype == "s32":
        return bits.view(np.int32), bits
    if key.dtype == "f32":
        return bits.view(np.float32), bits
    return bits.astype(np.uint16).view(np.float16), bits  # f16: the half each element sits in


def diff_launch(preps: list[Prepared], regs: np.ndarray) -> list[dict]:
    """Result records of every case of one launch.

    Fast path: an exact case whose registers equal, bit for bit, the expected registers (the reference
    gathered through the fragment model) passes with one vectorised comparison over the whole launch.
    Every other case (random-normal data, negative controls, any bit that differs) is decoded and compared
    by value, so a -0 where the model has +0 still passes, and a failure is located."""
    regs = np.asarray(regs, dtype=np.uint32)
    fast = np.array([p.expected_regs is not None and not p.case.control for p in preps])
    same = np.zeros(len(preps), bool)
    if fast.any():
        exp = np.stack([p.expected_regs for p, f in zip(preps, fast) if f])
        same[fast] = (regs[fast] == exp).all(axis=(1, 2))
    out: list[dict | None] = [None] * len(preps)
    for i in np.flatnonzero(same):
        case = preps[i].case
        out[i] = {**_record(case, 0, 0), "status": "pass"}
    rest = np.flatnonzero(~same)
    if rest.size:
        for i, rec in zip(rest, _diff_by_value([preps[i] for i in rest], regs[rest])):
            out[i] = rec
    return out  # type: ignore[return-value]


def expected_of(prep: Prepared) -> np.ndarray:
    """A case's expected values, M x N: its own, or, where slim() left them out (an exact case), its expected
    registers decoded as the device's are (the same values: the registers are their bits)."""
    if prep.expected is not None:
        return prep.expected
    return decode_launch(prep.case.key, prep.expected_regs[None])[0][0]


def _record(case, mismatches: int, unwritten: int) -> dict:
    return {"id": case.id, "kernel": case.key.name, "variant": case.variant_index, "data": case.data,
            "mismatches": mismatches, "unwritten_registers": unwritten}


def _diff_by_value(preps: list[Prepared], regs: np.ndarray) -> list[dict]:
    key = preps[0].case.key
    got, got_bits = decode_launch(key, regs)
    expected = np.stack([expected_of(p) for p in preps])
    normal = np.array([p.tolerance is not None for p in preps])
    with np.errstate(invalid="ignore"):
        bad = ~(got == expected)  # value equality: NaN never passes, -0 == +0
        if normal.any():
            tol = np.stack([p.tolerance for p in preps if p.tolerance is not None])
            bad[normal] = ~(np.abs(got[normal] - expected[normal]) <= tol)
    nbad = bad.sum(axis=(1, 2))
    unwritten = ((np.asarray(regs) == POISON).sum(axis=(1, 2)) if key.dtype != "s32"
                 else np.zeros(len(preps), np.int64))
    out = []
    for i, prep in enumerate(preps):
        case = prep.case
        rec = _record(case, int(nbad[i]), int(unwritten[i]))
        if case.control:
            with np.errstate(invalid="ignore"):
                differs = bool(np.any(~(got[i] == prep.intended)))
            rec["control"] = case.control
            rec["caught"] = differs
            rec["matches_model_prediction"] = bool(nbad[i] == 0)
            # caught as predicted: not the intended product, and exactly the misread the layout model predicts
            # (a control that merely differs could hide a model that is wrong in the same place as the hardware)
            rec["status"] = "pass" if differs and nbad[i] == 0 else "fail"
            if not differs:
                rec["why"] = (f"a deliberately wrong {case.control_input} gave the intended product: the harness "
                              "could not fail")
            elif nbad[i]:
                rec["why"] = (f"the wrong {case.control_input} changed the result, but not into the misread the "
                              "model predicts")
        else:
            rec["status"] = "pass" if nbad[i] == 0 else "fail"
        if nbad[i]:
            rec.update(_where(prep, bad[i], got[i], got_bits[i], expected[i]))
        out.append(rec)
    return out


def _where(prep: Prepared, bad, got, got_bits, expected) -> dict:
    """Which threads / registers / rows / cols are wrong: the first few, and the row and column ranges."""
    case = prep.case
    thread, reg, half = _d_owner(case.key.n, case.key.dtype)
    rows, cols = np.nonzero(bad)
    first = []
    for r, c in list(zip(rows.tolist(), cols.tolist()))[:MAX_REPORTED]:
        item = {"thread": int(thread[r, c]), "register": int(reg[r, c]), "row": r, "col": c,
                "expected": _num(expected[r, c]), "got": _num(got[r, c]),
                "got_bits": f"0x{int(got_bits[r, c]):x}"}
        if case.key.dtype == "f16":
            item["half"] = "lo" if half[r, c] == 0 else "hi"
        first.append(item)
    return {"first_mismatches": first, "bad_rows": ranges(np.unique(rows)), "bad_cols": ranges(np.unique(cols)),
            "bad_threads": ranges(np.unique(thread[rows, cols])),
            "bad_registers": ranges(np.unique(reg[rows, cols]))}


def _num(x):
    x = x.item() if hasattr(x, "item") else x
    if isinstance(x, float) and x.is_integer() and abs(x) < 2 ** 53:
        return int(x)
    if isinstance(x, float) and x != x:
        return "nan"
    return x
