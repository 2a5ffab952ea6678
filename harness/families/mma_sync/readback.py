"""Diff every register of every lane the kernel wrote (D, and A and B as loaded) against the reference, down to the
operand, lane, register, sub-element and matrix element."""
from __future__ import annotations

import numpy as np

from harness.contract import ranges
from harness.families.mma_sync.cases import form_maps
from harness.families.mma_sync.reference import POISON, Prepared, from_bits, unpack

MAX_REPORTED = 8
OUTPUTS = {"D": "d_out", "A": "a_out", "B": "b_out"}


def _type(prep: Prepared, operand: str) -> str:
    f = prep.case.form
    return {"D": f.dtype, "A": f.atype, "B": f.btype}[operand]


def _bad_elements(prep: Prepared, operand: str, expected: np.ndarray, got: np.ndarray) -> np.ndarray:
    """[instances, rows, cols] True where the element differs: D by value (a -0 where the model has +0 passes, a NaN
    never does), A and B to the bit (they are moved, not computed)."""
    fm = form_maps(prep.case.form)[operand]
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
        fm = form_maps(prep.case.form)[op]
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


def _tile_bad(prep: Prepared, want: np.ndarray | None, got: np.ndarray | None) -> int:
    """Bytes of the stmatrix tile copy-out (poison after the tile included) that differ from `want`; 0 for a case
    that stores nothing."""
    if want is None or got is None:
        return 0
    return int((np.asarray(want, np.uint32).view(np.uint8) != np.asarray(got, np.uint32).view(np.uint8)).sum())


def _tile_where(prep: Prepared, got: np.ndarray) -> dict:
    """The first differing bytes of the tile: (tile row, byte in the row, expected, got)."""
    pitch = int(prep.st_pitch) if prep.st_pitch else 16
    want, have = np.asarray(prep.st_expected, np.uint32).view(np.uint8), np.asarray(got, np.uint32).view(np.uint8)
    bad = np.nonzero(want != have)[0]
    return {"st_first_mismatches": [{"operand": "D-tile", "row": int(b // pitch), "col": int(b % pitch),
                                     "expected": int(want[b]), "got": int(have[b])} for b in bad[:MAX_REPORTED]],
            "st_bad_rows": ranges(sorted({int(b // pitch) for b in bad}))}


def diff_launch(preps: list[Prepared], outputs: dict) -> list[dict]:
    """One record per case of a launch: outputs['d_out'|'a_out'|'b_out'] are uint32 [cases, 32, words]."""
    out = []
    for i, prep in enumerate(preps):
        case = prep.case
        outs = {op: np.asarray(outputs[name][i], np.uint32) for op, name in OUTPUTS.items()}
        tile = np.asarray(outputs["st_out"][i], np.uint32) if "st_out" in outputs else None
        rec = {"id": case.id, "variant": case.form.describe(), "a_load": case.a.tag, "b_load": case.b.tag}
        if case.st.num:
            rec["d_store"] = case.st.tag
        same = all(np.array_equal(prep.expected[op], outs[op]) for op in OUTPUTS)
        nbad = 0 if same else _differs(prep, prep.expected, outs)
        tile_bad = _tile_bad(prep, prep.st_expected, tile)
        if prep.st_expected is not None:
            rec["st_mismatched_bytes"] = tile_bad
        nbad += tile_bad
        rec["mismatches"] = nbad
        rec["unwritten_registers"] = int(sum(((outs[op] == POISON) & (prep.expected[op] != POISON)).sum()
                                             for op in OUTPUTS))
        if case.control:
            caught = _differs(prep, prep.intended, outs) > 0 or _tile_bad(
                prep, prep.st_intended if prep.st_intended is not None else prep.st_expected, tile) > 0
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
        if tile_bad:
            rec.update(_tile_where(prep, tile))
            rec["bad_operands"] = ",".join(x for x in (rec.get("bad_operands"), "D-tile") if x)
        out.append(rec)
    return out
