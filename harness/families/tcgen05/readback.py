"""Tensor Memory read back -> D values through the data-path model -> one record per case."""
from __future__ import annotations

import numpy as np

from harness.families.tcgen05.cases import CONTROL_PREDICTION, MODELS_BUG, OBSERVATIONS, TcCase
from harness.families.tcgen05.datapaths import d_position, decode_d
from harness.families.tcgen05.kernel import STATUS_NOT_OBSERVED
from harness.families.tcgen05.reference import TMEM_POISON, TcPrepared

# ---------------------------------------------------------------------------------------------------- diff

def poisoned(c: TcCase, tmem_out: np.ndarray) -> np.ndarray:
    """[m, n]: D elements whose Tensor Memory cell still holds the poison stored before the MMA (the element's own
    bits: an f16 accumulator's low half)."""
    cta, lane, col, half = d_position(c.m, c.n, c.form.cta_group, c.form.ws, c.dtype)
    cells = np.asarray(tmem_out, np.uint64)[cta, lane, col]
    if c.dtype == "f16":
        return ((cells >> (16 * half).astype(np.uint64)) & np.uint64(0xFFFF)) == (TMEM_POISON & 0xFFFF)
    return cells == TMEM_POISON


def control_fields(c: TcCase) -> dict:
    """What a negative control's every record says: the control, and the public bug it models, if any."""
    if not c.control:
        return {}
    name = c.control.partition("@")[0]
    return {"control": c.control, **({"models_bug": MODELS_BUG[name]} if name in MODELS_BUG else {})}


def settle_failed_launch(c: TcCase, rec: dict) -> dict:
    """A control whose encoding the ISA leaves undefined is caught when its launch faults or hangs: the engine's
    fault / timeout record becomes a pass that says so; an observation's becomes `observed`, saying what happened.
    Every other record is returned as it is."""
    name = c.control.partition("@")[0]
    if rec["status"] not in ("fault", "timeout") or CONTROL_PREDICTION.get(name) not in ("undefined", "observation") \
            or rec.get("isolated") is False:  # a launch of several cases that faulted as a whole: not the control's
        return {**rec, **control_fields(c)}
    if name in OBSERVATIONS:
        return {**rec, **control_fields(c), "status": "observed", "launch_status": rec["status"],
                "observation": f"the launch {'faulted' if rec['status'] == 'fault' else 'hung'}: "
                               f"{rec.get('error', '')}".rstrip(": ")}
    return {**rec, **control_fields(c), "status": "pass", "caught": True, "prediction": "undefined",
            "caught_by": "fault" if rec["status"] == "fault" else "hang", "launch_status": rec["status"],
            "matches_model_prediction": None}


def diff(prep: TcPrepared, tmem_out: np.ndarray, status) -> dict:
    c = prep.case
    rec = {"id": c.id, "kernel": c.form.name, "family": "tcgen05"}
    rec.update(control_fields(c))
    observation = c.control.partition("@")[0] in OBSERVATIONS
    if observation:  # recorded, never a pass or a fail (the ISA predicts nothing this harness could check)
        rec.update({"status": "observed", "prediction": "observation"})
        st = int(np.max(status))
        if st == STATUS_NOT_OBSERVED:
            return {**rec, "observation": "not made: this toolchain's ptxas has no -g-tmem-access-check, so the "
                                          "kernel did not touch Tensor Memory beyond its allocation"}
        if st:
            return {**rec, "observation": "the MMA's mbarrier never completed (a hang)"}
        got = decode_d(c, tmem_out)
        same = bool(np.array_equal(got, prep.intended))
        return {**rec, "observation": "the intended product" if same else
                f"not the intended product: {int(np.sum(~(got == prep.intended)))} of {got.size} elements differ"}
    if int(np.max(status)):
        if c.control and prep.prediction == "undefined":  # a hang is one way an undefined encoding is caught
            return {**rec, "status": "pass", "caught": True, "caught_by": "hang", "prediction": "undefined",
                    "matches_model_prediction": None, "mismatches": 0}
        return {**rec, "status": "timeout", "error": "the MMA's mbarrier never completed within the spin limit"}
    got = decode_d(c, tmem_out)
    stale = poisoned(c, tmem_out)
    keep = prep.keeps_poison if prep.keeps_poison is not None else np.zeros(got.shape, bool)
    # elements the ISA leaves undefined (a shift's incoming row) are compared with nothing, and the record says so
    skip = prep.unchecked if prep.unchecked is not None else np.zeros(got.shape, bool)
    bad = np.where(keep, ~stale, ~(got == prep.expected) | stale) & ~skip
    n = int(bad.sum())
    rec.update({"status": "pass" if n == 0 else "fail", "mismatches": n})
    if skip.any():
        rec.update({"not_checked": int(skip.sum()), "not_checked_why": prep.unchecked_why})
    unwritten = int((stale & ~keep & ~skip).sum())
    if unwritten:
        rec["unwritten"] = unwritten
        rec["unwritten_why"] = (f"{unwritten} D elements still hold the Tensor Memory poison stored before the MMA "
                                f"(0x{TMEM_POISON:08x}): the MMA did not write them")
    if c.control:  # caught means: not the intended product, and (where the model predicts one) the predicted misread
        caught = bool(np.any(~(got == prep.intended) | stale))
        exact = prep.prediction == "exact"
        rec.update({"control": c.control, "caught": caught, "prediction": prep.prediction,
                    "matches_model_prediction": (n == 0) if exact else None})
        rec["status"] = "pass" if caught and (n == 0 or not exact) else "fail"
        if not caught:
            rec["why"] = "a deliberately wrong descriptor gave the intended product: the harness could not fail"
        if not exact:
            rec["mismatches"] = 0
    if n:
        cta, lane, col, _ = d_position(c.m, c.n, c.form.cta_group, c.form.ws, c.dtype)
        rows, cols = np.nonzero(bad)
        rec["first_mismatches"] = [{"row": int(r), "col": int(k), "cta": int(cta[r, k]), "lane": int(lane[r, k]),
                                    "tmem_column": int(col[r, k]), "expected": float(prep.expected[r, k]),
                                    "got": float(got[r, k])} for r, k in list(zip(rows, cols))[:8]]
    return rec

