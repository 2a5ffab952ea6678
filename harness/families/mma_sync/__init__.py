"""Warp-level `mma.sync` / `mma.sp` and `ldmatrix` (PTX ISA 9.7.14) on sm_90a: forms, fragments, ldmatrix models,
cases, reference, kernel, readback; `FAMILY` is what the engine runs.

- `forms`: every instruction form an H100 (sm_90a, which runs every sm_80 / sm_89 form) executes, as validated
  frozen dataclasses, and the kernel keys grouping them (37 kernels for the 246 forms);
- `fragments`: each form's A, B, C/D fragment maps (lane, register, sub-element) <-> (row, col) of the matrix, the
  sparse A operand's compressed storage and its metadata's thread and bit assignment;
- `ldmatrix`: ldmatrix / stmatrix .m8n8 .x1/.x2/.x4 [.trans] .b16, CuTe's Swizzle<B,M,S>, and the per-lane row
  addresses that make ldmatrix load an mma operand fragment straight out of a (swizzled) shared-memory tile;
- `cases`, `reference`, `kernel` (+ `mma_sync.cu`), `readback`: as the other families.

Not in the default registry yet: the family joins `harness/registry.py`'s REGISTRY (and a FamilyName member) once
it has passed on an H100. Until then it runs through TC_HARNESS_FAMILIES:

    TC_HARNESS_FAMILIES=mma_sync=harness.families.mma_sync python -m harness sweep --family mma_sync

(on a machine without an sm_90a GPU that compiles and SASS-checks every kernel, records every case as not run and
exits 3), and on the H100 `TC_HARNESS_FAMILIES=mma_sync=harness.families.mma_sync python -m pytest -m gpu
tests/test_mma_sync_gpu.py`.

Not covered yet: stmatrix (its model is in `ldmatrix`, no kernel stores through it), and the compile-only archs
(sm_80, sm_89): `archs` is sm_90a alone.

sm_120a / sm_121a (`block_scaled`, `kernel_sm120` + `mma_sync_sm120.cu`): the `.kind::f8f6f4 / mxf8f6f4 / mxf4 /
mxf4nvf4` forms, dense and sparse, their containers and scale-factor registers, and the sub-byte ldmatrix, modelled
and compiled and SASS-checked (`kernel_sm120.arch_kernels(arch)`, 9 kernels an arch, through `source` / `sass_check`
here). They are not in `archs` and have no cases: no sm_120 GPU exists to run them, and the plan would put their
cases in a sweep only as the run arch's (tests/test_mma_sync_sm120.py says why).
"""
from __future__ import annotations

from harness.contract import Device, Kernel, case_record
from harness.enums import Arch

NAME = "mma_sync"


class MmaSyncFamily:
    """mma.sync / mma.sp, one CTA of one warp a case; the kernel of a kernel key issues any of its forms."""
    name = NAME
    archs = (Arch.SM_90A,)
    facets = frozenset({"kind", "n", "dtype", "data"})
    fast_compile = True  # one mma a variant behind a uniform branch: no schedule is under test

    def kernels(self, arch) -> list[tuple[Kernel, list]]:
        return [(k, self.kernel_cases(k)) for k in self.kernel_list(arch)]

    @staticmethod
    def kernel_cases(kernel: Kernel) -> list:
        from harness.families.mma_sync import cases
        return cases.cases_for_key(kernel.form)

    def kernel_list(self, arch) -> list[Kernel]:
        from harness.families.mma_sync import forms
        if arch not in self.archs:
            return []
        return [self.kernel_of(key) for key in forms.all_kernel_keys()]

    def kernel_of(self, key) -> Kernel:
        return Kernel(self.name, Arch.SM_90A, key.name, key)

    @staticmethod
    def facet_values() -> dict:
        from harness.families.mma_sync import forms
        keys = forms.all_kernel_keys()
        return {"kind": forms.KINDS, "dtype": tuple(dict.fromkeys(k.dtype for k in keys)), "data": ("exact",)}

    @staticmethod
    def kernel_facets_of(kernel: Kernel) -> dict:
        key = kernel.form
        return {"kind": key.kind, "n": key.mnk[1], "dtype": key.dtype}

    def facets_of(self, case) -> dict:
        return {**self.kernel_facets_of(self.kernel_of(case.key)), "data": case.data, "control": bool(case.control)}

    def source(self, kernel: Kernel) -> str:
        from harness.families.mma_sync import kernel as k, kernel_sm120
        if isinstance(kernel.form, kernel_sm120.Sm120Key):  # compile-only: kernel_sm120.arch_kernels
            return kernel_sm120.source(kernel.form)
        return k.source(kernel.form)

    def sass_check(self, kernel: Kernel):
        from harness.families.mma_sync import kernel as k, kernel_sm120
        if isinstance(kernel.form, kernel_sm120.Sm120Key):
            return kernel_sm120.sass_check(kernel.form, str(kernel.arch))
        return k.sass_check(kernel.form)

    def prepare(self, kernel: Kernel, cases: list):
        from harness.families.mma_sync import kernel as k, reference
        preps = [reference.prepare(c) for c in cases]
        return k.pack(preps), [p.slim() for p in preps]

    def readback(self, kernel: Kernel, expectations: list, outputs: dict) -> list[dict]:
        from harness.families.mma_sync import readback
        return [case_record(r["id"], kernel, r["status"], **{k: v for k, v in r.items() if k not in ("id", "status")})
                for r in readback.diff_launch(expectations, outputs)]

    @staticmethod
    def case_fields(case) -> dict:
        return {}

    @staticmethod
    def settle_control(case, record: dict) -> dict:
        return record  # every control predicts an exact misread: a fault or a hang is not a catch

    def diagnose(self, kernel: Kernel, cases: list, cubin_path, device: Device, timeout: float,
                 png_dir) -> list[dict]:
        """No probe of its own yet: a failing record already names the operand, lane, register, sub-element and
        matrix element of each mismatch, and D, A and B are diffed separately, so a wrong ldmatrix (A or B as loaded
        differ) is told apart from a wrong fragment map or product (only D differs). Recovering a whole map from
        one-hot probes, as wgmma's fragments_probe does, is not written for this family."""
        return []


FAMILY = MmaSyncFamily()
