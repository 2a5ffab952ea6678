"""The contract between an instruction family and the engine: what a family gives, and what it gets back.

Everything here is a type or a small helper both sides use; nothing here compiles, launches or knows an instruction.
The layers below it are the vocabulary (harness/enums.py) and the caches (harness/cache.py); the families
(harness/families/), the engine (harness/run/) and everything above build on it, and the families reach the engine
only through it: a family imports nothing of harness/run, plan.py or records/.

A family (`Family`, one object `FAMILY` in its subpackage, found by name through harness/registry.py) answers:
  * `kernels(arch)`: every kernel (`Kernel`) that exists for an arch, each with its cases (planned from the spec);
  * `source(kernel)`: the kernel's CUDA source;
  * `sass_check(kernel)`: what the kernel's SASS must show (`SassCheck`: rules over instructions), checked after
    every compile (harness/run/sass.py);
  * `prepare(kernel, cases)`: a `LaunchInput` for those cases and one expectation per case (expected values,
    tolerance, a negative control's predicted misread: whatever its `readback` needs, picklable);
  * `readback(kernel, expectations, outputs)`: the device's output buffers -> one case record per case
    (`case_record`: the keys every record starts with);
  * `diagnose(kernel, cases, cubin_path, device, timeout, png_dir)`: probe records that explain a failure, the
    probes run on `device` (`Device`: launches, and the cubin of a sibling kernel; `LaunchFailed`, `CompileError`);
  * `case_fields(case)`: what every record of the case carries, run or not (a tcgen05 case whose expected
    value rests on a reading NVIDIA's code and the PTX ISA do not settle says so: `unsettled`);
  * `settle_control(case, record)`: a negative control's record the engine made (its launch faulted or hung)
    -> the control's verdict (a control whose encoding the ISA leaves undefined is caught by a fault or a hang).
Cases expose `id`, `seed` and `facets` (the values the sweep's filters select on: kind, n, dtype, a_src, ...).
What the engine gives back is the records: `CaseLines`, a batch of case records encoded where they were read back.

Adding a family is one subpackage under harness/families/ with a `FAMILY` object and one line in
harness/registry.py (docs/adding-a-family.md).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple, Protocol

import numpy as np

from harness import cache
from harness.enums import Arch, FamilyName, Status

# ------------------------------------------------------------------------------------------------------ the family


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
    # optional: facets_of(case) -> dict, the case's facets (kind, n, dtype, ...) and whether it is a control
    # optional, with kernel_list: plans_every_arch = True, where each arch has forms of its own (mma_sync's sm_120a
    # block-scaled forms are no sm_90a form's siblings): a plan holds every arch's kernels with their cases, those no
    # GPU here runs recorded not run with the reason (harness/plan.py); without it a plan has the run arch's cases
    # and the other archs' kernels are compiled only. A kernel of another arch named as one planned already is
    # compiled only (the same form built for the other arch)

    # optional: fast_compile = True, where no schedule ptxas makes is under test (a pipeline's waits are one): the
    # family's kernels compile at the toolchain's fast-compile level (harness/run/compile.py compile_job); without
    # it, at full optimization
    # optional: compile_options(kernel) -> tuple of options (str) and `IfAccepted`, the kernel's own compile options

    def source(self, kernel: Kernel) -> str: ...

    def prepare(self, kernel: Kernel, cases: list) -> tuple[LaunchInput, list]: ...

    def readback(self, kernel: Kernel, expectations: list, outputs: dict) -> list[dict]: ...

    def diagnose(self, kernel: Kernel, cases: list, cubin_path: str, device: Device, timeout: float,
                 png_dir) -> list[dict]: ...

    def case_fields(self, case) -> dict: ...  # fields every record of this case carries, run or not

    def sass_check(self, kernel: Kernel) -> SassCheck: ...

    def settle_control(self, case, record: dict) -> dict: ...  # a control's engine-made record (fault, timeout)


@dataclass(frozen=True)
class IfAccepted:
    """A compile option a kernel takes where the toolchain accepts it for `arch` (tried on a trivial kernel, once per
    toolchain), `otherwise` (options, a define the kernel reads) where it does not: tcgen05's TMEM-checked forms ask
    for ptxas's Tensor Memory access check, which an older ptxas lacks. harness/run/compile.py compile_job decides."""
    option: str
    arch: str
    otherwise: tuple[str, ...] = ()


