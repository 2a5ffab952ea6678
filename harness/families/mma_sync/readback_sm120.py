"""Diff every register of every lane an sm_120a kernel wrote against reference_sm120's expectation, down to the lane,
register and matrix element: D of an mma case by value (f32 / f16: a -0 where the model has +0 passes, a NaN, the
poison included, never does), the sub-byte ldmatrix's registers byte by byte (each byte one element's code) and its
registers past .x{num} word by word (they must keep the poison)."""
from __future__ import annotations

import numpy as np

from harness.contract import ranges
from harness.families.mma_sync import block_scaled as BS
from harness.families.mma_sync.reference import POISON, from_bits
from harness.families.mma_sync.reference_sm120 import Sm120Prepared

MAX_REPORTED = 8


def _number(x: float) -> object:
    if x != x:
        return "nan"
    return int(x) if float(x).is_integer() and abs(x) < 2 ** 53 else float(x)


def _mma_where(prep: Sm120Prepared, got: np.ndarray) -> tuple[int, dict]:
    """(elements of D that differ, the record's fields naming them)."""
    form = prep.case.variant
    fm = BS.acc_map(form)
    eb, gb = BS.unpack_registers(fm, prep.expected), BS.unpack_registers(fm, got)
    with np.errstate(invalid="ignore"):
        ev, gv = from_bits(form.dtype, eb), from_bits(form.dtype, gb)
        bad = ~(ev == gv)
    if not bad.any():
        return 0, {}
    rows, cols = np.nonzero(bad)
    lane, reg, sub = fm.locate(rows, cols)
    first = [{"operand": "D", "lane": int(lane[i]), "register": int(reg[i]), "sub": int(sub[i]), "row": int(rows[i]),
              "col": int(cols[i]), "expected": _number(ev[rows[i], cols[i]]), "got": _number(gv[rows[i], cols[i]]),
              "got_bits": f"0x{int(gb[rows[i], cols[i]]):x}"} for i in range(min(len(rows), MAX_REPORTED))]
    # a misread scale factor spoils whole rows (A's) or columns (B's) of a chunk: the rows and columns say which
    return int(bad.sum()), {"first_mismatches": first, "bad_operands": "D", "bad_lanes": ranges(sorted(set(
        lane.tolist()))), "bad_registers": ranges(sorted(set(reg.tolist()))), "bad_rows": ranges(sorted(set(
        rows.tolist()))), "bad_cols": ranges(sorted(set(cols.tolist())))}


def _ldmatrix_where(prep: Sm120Prepared, got: np.ndarray) -> tuple[int, dict]:
    """(bytes of the loaded registers and words past .x{num} that differ, the record's fields naming them)."""
    load = prep.case.variant
    want = prep.expected
    eb = (want[:, :load.num, None] >> (8 * np.arange(4, dtype=np.uint32))) & 0xFF
    gb = (got[:, :load.num, None] >> (8 * np.arange(4, dtype=np.uint32))) & 0xFF
    lanes, regs, bytes_ = np.nonzero(eb != gb)
    extra_lanes, extra_regs = np.nonzero(want[:, load.num:] != got[:, load.num:])
    extra_regs = extra_regs + load.num
    nbad = len(lanes) + len(extra_lanes)
    if not nbad:
        return 0, {}
    matrix, row, element = load.elements
    first = [{"operand": "ldmatrix", "lane": int(lanes[i]), "register": int(regs[i]), "byte": int(bytes_[i]),
              "matrix": int(matrix[lanes[i], regs[i], bytes_[i]]), "row": int(row[lanes[i], regs[i], bytes_[i]]),
              "element": int(element[lanes[i], regs[i], bytes_[i]]), "expected": int(eb[lanes[i], regs[i], bytes_[i]]),
              "got": int(gb[lanes[i], regs[i], bytes_[i]])} for i in range(min(len(lanes), MAX_REPORTED))]
    first += [{"operand": "ldmatrix", "lane": int(extra_lanes[i]), "register": int(extra_regs[i]),
               "expected": f"0x{POISON:x} (no register .x{load.num} loads)",
               "got": f"0x{int(got[extra_lanes[i], extra_regs[i]]):x}"}
              for i in range(min(len(extra_lanes), MAX_REPORTED - len(first)))]
    all_lanes = sorted(set(lanes.tolist()) | set(extra_lanes.tolist()))
    all_regs = sorted(set(regs.tolist()) | set(extra_regs.tolist()))
    return nbad, {"first_mismatches": first, "bad_operands": "ldmatrix", "bad_lanes": ranges(all_lanes),
                  "bad_registers": ranges(all_regs)}


def diff_launch(preps: list[Sm120Prepared], outputs: dict) -> list[dict]:
    """One record per case of a launch: outputs['d_out'] is uint32 [cases, 32, D words]."""
    out = []
    for i, prep in enumerate(preps):
        case = prep.case
        got = np.asarray(outputs["d_out"][i], np.uint32)
        v = case.variant
        rec = {"id": case.id, "variant": v.instruction() if case.key.group == "ldmatrix" else v.describe()}
        same = np.array_equal(prep.expected, got)
        nbad, where = (0, {}) if same else (_ldmatrix_where if case.key.group == "ldmatrix" else _mma_where)(prep,
                                                                                                            got)
        if not same and not nbad:  # words differ in bits that carry no element, or only in the sign of a zero
            rec["note"] = "D differs from the model's registers only in the sign of zeros"
        rec["mismatches"] = nbad
        rec["unwritten_registers"] = int(((got == POISON) & (prep.expected != POISON)).sum())
        rec["status"] = "pass" if nbad == 0 else "fail"
        rec.update(where)
        out.append(rec)
    return out
