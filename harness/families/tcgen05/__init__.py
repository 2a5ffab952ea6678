"""tcgen05.mma (sm_100a, sm_103a): forms, cases and their Tensor Memory data paths, kernel, readback;
`FAMILY` is what the engine runs."""
from __future__ import annotations

from pathlib import Path

from harness.contract import Device, Kernel, astray_in_a_storm, case_record, not_probed_in_a_storm
from harness.enums import Arch, FamilyName, OperandSource


class Tcgen05Family:
    name = FamilyName.TCGEN05
    archs = (Arch.SM_100A, Arch.SM_103A)
    facets = frozenset({"kind", "n", "dtype", "a_src", "cta_group", "data"})
    fast_compile = True  # one MMA a case, committed and waited on: no schedule is under test

    def kernels(self, arch) -> list[tuple[Kernel, list]]:
        from harness.families.tcgen05 import cases
        if arch not in self.archs:
            return []
        return [(Kernel(self.name, Arch(arch), f.name, f), cases.cases_for_form(f)) for f in cases.forms_for(arch)]

    def kernel_list(self, arch) -> list[Kernel]:
        # the forms with cases (the compile-only ones, .ws.sp, have none: tests compile them);
        # a few hundred cases, built in milliseconds
        return [k for k, cs in self.kernels(arch) if cs]

    @staticmethod
    def facet_values() -> dict:
        """The values its cases' facets take (harness.plan.facet_choices): the instruction descriptor's kinds, both
        CTA groups; N is any number."""
        from harness.spec import idesc
        return {"kind": idesc.KINDS, "dtype": ("f32", "f16", "s32"), "a_src": (str(OperandSource.SS),
                                                                           str(OperandSource.TS)),
                "cta_group": (1, 2), "data": ("exact",)}

    @staticmethod
    def facets_of(case) -> dict:
        f = case.form
        return {"kind": f.kind, "n": case.n, "dtype": case.dtype, "a_src": f.a_src, "cta_group": f.cta_group,
                "data": "exact", "control": bool(getattr(case, "control", ""))}

    def source(self, kernel: Kernel) -> str:
        from harness.families.tcgen05 import kernel as tk
        return tk.source(kernel.form)

    @staticmethod
    def compile_options(kernel: Kernel) -> tuple:
        """The TMEM-checked form's ptxas check (or, where the toolchain lacks it, the define that skips its access)."""
        from harness.families.tcgen05 import kernel as tk
        return (tk.TMEM_CHECK,) if kernel.form.tmem_check else ()

    def sass_check(self, kernel: Kernel):
        from harness.families.tcgen05 import kernel as tk
        return tk.sass_check(kernel.form, str(kernel.arch))

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

    def diagnose(self, kernel: Kernel, cases: list, cubin_path, device: Device, timeout: float,
                 png_dir) -> list[dict]:
        """The address probe (probe.py): per (case, operand), where the tensor core read each element from
        (shared-memory byte, or TMEM lane and column for A of a TS form), against the model and the intended
        layout; 'not-probed' records, with the reason, for what the probe does not cover; then, for the cases that
        are not negative controls, the Tensor Memory probe of D (tmem_probe.py: which CTA / lane / column holds
        each D element) and for the block-scaled kinds the scale-factor probe (sf_probe.py: which stored factor
        each row of A / column of B and each K block used), which reads D through the placement tmem-d found.
        In a fault storm (Device.fault_storm), a case whose address probe found an operand read astray gets no
        Tensor Memory probe: it launches on the same descriptors, so it would most likely fault too, at a second's
        cost, and could not explain a fault (its record says 'not-probed', and why). The forms the address probe does
        not cover (block scaling, a CTA pair, .ws: probe.unsupported) have no address record read astray, so their
        D and scale-factor probes run in a storm too: they are all that can be learnt of such a form."""
        from harness.families.tcgen05 import probe, sf_probe, tmem_probe
        recs = probe.diagnose(kernel, cases, cubin_path, device, timeout, png_dir,
                              cubin_of=self._sibling_cubins(kernel, cubin_path, device))
        plain = [c for c in cases if not c.control]
        astray = astray_in_a_storm(device, recs, [c.id for c in plain])
        recs += [self._tmem_not_probed(c.id, device, astray[c.id]) for c in plain if c.id in astray]
        plain = [c for c in plain if c.id not in astray]
        tmem = tmem_probe.diagnose(kernel, plain, cubin_path, device, timeout, png_dir)
        found: dict = {}  # case id -> {address-probe status: operands}, the operands not read as modelled
        for r in recs:
            if r.get("status") in ("fail", "inconclusive"):
                found.setdefault(r["id"], {}).setdefault(r["status"], []).append(r["operand"])
        for r in tmem:
            if r.get("status") == "fail" and r["id"] in found:
                what = [" and ".join(ops) + (" read elsewhere than the model puts them" if st == "fail" else
                                             " not mapped")
                        for st, ops in sorted(found[r["id"]].items(), key=lambda kv: kv[0] != "fail")]
                r["caveat"] = (f"the address probe found {'; '.join(what)}: this probe's coded operands were misread "
                               "too, so its map is not about D's placement alone")
        if not kernel.form.block_scaled:
            return recs + tmem
        by_id = {r["id"]: r for r in tmem}
        return recs + tmem + sf_probe.diagnose(kernel, plain, cubin_path, device, timeout, png_dir, by_id)

    @staticmethod
    def _tmem_not_probed(case_id: str, device: Device, address: dict) -> dict:
        """The Tensor Memory probe's record of a case of a fault storm whose address probe found an operand read
        astray."""
        return {"type": "diagnosis", "family": "tcgen05", "id": case_id, "operand": "D", "probe": "tmem-d",
                "status": "not-probed",
                "summary": not_probed_in_a_storm(device, address, "tmem-d",
                                                 "This probe's launch reads its operands through the same "
                                                 "descriptors, so it would most likely fault too, at the cost of a "
                                                 "fresh CUDA context, and could not explain a fault")}

    @staticmethod
    def _sibling_cubins(kernel: Kernel, cubin_path, device: Device):
        """cubin_of(form) for the address probe: this kernel's cubin, or a sibling form's (an SS form's TS form, which
        probes B apart from A's addresses), compiled, or taken from the cache, on demand (the device's `compile`). A
        simulated device loads no cubin (its path names no file, and carries the device's planted misreadings): every
        form gets that path."""
        def cubin_of(form):
            if form == kernel.form or not Path(str(cubin_path)).is_file():
                return cubin_path
            return device.compile(Kernel(kernel.family, kernel.arch, form.name, form))
        return cubin_of


FAMILY = Tcgen05Family()