class Device(Protocol):
    """What a family's probes run on (the sweep's GPU worker, harness/run/worker.py; a simulated device in tests)."""

    def run(self, cubin_path: str, kernel_name: str, launch: LaunchInput, timeout: float) -> dict[str, np.ndarray]:
        """The launch's outputs, by name; LaunchFailed where it faults, hangs or cannot be loaded."""

    def compile(self, kernel: Kernel) -> str:
        """The path of `kernel`'s cubin (a sibling of the kernel under diagnosis that a probe needs), compiled or
        taken from the compile cache; CompileError where the toolchain rejects it."""

    # Where the sweep probes a suspect of a fault storm (harness/run/engine.py, NoRelaunch): the storm, in words;
    # absent (or None) otherwise. A family may then run first the probes that can explain a fault, and skip those
    # that cannot once a fault is explained: each probe that faults costs about a second (an H100 node's log).
    fault_storm: str | None


# an address probe's statuses that show an operand read other than the model says: its map differs (fail, or
# inconclusive where both operands differ), or the probe's own launch faulted or hung (or was not launched for that)
ADDRESSES_ASTRAY = frozenset({str(Status.FAIL), "inconclusive", str(Status.FAULT), str(Status.TIMEOUT)})


def astray_in_a_storm(device: Device, address_records: list[dict], case_ids) -> dict[str, dict]:
    """Where `device` names a fault storm (Device.fault_storm): by case id (of `case_ids`), the last address-probe
    record of the case that found an operand read astray (ADDRESSES_ASTRAY; the last, B where A and B both are, as
    wgmma's diagnosis has always quoted). A family skips, for those cases, the probes that read through the same
    operands and could not explain a fault; {} outside a storm."""
    if not getattr(device, "fault_storm", None):
        return {}
    ids = set(case_ids)
    return {r["id"]: r for r in address_records if r["id"] in ids and r.get("status") in ADDRESSES_ASTRAY}


def not_probed_in_a_storm(device: Device, address: dict, probe: str, why: str) -> str:
    """The summary of a probe of a storm's case not run because its `address` record found an operand read astray:
    the storm, what the address probe said, and `why` the skipped probe (`probe`) could not have helped."""
    said = address.get("summary") or address.get("error") or address["status"]
    return (f"{probe} probe not run: {device.fault_storm}; the {address['operand']} address probe: {said}. {why}")


class LaunchFailed(RuntimeError):
    def __init__(self, status: str, message: str):
        # 'fault' or 'timeout'; 'compile-error' when the driver cannot load the module; 'error' when the worker
        # died or stalled before it took the launch up (its start-up: CUDA, the driver), not the case's doing
        self.status = status
        super().__init__(message)


class CompileError(RuntimeError):
    def __init__(self, name: str, arch: str, log: str, source_path=None):
        self.name, self.arch, self.log, self.source_path = name, arch, log, source_path
        first = next((ln for ln in log.splitlines() if "error" in ln.lower()), log.strip()[:200])
        where = f" (source and log kept in {source_path.parent})" if source_path else ""
        super().__init__(f"NVRTC rejected {name} for {arch}: {first.strip()}{where}")


# ------------------------------------------------------------------------------------------------------ the launch
# One validated launch description handed to one launch function, for every instruction family. A family turns a
# batch of cases into a `LaunchInput`: a shared-memory image per CTA (concatenated), a structured parameter record per
# CTA (which must carry `image_offset` and `image_bytes`), further per-CTA input arrays, and the per-CTA outputs to
# allocate (filled with a poison value first). The kernel's parameters are, in order: images, params, each input,
# each output. harness/run/launch.py launches it and returns the outputs; `subset` cuts a launch down to some of its
# cases (bisection of a fault); `save`/`load` move it through a spool file between processes (cache.write_arrays).

WINDOW_SLACK = 1024  # kernels align their shared-memory window up to 1024 bytes


@dataclass(frozen=True)
class OutputSpec:
    shape: tuple[int, ...]  # per CTA
    dtype: str = "uint32"
    fill: int = 0  # poison written before the launch, so an unwritten output never looks like a result


