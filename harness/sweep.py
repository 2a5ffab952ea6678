"""The sweep: plan cases -> compile every kernel (cached, parallel) -> launch per kernel -> diff -> results.

Data flows one way: case -> reference (numpy) -> kernel source -> compile -> launch -> diff -> results.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import cases as _cases, compile as _compile, diff as _diff, gpu, kernel_source, launch, reference, results, wgmma

ARCH = "sm_90a"


class SweepError(ValueError):
    pass


@dataclass
class Selection:
    families: tuple[str, ...] = wgmma.FAMILIES
    n_values: tuple[int, ...] | None = None
    a_srcs: tuple[str, ...] = ("SS", "RS")
    dtypes: tuple[str, ...] | None = None
    data_modes: tuple[str, ...] = ("exact", "normal")
    controls: bool = True
    match: str | None = None  # substring of case ids

    def validate(self) -> "Selection":
        for f in self.families:
            if f not in wgmma.FAMILIES:
                raise SweepError(f"unknown family {f!r}; one of {', '.join(wgmma.FAMILIES)}")
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
            known = {d for ds in wgmma.FAMILY_DTYPES.values() for d in ds}
            for d in self.dtypes:
                if d not in known:
                    raise SweepError(f"accumulator type {d!r} is not one of {', '.join(sorted(known))}")
        return self


def plan(sel: Selection) -> list[tuple[wgmma.KernelKey, list[_cases.Case]]]:
    sel.validate()
    out = []
    for key in wgmma.all_kernel_keys(sel.families, sel.n_values, sel.a_srcs):
        if sel.dtypes and key.dtype not in sel.dtypes:
            continue
        cs = _cases.cases_for_key(key, sel.data_modes, sel.controls)
        if sel.match:
            cs = [c for c in cs if sel.match in c.id]
        if cs:
            out.append((key, cs))
    if not out:
        raise SweepError("the selection matches no case")
    return out


def compile_jobs(keys, arch: str = ARCH) -> list[_compile.CompileJob]:
    return [_compile.CompileJob(k.name, kernel_source.wgmma_source(k), arch) for k in keys]


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(sel: Selection, out_path: Path | None, workers: int | None = None, log=_log,
        resume: bool = False) -> dict:
    """Run (or, with no sm_90a GPU, compile only) the selection; returns the summary."""
    t0 = time.time()
    work = plan(sel)
    ncases = sum(len(cs) for _, cs in work)
    log(f"plan: {len(work)} kernels, {ncases} cases")
    done_ids: set[str] = set()
    if resume and out_path and Path(out_path).exists():
        _, prev, _ = results.load(out_path)
        done_ids = set(prev)
        log(f"resume: {len(done_ids)} cases already in {out_path}")
    tc = time.time()
    compiled = _compile.compile_many(compile_jobs([k for k, _ in work]), workers)
    fresh = sum(not c.cached for c in compiled)
    log(f"compile: {len(compiled)} kernels for {ARCH} ({fresh} compiled, {len(compiled) - fresh} cached) "
        f"in {time.time() - tc:.1f}s; cache {_compile.cache_dir()}")
    summary = {"kernels": len(work), "cases": ncases, "compiled": fresh, "compile_s": round(time.time() - tc, 2)}
    reason = gpu.skip_reason(ARCH)
    if reason:
        log(f"compile-only: {reason}; no case was run")
        summary.update({"ran": 0, "not_run_reason": reason, "wall_s": round(time.time() - t0, 2)})
        return summary
    writer = results.ResultsWriter(out_path, resume=resume) if out_path else None
    counts = {"pass": 0, "fail": 0, "fault": 0}
    todo = [(key, [c for c in cs if c.id not in done_ids], comp) for (key, cs), comp in zip(work, compiled)]
    todo = [t for t in todo if t[1]]
    try:
        for i, (key, comp, preps, packed) in enumerate(_prepared(todo, workers), 1):
            tk = time.time()
            recs = run_prepared(key, preps, packed, comp.cubin_path)
            for r in recs:
                counts[r["status"]] = counts.get(r["status"], 0) + 1
            if writer:
                writer.write_cases(recs)
            nfail = sum(r["status"] != "pass" for r in recs)
            log(f"[{i}/{len(todo)}] {key.name}: {len(recs)} cases, {nfail} not passing ({time.time() - tk:.2f}s)")
            if any(r["status"] == "fault" for r in recs):
                log("a CUDA fault poisons this process's context: stopping; results so far are kept")
                summary["aborted"] = True
                break
    finally:
        summary.update(counts)
        summary["wall_s"] = round(time.time() - t0, 2)
        if writer:
            writer.close(summary)
    return summary


def prepare_and_pack(cs: list[_cases.Case]):
    """Host work of one launch (runs in worker processes): references, images, packed buffers.
    The images travel inside `packed`; each Prepared drops its copy to keep the transfer small."""
    preps = [reference.prepare(c) for c in cs]
    packed = launch.pack(preps)
    for p in preps:
        p.image = p.a_regs = p.c_regs = None
    return preps, packed


def _prepare_job(cs):
    return prepare_and_pack(cs)


def _prepared(todo, workers):
    """Yield (key, compiled, preps, packed) in order, preparing ahead in a process pool."""
    workers = workers or min(len(todo), os.cpu_count() or 1)
    if workers <= 1 or len(todo) <= 1:
        for key, cs, comp in todo:
            yield (key, comp, *prepare_and_pack(cs))
        return
    # spawn: the parent has a CUDA context by now, and forked children must not inherit it
    ctx = multiprocessing.get_context("spawn")
    ahead = 2 * workers  # bounded look-ahead keeps memory flat however long the sweep is
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(_prepare_job, t[1]) for t in todo[:ahead]]
        for i, (key, cs, comp) in enumerate(todo):
            preps, packed = futures[i].result()
            futures[i] = None
            if i + ahead < len(todo):
                futures.append(pool.submit(_prepare_job, todo[i + ahead][1]))
            yield key, comp, preps, packed


def run_prepared(key: wgmma.KernelKey, preps, packed, cubin_path) -> list[dict]:
    try:
        regs = launch.run(str(cubin_path), key.name, packed)
    except Exception as e:  # a sticky CUDA error: record it against every case of the launch
        msg = f"{type(e).__name__}: {e}"
        return [{"id": p.case.id, "kernel": key.name, "status": "fault", "error": msg} for p in preps]
    return [_diff.diff(p, regs[i]) for i, p in enumerate(preps)]


def run_kernel(key: wgmma.KernelKey, cs: list[_cases.Case], cubin_path) -> list[dict]:
    return run_prepared(key, *prepare_and_pack(cs), cubin_path)
