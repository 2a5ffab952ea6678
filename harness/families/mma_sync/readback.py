"""Diff every register of every lane the kernel wrote (D, and A and B as loaded) against the reference, down to the
operand, lane, register, sub-element and matrix element."""
from __future__ import annotations

import numpy as np

from harness.contract import ranges
from harness.families.mma_sync.cases import operand_maps
from harness.families.mma_sync.reference import POISON, Prepared, from_bits, unpack

MAX_REPORTED = 8
OUTPUTS = {"D": "d_out", "A": "a_out", "B": "b_out"}


def _type(prep: Prepared, operand: str) -> str:
    f = prep.case.form
    return {"D": f.dtype, "A": f.atype, "B": f.btype}[operand]


def _bad_elements(prep: Prepared, operand: str, expected: np.ndarray, got: np.ndarray) -> np.ndarray:
    """[instances, rows, cols] True where the element differs: D by value (a -0 where the model has +0 passes, a NaN
    never does), A and B to the bit (they are moved, not computed)."""
    fm = operand_maps(prep.case.key)[operand]
    eb, gb = unpack(fm, expected), unpack(fm, got)
    if operand != "D" or _type(prep, operand) == "s32":
        return eb != gb
    t = _type(prep, operand)
    with np.errstate(invalid="ignore"):
        return ~(from_bits(t, eb) == from_bits(t, gb))


def _differs(prep: Prepared, want: dict, outs: dict) -> int:
    """Elements of D, A and B that differ from `want` (the launch's registers of one case in `outs`)."""
    total = 0
    for op in OUTPUTS:
        if not np.array_equal(want[op], outs[op]):
            total += int(_bad_elements(prep, op, want[op], outs[op]).sum())
    return total


def _value(t: str, bits) -> object:
    v = from_bits(t, np.asarray([bits], np.uint64))[0].item()
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:
        return int(v)
    return v


def _where(prep: Prepared, outs: dict) -> dict:
    """The first mismatching elements (operand, lane, register, sub-element, row, col, expected, got) and the lanes,
    registers and operands that hold any."""
    first, lanes, regs, operands = [], set(), set(), []
    for op in OUTPUTS:
        want, got = prep.expected[op], outs[op]
        if np.array_equal(want, got):
            continue
        fm = operand_maps(prep.case.key)[op]
        bad = _bad_elements(prep, op, want, got)
        if not bad.any():
            continue
        operands.append(op)
        eb, gb = unpack(fm, want), unpack(fm, got)
        t = _type(prep, op)
        inst, rows, cols = np.nonzero(bad)
        lane, reg, sub = fm.locate(rows, cols, inst)
        lanes.update(lane.tolist())
        regs.update(reg.tolist())
        for i in range(len(rows)):
            if len(first) >= MAX_REPORTED:
                break
            item = {"operand": op, "lane": int(lane[i]), "register": int(reg[i]), "sub": int(sub[i]),
                    "row": int(rows[i]), "col": int(cols[i]),
                    "expected": _value(t, eb[inst[i], rows[i], cols[i]]),
                    "got": _value(t, gb[inst[i], rows[i], cols[i]]),
                    "got_bits": f"0x{int(gb[inst[i], rows[i], cols[i]]):x}"}
            if fm.instances > 1:
                item["instance"] = int(inst[i])
            first.append(item)
    return {"first_mismatches": first, "bad_operands": ",".join(operands), "bad_lanes": ranges(sorted(lanes)),
            "bad_registers": ranges(sorted(regs))}


def diff_launch(preps: list[Prepared], outputs: dict) -> list[dict]:
    """One record per case of a launch: outputs['d_out'|'a_out'|'b_out'] are uint32 [cases, 32, words]."""
    out = []
    for i, prep in enumerate(preps):
        case = prep.case
        outs = {op: np.asarray(outputs[name][i], np.uint32) for op, name in OUTPUTS.items()}
        rec = {"id": case.id, "variant": case.form.describe(), "a_load": case.a.tag, "b_load": case.b.tag}
        same = all(np.array_equal(prep.expected[op], outs[op]) for op in OUTPUTS)
        nbad = 0 if same else _differs(prep, prep.expected, outs)
        rec["mismatches"] = nbad
        rec["unwritten_registers"] = int(sum(((outs[op] == POISON) & (prep.expected[op] != POISON)).sum()
                                             for op in OUTPUTS))
        if case.control:
            caught = _differs(prep, prep.intended, outs) > 0
            rec.update(control=case.control, caught=caught, matches_model_prediction=nbad == 0)
            rec["status"] = "pass" if caught and nbad == 0 else "fail"
            if not caught:
                rec["why"] = f"a deliberate {case.control} gave the intended registers: the harness could not fail"
            elif nbad:
                rec["why"] = (f"the {case.control} changed the result, but not into the misread the model "
                              "predicts")
        else:
            rec["status"] = "pass" if nbad == 0 else "fail"
        if nbad:
            rec.update(_where(prep, outs))
        out.append(rec)
    return out