@dataclass
class LaunchInput:
    images: np.ndarray  # uint8, every CTA's image concatenated
    params: np.ndarray  # structured, one record per CTA
    inputs: dict[str, np.ndarray] = field(default_factory=dict)  # per-CTA arrays, leading axis = CTA
    outputs: dict[str, OutputSpec] = field(default_factory=dict)
    ctas_per_case: int = 1
    threads: int = 128
    extra_smem: int = 0  # dynamic shared memory beyond the largest image and the alignment slack

    def __post_init__(self):
        n = self.params.size
        for name in ("image_offset", "image_bytes"):
            if name not in (self.params.dtype.names or ()):
                raise ValueError(f"launch parameters need a field {name!r}")
        if n % self.ctas_per_case:
            raise ValueError(f"{n} CTAs is not a whole number of cases of {self.ctas_per_case} CTAs")
        for name, arr in self.inputs.items():
            if len(arr) != n:
                raise ValueError(f"input {name!r} has {len(arr)} CTAs, the launch {n}")
        ends = self.params["image_offset"].astype(np.int64) + self.params["image_bytes"]
        if n and (ends.max() > self.images.size or (self.params["image_offset"] % 16).any()):
            raise ValueError("an image lies outside the image buffer or is not 16-byte aligned")

    @property
    def ctas(self) -> int:
        return int(self.params.size)

    @property
    def cases(self) -> int:
        return self.ctas // self.ctas_per_case

    @property
    def smem(self) -> int:
        return int(self.params["image_bytes"].max()) + WINDOW_SLACK + self.extra_smem

    def subset(self, case_indices) -> "LaunchInput":
        """The launch of some of its cases (every CTA of each), images re-packed."""
        cpc = self.ctas_per_case
        ctas = np.array([c * cpc + j for c in case_indices for j in range(cpc)], np.int64)
        params = self.params[ctas].copy()
        chunks, off = [], 0
        for i in range(params.size):
            start, size = int(params[i]["image_offset"]), int(params[i]["image_bytes"])
            chunks.append(self.images[start:start + size])
            params[i]["image_offset"] = off
            off += size
        return LaunchInput(np.concatenate(chunks) if chunks else np.zeros(0, np.uint8), params,
                           {k: v[ctas] for k, v in self.inputs.items()}, self.outputs, cpc, self.threads,
                           self.extra_smem)

    @classmethod
    def concatenate(cls, parts: list["LaunchInput"]) -> "LaunchInput":
        """One launch of the parts' cases in order (a launch prepared a few cases at a time): the images one after
        the other, each CTA's image_offset moved by the bytes of the parts before its own, the parameters and inputs
        stacked. The parts must agree on everything else (outputs, CTAs a case, threads, extra shared memory)."""
        if not parts:
            raise ValueError("a launch is concatenated from one part or more")
        first = parts[0]
        shape = (first.outputs, first.ctas_per_case, first.threads, first.extra_smem, tuple(first.inputs))
        for p in parts[1:]:
            if (p.outputs, p.ctas_per_case, p.threads, p.extra_smem, tuple(p.inputs)) != shape:
                raise ValueError("the parts of a launch differ in its outputs, CTAs a case, threads, extra shared memory "
                                 "or inputs")
        if len(parts) == 1:
            return first
        params = np.concatenate([p.params for p in parts])
        offset, cta, byte = params["image_offset"], 0, 0
        for p in parts:  # each part's offsets count from its own first image
            offset[cta:cta + p.ctas] += np.asarray(byte, offset.dtype)
            cta, byte = cta + p.ctas, byte + p.images.size
        return cls(np.concatenate([p.images for p in parts]), params,
                   {k: np.concatenate([p.inputs[k] for p in parts]) for k in first.inputs}, first.outputs,
                   first.ctas_per_case, first.threads, first.extra_smem)

    def save(self, path: str) -> str:
        """Write the launch to a spool file (`write_arrays`). Spool files pass between this package's own processes
        only."""
        state = {"images": self.images, "params": self.params, "inputs": dict(self.inputs),
                 "outputs": {k: (tuple(o.shape), o.dtype, o.fill) for k, o in self.outputs.items()},
                 "ctas_per_case": self.ctas_per_case, "threads": self.threads, "extra_smem": self.extra_smem}
        cache.write_arrays(path, state)
        return path

    @classmethod
    def load(cls, source, staging=None) -> "LaunchInput":
        """The launch saved at `source` (a LaunchInput is returned as it is). With `staging`, its arrays are views
        of the staging's memory, valid until the staging is asked for the next launch's."""
        if isinstance(source, LaunchInput):
            return source
        s = cache.read_arrays(source, staging)
        return cls(s["images"], s["params"], s["inputs"], {k: OutputSpec(*o) for k, o in s["outputs"].items()},
                   s["ctas_per_case"], s["threads"], s["extra_smem"])


# ------------------------------------------------------------------------------------------------------ the SASS
# A family states what each kernel's SASS must show as a `SassCheck` (rules over instructions: opcode, operands,
# how many); harness/run/sass.py disassembles every compiled kernel and judges it (a kernel whose SASS lacks what it
# exists to test is a compile-error, before anything launches).

