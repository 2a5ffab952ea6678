"""A fifth instruction family, kept outside harness/, on an arch the harness has never heard of: sm_777x, run by
GPUs of compute capability 77.7 (a name NVIDIA's rules say nothing about, so the family declares it:
arch_compute_capabilities). It has facets of its own (kind `add` or `add3`, N, an s32 accumulator), a negative
control, and mismatch coordinates of its own (warp, slot). Each case adds two int32 vectors of 128 lanes and a bias
(the kind's: 0 or 3) on tests/simulated/toy_device.py. TC_FIFTH_WRONG lists case ids whose expectation is made one
off, so a test plants failures without a device of its own. Registered with
TC_HARNESS_FAMILIES="fifth=tests.simulated.fifth_family"; tests/test_fifth_family.py runs it through the command
line, and nothing in harness/ names it or its arch."""
import os
from dataclasses import dataclass

import numpy as np

from harness.contract import Kernel, case_record
from tests.simulated.toy_family import PlainFamily, SeededCase, ToyExpectation, toy_launch

ENV = "fifth=tests.simulated.fifth_family"
ARCH = "sm_777x"
WRONG = "TC_FIFTH_WRONG"
BIAS = {"add": 0, "add3": 3}


@dataclass(frozen=True)
class FifthCase(SeededCase):
    kind: str
    n: int
    control: str = ""  # "wrong-bias": launched with the bias one off, caught when the result is not the intended one

    @property
    def id(self) -> str:
        return f"fifth-{self.kind}-n{self.n}" + (f"-neg-{self.control}" if self.control else "")



class FifthFamily(PlainFamily):
    name = "fifth"
    archs = (ARCH,)
    arch_compute_capabilities = {ARCH: ("77.7",)}
    facets = frozenset({"kind", "n", "dtype"})

    def kernels(self, arch):
        if arch not in self.archs:
            return []
        return [(Kernel(self.name, arch, f"fifth_{kind}", kind),
                 [FifthCase(kind, n) for n in (8, 64)] + [FifthCase(kind, 8, "wrong-bias")]) for kind in BIAS]

    @staticmethod
    def facet_values():
        return {"kind": tuple(BIAS), "dtype": ("s32",)}

    @staticmethod
    def facets_of(case):
        return {"kind": case.kind, "n": case.n, "dtype": "s32", "control": bool(case.control)}

    def source(self, kernel):
        return f'extern "C" __global__ void {kernel.name}() {{}}'

    def prepare(self, kernel, cases):
        wrong = set(filter(None, os.environ.get(WRONG, "").split(",")))
        launch, sums = toy_launch(cases, lambda c: BIAS[c.kind] + bool(c.control))
        return launch, [ToyExpectation(c, s + BIAS[c.kind] + (c.id in wrong)) for c, s in zip(cases, sums)]

    def readback(self, kernel, expectations, outputs):
        out = []
        for e, got in zip(expectations, outputs["out"]):
            lanes = np.nonzero(got != e.expected)[0]
            if e.case.control:  # caught: the launch's wrong bias shows in every lane
                out.append(case_record(e.case.id, kernel, "pass" if len(lanes) == 128 else "fail",
                                       control=e.case.control, caught=len(lanes) == 128))
                continue
            rec = case_record(e.case.id, kernel, "fail" if len(lanes) else "pass", mismatches=int(len(lanes)))
            if len(lanes):
                rec["first_mismatches"] = [{"warp": int(x) // 32, "slot": int(x) % 32, "row": 0, "col": int(x),
                                            "expected": int(e.expected[x]), "got": int(got[x])} for x in lanes[:3]]
            out.append(rec)
        return out


FAMILY = FifthFamily()
