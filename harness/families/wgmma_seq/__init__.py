"""wgmma_seq (sm_90a): sequences of wgmma.mma_async in one kernel, each modelled on a public bug class (README,
"Bug classes"): a K-loop into one accumulator with the descriptors advanced by add or by or, the RS pipeline
(next step's A registers loaded while the previous wgmma is in flight) and two warpgroups per CTA (M = 128).
Forms, cases, reference, kernel, readback as in the dense family, whose spec models, descriptor encoder and
asm statements it reuses; `FAMILY` is what the engine runs."""
from __future__ import annotations

from harness.contract import Kernel, case_record
from harness.enums import Arch, FamilyName
from harness.families.wgmma import WgmmaFamily


class WgmmaSeqFamily:
    name = FamilyName.WGMMA_SEQ
    archs = (Arch.SM_90A,)
    facets = frozenset({"kind", "n", "dtype", "a_src", "data"})
    # full optimization: the RS pipeline's wait_group 1 between steps is what it tests, and NVRTC 13's fast-compile
    # level makes every one a wait_group 0 (the CPU note 2026-11-27 fast-compile.txt in docs/performance.md); its SASS
    # check asks for them
    fast_compile = False

    def kernels(self, arch) -> list[tuple[Kernel, list]]:
        return [(k, self.kernel_cases(k)) for k in self.kernel_list(arch)]

    @staticmethod
    def kernel_cases(kernel: Kernel) -> list:
        """The cases of one sequence kernel."""
        from harness.families.wgmma_seq import cases
        return cases.cases_for_key(kernel.form)

    def kernel_list(self, arch) -> list[Kernel]:
        from harness.families.wgmma_seq import forms
        if arch not in self.archs:
            return []
        return [Kernel(self.name, Arch.SM_90A, key.name, key) for key in forms.all_keys()]

    def facet_values(self) -> dict:
        """The values its cases' facets take (harness.plan.facet_choices): its kernels' instructions', read off the
        kernel list (no case is built); every case's data is exact; N is any number."""
        values: dict = {}
        for k in self.kernel_list(Arch.SM_90A):
            for facet, v in self.kernel_facets_of(k).items():
                if facet != "n":
                    values.setdefault(facet, {})[v] = None
        return {**{facet: tuple(vs) for facet, vs in values.items()}, "data": ("exact",)}

    @staticmethod
    def kernel_facets_of(kernel: Kernel) -> dict:
        """The facets every case of the kernel has: its steps' instruction's (a case's key is its kernel's form)."""
        return WgmmaFamily.key_facets(kernel.form.inst)

    @staticmethod
    def facets_of(case) -> dict:
        return {**WgmmaFamily.key_facets(case.key.inst), "data": case.data, "control": case.control is not None}

    def source(self, kernel: Kernel) -> str:
        from harness.families.wgmma_seq import kernel as sk
        return sk.source(kernel.form)

    def prepare(self, kernel: Kernel, cases: list):
        from harness.families.wgmma_seq import kernel as sk, reference
        preps = [reference.prepare(c) for c in cases]
        return sk.pack(preps), [p.slim() for p in preps]

    def readback(self, kernel: Kernel, expectations: list, outputs: dict) -> list[dict]:
        from harness.families.wgmma_seq import readback
        return [case_record(r["id"], kernel, r["status"], **{k: v for k, v in r.items() if k not in ("id", "status")})
                for r in readback.diff_launch(expectations, outputs["d_out"])]

    @staticmethod
    def case_fields(case) -> dict:
        return {}

    def sass_check(self, kernel: Kernel):
        from harness.families.wgmma_seq import kernel as sk
        return sk.sass_check(kernel.form)

    @staticmethod
    def settle_control(case, record: dict) -> dict:
        return record  # every sequence control predicts an exact misread: a fault is not a catch

    def diagnose(self, kernel: Kernel, cases: list, cubin_path, device, timeout: float, png_dir) -> list[dict]:
        """No probe of its own: a failing sequence case names its pattern, step arithmetic and tiles in its id,
        and the dense family's address and fragment probes (`python -m harness probe addresses`) explain a
        single instruction on the same layouts."""
        return []


FAMILY = WgmmaSeqFamily()
