"""The sweep: plan cases -> compile every kernel (cached, parallel) -> launch per kernel -> diff -> results.

Data flows one way: case -> reference (numpy) -> kernel source -> compile -> launch -> diff -> results.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.families.wgmma import cases as _cases, readback as _diff, kernel as launch, forms as wgmma
from harness.run import compile as _compile, gpu, engine as pipeline
from harness import kernel_source
from harness.records import results
from harness.run.worker import GpuWorker, LaunchFailed

ARCH = "sm_90a"


class SweepError(ValueError):
    pass


@dataclass
class Selection:
    families: tuple[str, ...] = wgmma.KINDS + ("tcgen05",)
    n_values: tuple[int, ...] | None = None
    a_srcs: tuple[str, ...] = ("SS", "RS")
    dtypes: tuple[str, ...] | None = None
    data_modes: tuple[str, ...] = ("exact", "normal")
    controls: bool = True
    match: str | None = None  # substring of case ids

    def validate(self) -> "Selection":
        for f in self.families:
            if f not in wgmma.KINDS + ("tcgen05",):
                raise SweepError(f"unknown family {f!r}; one of {', '.join(wgmma.KINDS)}, tcgen05")
        for s in self.a_srcs:
            if s not in ("SS", "RS"):
                raise SweepError(f"A source must be SS or RS, not {s!r}")
        for m in self.data_modes:
            if m not in ("exact", "normal"):
                raise SweepError(f"data mode must be exact or normal, not {m!r}")
        if self.n_values:
            legal = set(wgmma.N_ALL)
            for n in self.n_values:
                if n not in legal:
                    raise SweepError(f"N = {n} is not a wgmma N (8..256 step 8)")
        if self.dtypes:
            known = {d for ds in wgmma.KIND_DTYPES.values() for d in ds}
            for d in self.dtypes:
                if d not in known:
                    raise SweepError(f"accumulator type {d!r} is not one of {', '.join(sorted(known))}")
        return self


def plan(sel: Selection) -> list[tuple[wgmma.KernelKey, list[_cases.Case]]]:
    sel.validate()
    out = []
    families = tuple(f for f in sel.families if f != "tcgen05")
    for key in wgmma.all_kernel_keys(families, sel.n_values, sel.a_srcs) if families else []:
        if sel.dtypes and key.dtype not in sel.dtypes:
            continue
        cs = _cases.cases_for_key(key, sel.data_modes, sel.controls)
        if sel.match:
            cs = [c for c in cs if sel.match in c.id]
        if cs:
            out.append((key, cs))
    if not out and "tcgen05" not in sel.families:
        raise SweepError("the selection matches no case")
    return out


def compile_jobs(keys, arch: str = ARCH) -> list[_compile.CompileJob]:
    return [_compile.CompileJob(k.name, kernel_source.wgmma_source(k), arch) for k in keys]


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(sel: Selection, out_path: Path | None, workers: int | None = None, log=_log,
        resume: bool = False, timeout: float = 30.0, gpus: str = "all", shard: tuple[int, int] | None = None) -> dict:
    """Run (or, with no sm_90a GPU, compile only) the selection; returns the summary. `shard` (i, n) keeps
    every n-th kernel from the i-th, so the nodes of a fleet can split one sweep (and `merge` the files)."""
    engine = None
    if gpu.skip_reason(ARCH) is None and set(sel.families) - {"tcgen05"}:
        # start the pool and the GPU workers first: they come up while this process plans and compiles
        devices = gpu.select(gpus, ARCH)
        engine = pipeline.Engine(devices, workers) if devices else None
    try:
        t = time.time()
        work = plan(sel)
        tc = "tcgen05" in sel.families and not (sel.match or sel.n_values or sel.dtypes)
        if shard:
            work = work[shard[0]::shard[1]]
            if not work:
                raise SweepError(f"shard {shard[0]}/{shard[1]} holds no kernel of the selection")
        return execute(work, out_path, workers, log, resume, timeout, gpus, plan_s=time.time() - t,
                       tcgen05=tc and (shard is None or shard[0] == 0), engine=engine)
    finally:
        if engine is not None:
            engine.close()


def execute(work, out_path: Path | None, workers: int | None = None, log=_log, resume: bool = False,
            timeout: float = 30.0, gpus: str = "all", plan_s: float = 0.0, diagnose: int = 16,
            tcgen05: bool = False, engine: pipeline.Engine | None = None) -> dict:
    """Compile, run and diff `work`; then run the address probe on up to `diagnose` cases that did not do
    what the model says, and record (and draw) what the tensor core read instead."""
    t0 = time.time()
    ncases = sum(len(cs) for _, cs in work)
    log(f"plan: {len(work)} kernels, {ncases} cases")
    done_ids: set[str] = set()
    if resume and out_path and Path(out_path).exists():
        _, prev, _ = results.load(out_path)
        done_ids = set(prev)
        log(f"resume: {len(done_ids)} cases already in {out_path}")
    own_engine = None
    if engine is None and work and gpu.skip_reason(ARCH) is None:
        devices = gpu.select(gpus, ARCH)
        if devices:
            engine = own_engine = pipeline.Engine(devices, workers)
    items = [(key, [c for c in cs if c.id not in done_ids]) for key, cs in work]
    items = [it for it in items if it[1]]
    if engine is not None:
        engine.begin(items)  # preparation runs while the kernels compile
    try:
        return _execute(work, items, out_path, workers, log, resume, timeout, gpus, plan_s, diagnose, tcgen05,
                        engine, done_ids, t0, ncases)
    finally:
        if own_engine is not None:
            own_engine.close()


def _execute(work, items, out_path, workers, log, resume, timeout, gpus, plan_s, diagnose, tcgen05, engine,
             done_ids, t0, ncases) -> dict:
    tc = time.time()
    failed_dir = Path(out_path).parent / f"{Path(out_path).stem}-compile-errors" if out_path else None
    compiled = _compile.compile_many(compile_jobs([k for k, _ in work]), workers, failed_dir, raise_on_error=False)
    fresh = sum(not c.cached and c.error is None for c in compiled)
    log(f"compile: {len(compiled)} kernels for {ARCH} ({fresh} compiled, "
        f"{sum(c.cached for c in compiled)} cached) in {time.time() - tc:.1f}s; cache {_compile.cache_dir()}")
    summary = {"kernels": len(work), "cases": ncases, "compiled": fresh, "compile_s": round(time.time() - tc, 2)}
    rejected = [(key, cs, comp) for (key, cs), comp in zip(work, compiled) if comp.error is not None]
    if rejected:
        summary["compile_errors"] = [
            {"kernel": key.name, "cases": len(cs), "first_case": cs[0].id, "error": str(comp.error),
             "source": str(comp.error.source_path)} for key, cs, comp in rejected]
        for e in summary["compile_errors"]:
            log(f"compile error: {e['kernel']} ({e['cases']} cases, e.g. {e['first_case']}): {e['error']}")
    reason = gpu.skip_reason(ARCH)
    tc_recs: list[dict] = []
    if tcgen05:  # compiled (and, on a Blackwell GPU, run) whatever this machine is; else recorded as not run
        from harness import tcgen05_run
        tc_recs, part = tcgen05_run.run(log, timeout, workers)
        summary.update(part)
    if reason and work and not (tcgen05 and gpu.device_count()):
        log(f"compile-only: {reason}; no wgmma case was run")
        summary.update({"ran": 0, "not_run_reason": reason, "wall_s": round(time.time() - t0, 2)})
        return summary
    devices = engine.devices if engine is not None else []
    if reason and work:  # a GPU of another arch (a Blackwell running the tcgen05 part): say what did not run
        log(f"wgmma: {reason}; its cases are recorded as not run")
        summary["not_run_reason"] = reason
        tc_recs = [{"id": c.id, "kernel": key.name, "status": "not-run", "reason": reason}
                   for key, cs in items for c in cs] + tc_recs
        items = []
    elif work and not devices:
        raise SweepError(f"--gpus {gpus}: none of the selected GPUs is an {ARCH} GPU")
    if devices:
        log("GPUs: " + ", ".join(f"{d} ({gpu.device_info(d)['name']})" for d in devices))
    writer = results.ResultsWriter(out_path, results.environment(devices), resume=resume) if out_path else None
    counts = {"pass": 0, "fail": 0, "fault": 0, "timeout": 0, "compile-error": 0, "not-run": 0}
    for r in tc_recs:
        if r["id"] not in done_ids:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
    if writer and tc_recs:
        writer.write_cases([r for r in tc_recs if r["id"] not in done_ids])
    comp_of = {key: comp for (key, _), comp in zip(work, compiled)}
    todo = [(key, cs, comp_of[key]) for key, cs in items]
    for key, cs, comp in todo:
        if comp.error is not None and cs:
            recs = [{"id": c.id, "kernel": key.name, "status": "compile-error", "error": str(comp.error)} for c in cs]
            counts["compile-error"] += len(recs)
            if writer:
                writer.write_cases(recs)

    suspects: list[str] = []

    def emit(recs):
        for r in recs:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
            if r["status"] == "fail" or r.get("matches_model_prediction") is False:
                suspects.append(r["id"])
        if writer:
            writer.write_cases(recs)

    def isolate(worker, key, preps, packed, cubin_path, error):
        return run_isolated(worker, key, preps, packed, cubin_path, timeout, log, first_error=error)

    timing = {"plan_s": round(plan_s, 2)}
    try:
        if todo:
            timing.update(engine.run([comp for _, _, comp in todo], timeout, emit, isolate, log))
        if suspects and diagnose > 0:
            summary["diagnosed"] = _diagnose(work, compiled, suspects[:diagnose], devices[0], out_path, writer,
                                             timeout, log)
    finally:
        summary.update(counts)
        summary["gpus"] = devices
        summary["timing"] = timing
        summary["wall_s"] = round(time.time() - t0, 2)
        if writer:
            writer.close(summary)
    return summary


def _diagnose(work, compiled, ids, device, out_path, writer, timeout, log) -> int:
    from harness.diagnosis import diagnose
    by_id = {c.id: c for _, cs in work for c in cs}
    cubins = {key: comp.cubin_path for (key, _), comp in zip(work, compiled)}
    png_dir = Path(out_path).parent / f"{Path(out_path).stem}-diagnosis" if out_path else None
    worker = GpuWorker(device)
    try:
        recs = diagnose.diagnose([by_id[i] for i in ids], cubins.__getitem__, worker, timeout, png_dir)
    finally:
        worker.close()
    for r in recs:
        log(f"diagnosis {r['id']} operand {r['operand']}: {r.get('summary') or r.get('error')}")
        if writer:
            writer.write(r)
    return len(recs)


MAX_ISOLATION_LAUNCHES = 24  # per kernel: bisecting a launch that faults everywhere must stay bounded


def run_isolated(worker, key, preps, packed, cubin_path, timeout: float, log=_log,
                 first_error: LaunchFailed | None = None) -> list[dict]:
    """Launch all cases at once (unless `first_error` says that launch already failed); if the launch
    faults or hangs, bisect to the cases that do, in fresh workers, so every other case still gets its
    result."""
    budget = [MAX_ISOLATION_LAUNCHES]

    def go(idx: list[int], pk, error: LaunchFailed | None = None) -> list[dict]:
        try:
            if error is not None:
                raise error
            regs = worker.run(str(cubin_path), key.name, pk, timeout)
            return _diff.diff_launch([preps[j] for j in idx], regs)
        except LaunchFailed as e:
            budget[0] -= 1
            if len(idx) == 1 or budget[0] <= 0:
                note = "" if len(idx) == 1 else f" (isolation stopped after {MAX_ISOLATION_LAUNCHES} failed launches)"
                return [{"id": preps[j].case.id, "kernel": key.name, "status": e.status, "error": str(e) + note}
                        for j in idx]
            log(f"{key.name}: launch of {len(idx)} cases failed ({e.status}: {str(e)[:120]}); isolating")
            half = len(idx) // 2
            out = []
            for part in (idx[:half], idx[half:]):
                local = [idx.index(j) for j in part]
                out += go(part, launch.subset(pk, np.array(local)))
            return out

    return go(list(range(len(preps))), packed, first_error)


def run_kernel(key: wgmma.KernelKey, cs: list[_cases.Case], cubin_path, timeout: float = 30.0,
               worker: GpuWorker | None = None) -> list[dict]:
    """All cases of one kernel key, isolated in a worker process (a fresh one unless given)."""
    own = worker is None
    worker = worker or GpuWorker()
    try:
        return run_isolated(worker, key, *pipeline.prepare_and_pack(cs), cubin_path, timeout)
    finally:
        if own:
            worker.close()
