"""wgmma.mma_async (sm_90a): forms, cases, reference, kernel, readback; `FAMILY` is what the engine runs."""
from __future__ import annotations

from harness.enums import Arch, FamilyName, Status
from harness.families.base import Kernel, case_record


class WgmmaFamily:
    name = FamilyName.WGMMA
    archs = (Arch.SM_90A,)
    facets = frozenset({"kind", "n", "dtype", "a_src", "data"})

    def kernels(self, arch) -> list[tuple[Kernel, list]]:
        from harness.families.wgmma import cases, forms
        if arch not in self.archs:
            return []
        return [(self.kernel_of(key), cases.cases_for_key(key, ("exact", "normal"), True))
                for key in forms.all_kernel_keys()]

    def kernel_of(self, key) -> Kernel:
        """The kernel of a wgmma kernel key (probes build keys of their own)."""
        return Kernel(self.name, Arch.SM_90A, key.name, key)

    @staticmethod
    def facets_of(case) -> dict:
        k = case.key
        return {"kind": k.kind, "n": k.n, "dtype": k.dtype, "a_src": k.a_src, "data": case.data,
                "control": bool(case.control)}

    def source(self, kernel: Kernel) -> str:
        from harness.families.wgmma import kernel as wk
        return wk.source(kernel.form)

    def prepare(self, kernel: Kernel, cases: list):
        from harness.families.wgmma import kernel as wk, reference
        preps = [reference.prepare(c) for c in cases]
        return wk.pack(preps), [p.slim() for p in preps]

    def readback(self, kernel: Kernel, expectations: list, outputs: dict) -> list[dict]:
        from harness.families.wgmma import readback
        return [case_record(r["id"], kernel, r["status"], **{k: v for k, v in r.items()
                                                              if k not in ("id", "status", "kernel")})
                for r in readback.diff_launch(expectations, outputs["d_out"])]

    @staticmethod
    def case_fields(case) -> dict:
        return {}

    def diagnose(self, kernel: Kernel, cases: list, cubin_path, worker, timeout: float, png_dir) -> list[dict]:
        from harness.diagnosis import diagnose
        return diagnose.diagnose(cases, lambda _key: cubin_path, worker, timeout, png_dir)


FAMILY = WgmmaFamily()
__all__ = ["FAMILY", "Status"]
