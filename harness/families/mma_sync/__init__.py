"""Warp-level `mma.sync` / `mma.sp` and `ldmatrix` (PTX ISA 9.7.14) on sm_90a: forms, fragments, ldmatrix models,
cases, reference, kernel, readback; `FAMILY` is what the engine runs.

- `forms`: every instruction form an H100 (sm_90a, which runs every sm_80 / sm_89 form) executes, as validated
  frozen dataclasses, and the kernel keys grouping them (37 kernels for the 246 forms);
- `fragments`: each form's A, B, C/D fragment maps (lane, register, sub-element) <-> (row, col) of the matrix, the
  sparse A operand's compressed storage and its metadata's thread and bit assignment;
- `ldmatrix`: ldmatrix / stmatrix .m8n8 .x1/.x2/.x4 [.trans] .b16, CuTe's Swizzle<B,M,S>, and the per-lane row
  addresses that make ldmatrix load an mma operand fragment straight out of a (swizzled) shared-memory tile;
- `cases`, `reference`, `kernel` (+ `mma_sync.cu`), `readback`: as the other families;
- `store`: D stored by stmatrix .x1/.x2/.x4 [.trans] (sm_90) into a (swizzled) tile, copied out and compared byte by
  byte, in the six kernels whose D is 16-bit (their sources alone gain the store; the other 31 are unchanged);
- `probe`: the diagnosis: the maps the hardware used for D and for A and B as loaded (and ldmatrix's addresses and
  the tile's swizzle), recovered from coded launches of the family's own kernel and compared with the models.

In the registry since its whole sweep passed on an H100 (FINDINGS section 9): `python -m harness sweep
--family mma_sync` (on a machine without an sm_90a GPU it compiles and SASS-checks every kernel, records every case
as not run and exits 3).

Not covered yet: the compile-only archs sm_80 and sm_89 (their forms are sm_90a's, which the H100 runs); a failing
stmatrix store is named byte by byte by its record (tile row, byte), and the probe's D record says whether D itself
is right, but no probe recovers the store's address map.

sm_120a / sm_121a (`block_scaled`, `kernel_sm120` + `mma_sync_sm120.cu`, `reference_sm120`, `readback_sm120`): the
`.kind::f8f6f4 / mxf8f6f4 / mxf4 / mxf4nvf4` forms, dense and sparse, their containers and scale-factor registers,
and the sub-byte ldmatrix, modelled, compiled and SASS-checked (9 kernels an arch). The family plans every arch's
kernels with their cases (`plans_every_arch`): sm_120a's 180 cases are in every sweep of the family and recorded not
run, with the reason, wherever no sm_120 GPU is. Where one is, `prepare` / `readback` take them to the sm_120 path:
exact inputs packed from the models (containers, scale bytes by the selectors, sparse metadata; the sub-byte
ldmatrix's rows in a shared-memory image), every register of every lane of D diffed. That path has run on a
simulated device only (tests/test_mma_sync_sm120.py), never on an sm_120 GPU (none exists in this project), and a
failing sm_120a case is named by its record but not probed (`diagnose`). sm_121a's kernels have sm_120a's names and
sources, so they are compiled and SASS-checked only.
"""
from __future__ import annotations

from harness.contract import Device, Kernel, case_record
from harness.enums import Arch, FamilyName

NAME = FamilyName.MMA_SYNC


