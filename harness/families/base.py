"""What an instruction family gives the engine. The engine (harness/run, harness/sweep.py) knows nothing else.

A family answers:
  * `kernels(arch)`: every kernel that exists for an arch, each with its cases (planned from the spec);
  * `source(kernel)`: the kernel's CUDA source;
  * `prepare(kernel, cases)`: a `LaunchInput` for those cases and one expectation per case (expected values,
    tolerance, a negative control's predicted misread: whatever its `readback` needs, picklable; its case as
    `.case`, which the engine reads for a failed launch's records and for every record's facets);
  * `readback(kernel, expectations, outputs)`: the device's output buffers -> one case record per case;
  * `diagnose(kernel, cases, cubin_path, worker, timeout, png_dir)`: probe records that explain a failure;
  * `sass_check(kernel)`: what the kernel's SASS must show (harness/run/sass.py), checked after every compile;
  * `case_fields(case)`: what every record of the case carries, run or not (a tcgen05 case whose expected
    value rests on a reading NVIDIA's code and the PTX ISA do not settle says so: `unsettled`);
  * `settle_control(case, record)`: a negative control's record the engine made (its launch faulted or hung)
    -> the control's verdict (a control whose encoding the ISA leaves undefined is caught by a fault or a hang).
Cases expose `id`, `seed` and `facets` (the values the sweep's filters select on: kind, n, dtype, a_src, ...).
Adding a family is one subpackage under harness/families/ with a `FAMILY` object and one line in
`harness/families/__init__.py`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from harness.enums import Arch, FamilyName, Status


@dataclass(frozen=True)
class Kernel:
    """One compiled unit: a family's form (what is compiled in) for one arch."""
    family: FamilyName
    arch: Arch  # or the name of an arch its family declares (harness.enums.declare_arch)
    name: str
    form: Any  # the family's own kernel key (frozen, picklable)


class Family(Protocol):
    name: FamilyName
    archs: tuple[Arch, ...]  # which GPUs run each is harness.enums.runs_on's answer, from the GPU's compute capability
    facets: frozenset[str]  # the selection filters that apply to this family's cases

    # optional: arch_compute_capabilities = {arch: ("major.minor", ...)}, for an arch of `archs` whose name is not
    # NVIDIA's spelling (sm_XY, sm_XYa, sm_XYf): the compute capabilities that run it (harness.enums.declare_arch,
    # which the registry calls as it loads the family); such an arch is a plain string, not an Arch

    def kernels(self, arch: Arch) -> list[tuple[Kernel, list]]: ...

    # optional: kernel_list(arch) -> list[Kernel], the kernels of kernels(arch) that have cases, in its order, worked
    # out cheaply (the sweep starts compiling them while it plans the cases; a family without it is compiled after
    # the plan). tests/test_early_compile.py holds every in-tree family to it
    # optional, with kernel_list: kernel_cases(kernel) -> list, the cases of one kernel, planned from that kernel alone
    # (kernels(arch) is each kernel of kernel_list(arch) with its kernel_cases): the plan cache builds such a family's
    # plan in parts, which processes starting together build at once (harness/plan.py plan_files);
    # tests/test_plan.py holds every in-tree family that has it to the parts making up kernels(arch)
    # optional, with kernel_cases: kernel_facets_of(kernel) -> dict, the facets every case of the kernel has (a subset
    # of facets_of's): a selection filtering on them plans the cases of the kernels it keeps only (harness/plan.py
    # narrowed_kernels); tests/test_plan.py holds every family that has it to each case agreeing

    # optional: fast_compile = True, where no schedule ptxas makes is under test (a pipeline's waits are one): the
    # family's kernels compile at the toolchain's fast-compile level (harness.families.compile_job); without it, at
    # full optimization

    def source(self, kernel: Kernel) -> str: ...

    def prepare(self, kernel: Kernel, cases: list): ...

    def readback(self, kernel: Kernel, expectations: list, outputs: dict) -> list[dict]: ...

    def diagnose(self, kernel: Kernel, cases: list, cubin_path: str, worker, timeout: float, png_dir) -> list[dict]: ...

    def case_fields(self, case) -> dict: ...  # fields every record of this case carries, run or not

    def sass_check(self, kernel: Kernel): ...  # a harness.run.sass.SassCheck

    def settle_control(self, case, record: dict) -> dict: ...  # a control's engine-made record (fault, timeout)


def case_record(case_id: str, kernel: Kernel, status: Status | str, **fields) -> dict:
    """Every case record, of every family, starts with these keys (records/results.py documents them all); the
    engine and the sweep add its `facets` (record_facets)."""
    return {"id": case_id, "family": str(kernel.family), "kernel": kernel.name, "arch": str(kernel.arch),
            "status": str(Status(status)), **fields}


def record_facets(fam, case) -> dict:
    """The `facets` field of a case's record: the facets its family declares (`fam.facets`) and whether the case is a
    negative control (`control`, which every family's facets_of gives), with the values `fam.facets_of(case)` gives
    them, so that the readers (report, compare, junit) read them off the record and parse no kernel name or case id;
    {} for a family without facets_of."""
    if not hasattr(fam, "facets_of"):
        return {}
    values = fam.facets_of(case)
    return {"facets": {k: values[k] for k in sorted({*getattr(fam, "facets", ()), "control"}) if k in values}}


def ranges(values) -> str:
    """[0,1,2,5,7,8] -> '0-2,5,7-8'."""
    vals = [int(v) for v in values]
    out, i = [], 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        out.append(f"{vals[i]}-{vals[j]}" if j > i else f"{vals[i]}")
        i = j + 1
    return ",".join(out)
