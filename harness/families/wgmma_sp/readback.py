"""Diff device accumulators against the sparse reference: the dense family's diff (same accumulator fragments,
same verdicts for negative controls), each record also naming the case's metadata pattern and selector. (A case
whose expected value rests on an unsettled reading says so through the family's case_fields, in every record.)"""
from __future__ import annotations

import numpy as np

from harness.families.wgmma import readback as dense
from harness.families.wgmma_sp.reference import Prepared


def diff_launch(preps: list[Prepared], regs: np.ndarray) -> list[dict]:
    recs = dense.diff_launch(preps, regs)
    for p, rec in zip(preps, recs):
        rec["metadata"] = p.case.pattern
        rec["selector"] = p.case.variant.selector
    return recs