class MmaSyncFamily:
    """mma.sync / mma.sp, one CTA of one warp a case; the kernel of a kernel key issues any of its forms."""
    name = NAME
    # sm_90a runs (an H100 executes every sm_80 / sm_89 form); sm_120a and sm_121a have forms of their own (the
    # block-scaled kind:: forms, kernel_sm120), compiled, SASS-checked and recorded not run where no sm_120 GPU is
    archs = (Arch.SM_90A, "sm_120a", "sm_121a")
    # each arch's kernels are planned with their cases (harness/plan.py), not the first arch's alone: the sm_120
    # forms are no sm_90a form's siblings
    plans_every_arch = True
    facets = frozenset({"kind", "n", "dtype", "data"})
    fast_compile = True  # one mma a variant behind a uniform branch: no schedule is under test

    def kernels(self, arch) -> list[tuple[Kernel, list]]:
        return [(k, self.kernel_cases(k)) for k in self.kernel_list(arch)]

    @staticmethod
    def kernel_cases(kernel: Kernel) -> list:
        from harness.families.mma_sync import cases, kernel_sm120
        if isinstance(kernel.form, kernel_sm120.Sm120Key):
            return kernel_sm120.cases_for_key(kernel.form)
        return cases.cases_for_key(kernel.form)

    def kernel_list(self, arch) -> list[Kernel]:
        from harness.families.mma_sync import forms, kernel_sm120
        if str(arch) == Arch.SM_90A:
            return [self.kernel_of(key) for key in forms.all_kernel_keys()]
        if str(arch) in self.archs:
            return kernel_sm120.arch_kernels(str(arch))
        return []

    def kernel_of(self, key) -> Kernel:
        return Kernel(self.name, Arch.SM_90A, key.name, key)

    @staticmethod
    def facet_values() -> dict:
        from harness.families.mma_sync import forms, kernel_sm120
        keys = (*forms.all_kernel_keys(), *kernel_sm120.all_keys())
        return {"kind": (*forms.KINDS, *kernel_sm120.GROUPS), "dtype": tuple(dict.fromkeys(k.dtype for k in keys)),
                "data": ("exact",)}

    @staticmethod
    def kernel_facets_of(kernel: Kernel) -> dict:
        key = kernel.form
        return {"kind": key.kind, "n": key.mnk[1], "dtype": key.dtype}

    def facets_of(self, case) -> dict:
        return {"kind": case.key.kind, "n": case.key.mnk[1], "dtype": case.key.dtype, "data": case.data,
                "control": bool(case.control)}

    def source(self, kernel: Kernel) -> str:
        from harness.families.mma_sync import kernel as k, kernel_sm120
        if isinstance(kernel.form, kernel_sm120.Sm120Key):  # kernel_sm120.arch_kernels
            return kernel_sm120.source(kernel.form)
        return k.source(kernel.form)

    def sass_check(self, kernel: Kernel):
        from harness.families.mma_sync import kernel as k, kernel_sm120
        if isinstance(kernel.form, kernel_sm120.Sm120Key):
            return kernel_sm120.sass_check(kernel.form, str(kernel.arch))
        return k.sass_check(kernel.form)

    def prepare(self, kernel: Kernel, cases: list):
        from harness.families.mma_sync import kernel as k, kernel_sm120, reference, reference_sm120
        if isinstance(kernel.form, kernel_sm120.Sm120Key):
            preps = [reference_sm120.prepare(c) for c in cases]
            return kernel_sm120.pack(preps), [p.slim() for p in preps]
        preps = [reference.prepare(c) for c in cases]
        return k.pack(preps), [p.slim() for p in preps]

    def readback(self, kernel: Kernel, expectations: list, outputs: dict) -> list[dict]:
        from harness.families.mma_sync import kernel_sm120, readback, readback_sm120
        diff = readback_sm120 if isinstance(kernel.form, kernel_sm120.Sm120Key) else readback
        return [case_record(r["id"], kernel, r["status"], **{k: v for k, v in r.items() if k not in ("id", "status")})
                for r in diff.diff_launch(expectations, outputs)]

    @staticmethod
    def case_fields(case) -> dict:
        return {}

    @staticmethod
    def settle_control(case, record: dict) -> dict:
        return record  # every control predicts an exact misread: a fault or a hang is not a catch

    def diagnose(self, kernel: Kernel, cases: list, cubin_path, device: Device, timeout: float,
                 png_dir) -> list[dict]:
        """The probe records of the failing cases (probe.py): the maps the hardware used for D, and for A and B as
        loaded (from global memory, or by ldmatrix: its addresses and the tile's swizzle too), recovered from coded
        launches of this kernel and compared with the model's bit by bit."""
        from harness.families.mma_sync import kernel_sm120, probe
        if isinstance(kernel.form, kernel_sm120.Sm120Key):  # the probes code sm_90a's kernels' launches only
            return [{"type": "diagnosis", "id": c.id, "operand": "D", "probe": "accumulator", "kernel": kernel.name,
                     "status": "not-probed", "summary": "no probe of the sm_120a kernels is written: the case's "
                     "record names the lanes, registers, rows and columns that differ"} for c in cases]
        return probe.diagnose(kernel.form, list(cases), str(cubin_path), device, timeout, png_dir)


FAMILY = MmaSyncFamily()