@lru_cache(maxsize=None)
def pattern(regex: str) -> re.Pattern:
    return re.compile(regex)


@dataclass(frozen=True)
class SassRule:
    """Instructions whose opcode fully matches `opcode` (a regex) and whose operands match `operands` (searched)
    must number at least one (count None) or exactly `count`. `what` says, in the words of a failure, what the
    kernel must do."""
    opcode: str
    what: str
    count: int | None = None
    operands: str | None = None

    def __post_init__(self):
        # the patterns compile when a listing is first judged (`pattern` keeps them): a warm sweep finds every
        # verdict cached and needs none of its 1,100 patterns (compiling them took 0.15 s of its start-up on the CPU
        # machine, in the process that plans);
        # tests/run/test_sass.py compiles every rule of every family's kernels
        if self.count is not None and self.count < 0:
            raise ValueError(f"SassRule count must be >= 0, got {self.count}")

    def count_in(self, instructions) -> int:
        """How many of the instructions the rule matches. Each distinct opcode meets the pattern once: a kernel
        has hundreds of instructions and few opcodes, and a cold sweep checks 823 kernels in one process (the SASS
        check took 4.5 s of an H100 node's cold sweep, bench3 in docs/performance.md; on
        the CPU machine a regex call per instruction and rule was most of it)."""
        opcode = pattern(self.opcode)
        hit = {op for op in {i.opcode for i in instructions} if opcode.fullmatch(op)}
        operands = pattern(self.operands) if self.operands is not None else None
        return sum(1 for i in instructions if i.opcode in hit and (operands is None or operands.search(i.operands)))

    def broken(self, instructions) -> str | None:
        n = self.count_in(instructions)
        if (self.count is None and n >= 1) or n == self.count:
            return None
        want = "at least one" if self.count is None else f"exactly {self.count}"
        return f"{self.what}: want {want} instruction matching {self.opcode!r}" + (
            f" with operands ~ {self.operands!r}" if self.operands else "") + f", found {n}"


@dataclass(frozen=True)
class SassCheck:
    arch: str
    rules: tuple[SassRule, ...]
    function: str | None = None  # the kernel's entry: its instructions alone are checked (a module may hold several)


# ------------------------------------------------------------------------------------------------------ the records


def case_record(case_id: str, kernel: Kernel, status: Status | str, **fields) -> dict:
    """Every case record, of every family, starts with these keys (records/results.py documents them all)."""
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


def case_keys(fam, case) -> dict:
    """What every record of a case carries after case_record's keys, launched or not: its family's `case_fields`
    and its facets (record_facets)."""
    return {**fam.case_fields(case), **record_facets(fam, case)}


class CaseFacts(NamedTuple):
    """What a sweep's bookkeeping reads of a case record (its counts, suspects, controls and progress)."""
    id: str
    kernel: str | None
    status: str
    isolated: bool | None
    matches_model_prediction: bool | None

    @classmethod
    def of(cls, record: dict) -> CaseFacts:
        return cls(record["id"], record.get("kernel"), record["status"], record.get("isolated"),
                   record.get("matches_model_prediction"))


class CaseLines:
    """Case records JSON-encoded by the process that made them (the engine's read-back processes), for the results
    file as they are: encoding 56,101 records one by one in the sweep's own process, which also hands out every
    launch, took 0.43 s of a warm sweep's 2.35 s there (bench12 in docs/performance.md). Each
    record's text lacks its closing brace, so that the fields known only when it is written (the engine's kernel_s)
    follow as text: the line is the one json.dumps would make of the record with them added."""

    def __init__(self, records):
        self.heads = [json.dumps({"type": "case", **r})[:-1] for r in records]
        self.facts = [CaseFacts.of(r) for r in records]
        self.more: dict = {}  # fields every record of the batch gets when written

    def __len__(self) -> int:
        return len(self.heads)

    def record(self, i: int) -> dict:
        """The i-th record as a dict (without the "type" key and `more`)."""
        rec = json.loads(self.heads[i] + "}")
        rec.pop("type")
        return rec

    def replace(self, i: int, record: dict) -> None:
        self.heads[i] = json.dumps({"type": "case", **record})[:-1]
        self.facts[i] = CaseFacts.of(record)

    def text(self) -> str:
        tail = "".join(f", {json.dumps(k)}: {json.dumps(v)}" for k, v in self.more.items()) + "}\n"
        return "".join(h + tail for h in self.heads)


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
