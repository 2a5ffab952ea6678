"""tcgen05.mma (sm_100a, sm_103a): forms, cases and their Tensor Memory data paths, kernel, readback;
`FAMILY` is what the engine runs."""
from __future__ import annotations

from harness.enums import Arch, FamilyName
from harness.families.base import Kernel, case_record


class Tcgen05Family:
    name = FamilyName.TCGEN05
    archs = (Arch.SM_100A, Arch.SM_103A)
    facets = frozenset({"kind", "n", "dtype", "a_src", "cta_group", "data"})

    def kernels(self, arch) -> list[tuple[Kernel, list]]:
        from harness.families.tcgen05 import cases
        if arch not in self.archs:
            return []
        return [(Kernel(self.name, Arch(arch), f.name, f), cases.cases_for_form(f)) for f in cases.forms_for(arch)]

    @staticmethod
    def facets_of(case) -> dict:
        f = case.form
        return {"kind": f.kind, "n": case.n, "dtype": case.dtype, "a_src": f.a_src, "cta_group": f.cta_group,
                "data": "exact", "control": bool(getattr(case, "control", ""))}

    def source(self, kernel: Kernel) -> str:
        from harness.families.tcgen05 import kernel as tk
        return tk.source(kernel.form)

    def prepare(self, kernel: Kernel, cases: list):
        from harness.families.tcgen05 import kernel as tk, reference as R
        preps = [R.prepare(c, str(kernel.arch)) for c in cases]
        inp = tk.pack(preps)
        for p in preps:  # the diff needs only the expectation and where D sits
            p.images, p.tmem_in = [], None
        return inp, preps

    def readback(self, kernel: Kernel, expectations: list, outputs: dict) -> list[dict]:
        from harness.families.tcgen05 import readback as RB
        tmem, status = outputs["tmem_out"], outputs["status"]
        out, j = [], 0
        for p in expectations:
            k = p.case.form.cta_group
            r = RB.diff(p, tmem[j:j + k, :, :p.read_cols], status[j:j + k])
            out.append(case_record(r["id"], kernel, r["status"],
                                   **{k2: v for k2, v in r.items() if k2 not in ("id", "status", "kernel", "family")}))
            j += k
        return out

    @staticmethod
    def case_fields(case) -> dict:
        from harness.families.tcgen05 import cases as T
        reason = T.unsettled_reason(case)
        return {"unsettled": reason} if reason else {}

    @staticmethod
    def settle_control(case, record: dict) -> dict:
        """A negative control's record that the engine made (fault, timeout): caught, if the ISA predicts nothing."""
        from harness.families.tcgen05 import readback as RB
        return RB.settle_failed_launch(case, record)

    def diagnose(self, kernel: Kernel, cases: list, cubin_path, worker, timeout: float, png_dir) -> list[dict]:
        """The address probe (probe.py): per (case, operand), where the tensor core read each element from
        (shared-memory byte, or TMEM lane and column for A of a TS form), against the model and the intended
        layout; 'not-probed' records, with the reason, for what the probe does not cover; then the Tensor Memory
        probe of D (tmem_probe.py) for the cases that are not negative controls."""
        from harness.families.tcgen05 import probe, tmem_probe
        recs = probe.diagnose(kernel, cases, cubin_path, worker, timeout, png_dir)
        # and where D sits in Tensor Memory (probe 'tmem-d'), for the failing cases that are not controls
        return recs + tmem_probe.diagnose(kernel, [c for c in cases if not c.control], cubin_path, worker, timeout)


FAMILY = Tcgen05Family()
