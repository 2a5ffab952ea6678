"""wgmma.mma_async.sp (sm_90a), the structured-sparse A forms: forms, cases, reference, kernel, readback;
`FAMILY` is what the engine runs. Built on the dense family (harness.families.wgmma): its layouts, fragments,
kernel template, launch and diff, with the sparsity model of harness.spec.sparsity."""
from __future__ import annotations

from harness.enums import Arch, FamilyName
from harness.families.base import Kernel, case_record


class WgmmaSparseFamily:
    name = FamilyName.WGMMA_SP
    archs = (Arch.SM_90A,)
    facets = frozenset({"kind", "n", "dtype", "a_src", "data"})

    def kernels(self, arch) -> list[tuple[Kernel, list]]:
        from harness.families.wgmma_sp import cases, forms
        if arch not in self.archs:
            return []
        return [(self.kernel_of(key), cases.cases_for_key(key, ("exact", "normal"), True))
                for key in forms.all_kernel_keys()]

    def kernel_of(self, key) -> Kernel:
        return Kernel(self.name, Arch.SM_90A, key.name, key)

    @staticmethod
    def facets_of(case) -> dict:
        k = case.key
        return {"kind": k.kind, "n": k.n, "dtype": k.dtype, "a_src": k.a_src, "data": case.data,
                "control": bool(case.control)}

    def source(self, kernel: Kernel) -> str:
        from harness.families.wgmma_sp import kernel as sk
        return sk.source(kernel.form)

    def prepare(self, kernel: Kernel, cases: list):
        from harness.families.wgmma_sp import kernel as sk, reference
        preps = [reference.prepare(c) for c in cases]
        return sk.pack(preps), [p.slim() for p in preps]

    def readback(self, kernel: Kernel, expectations: list, outputs: dict) -> list[dict]:
        from harness.families.wgmma_sp import readback
        return [case_record(r["id"], kernel, r["status"], **{k: v for k, v in r.items()
                                                              if k not in ("id", "status", "kernel")})
                for r in readback.diff_launch(expectations, outputs["d_out"])]

    @staticmethod
    def case_fields(case) -> dict:
        reason = case.unsettled
        return {"unsettled": reason} if reason else {}

    def sass_check(self, kernel: Kernel):
        from harness.families.wgmma_sp import kernel as sk
        return sk.sass_check(kernel.form)

    @staticmethod
    def settle_control(case, record: dict) -> dict:
        return record  # every sparse control predicts an exact misread: a fault is not a catch

    def diagnose(self, kernel: Kernel, cases: list, cubin_path, worker, timeout: float, png_dir) -> list[dict]:
        """No probe of its own yet: the dense family's address and fragment probes cover the operand layouts and
        fragments this family shares with it (run them on the dense form of the same kind, N and layouts)."""
        return []


FAMILY = WgmmaSparseFamily()
__all__ = ["FAMILY"]
