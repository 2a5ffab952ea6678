"""The tcgen05 part of a sweep: compile every form for sm_100a and sm_103a (cached, parallel), and run the
cases on a Blackwell GPU of the matching arch; on any other machine every case is recorded as not run, with
the reason, so a results file says what it did not check."""
from __future__ import annotations

from harness.run import compile as _compile, gpu
from harness import kernel_source
from harness.families.tcgen05 import forms as tcgen05, cases as T
from harness.run.worker import GpuWorker, LaunchFailed


def compile_jobs(arch: str):
    return [_compile.CompileJob(f.name, kernel_source.tcgen05_source(f), arch) for f in T.forms_for(arch)]


def run(log, timeout: float = 30.0, workers: int | None = None) -> tuple[list[dict], dict]:
    """(case records, summary part). Compiles for both Blackwell arches; runs where a GPU of one is."""
    comps = {}
    for arch in tcgen05.ARCHS:
        for job, comp in zip(compile_jobs(arch), _compile.compile_many(compile_jobs(arch), workers,
                                                                       raise_on_error=False)):
            comps[(arch, job.name)] = comp
    errors = [f"{k[1]} ({k[0]}): {c.error}" for k, c in comps.items() if c.error is not None]
    arch = next((a for a in tcgen05.ARCHS if gpu.skip_reason(a) is None), None)
    plan = T.all_cases(arch or "sm_100a")
    ncases = sum(len(cs) for _, cs in plan)
    log(f"tcgen05: {len(comps)} kernels compiled or cached for {', '.join(tcgen05.ARCHS)}, {ncases} cases")
    part = {"tcgen05_kernels": len(comps), "tcgen05_cases": ncases, "tcgen05_compile_errors": errors}
    if arch is None:
        reason = gpu.skip_reason("sm_100a").replace("sm_100a GPU", "Blackwell (sm_100a or sm_103a) GPU")
        part["tcgen05_not_run_reason"] = reason
        return [{"id": c.id, "kernel": f.name, "family": "tcgen05", "status": "not-run", "reason": reason}
                for f, cs in plan for c in cs], part
    recs = []
    worker = GpuWorker(next(i for i in range(gpu.device_count()) if gpu.device_info(i)["arch"] == arch),
                       backend="harness.families.tcgen05.kernel")
    try:
        from harness.families.tcgen05 import kernel as tcgen05_launch
        for f, cs in plan:
            comp = comps[(arch, f.name)]
            if comp.error is not None:
                recs += [{"id": c.id, "kernel": f.name, "status": "compile-error", "error": str(comp.error)}
                         for c in cs]
                continue
            preps = [T.prepare(c, arch) for c in cs]
            try:
                out = worker.run(str(comp.cubin_path), f.name, tcgen05_launch.pack(preps), timeout)
            except LaunchFailed as e:  # one case at a time, in fresh workers, to name the faulting ones
                recs += [_alone(worker, comp, f, p, timeout, e) for p in preps]
                continue
            j = 0
            for p in preps:
                k = len(p.images)
                recs.append(T.diff(p, out[j:j + k, :128, :p.read_cols], out[j:j + k, 128, 0]))
                j += k
            log(f"tcgen05 {f.name}: {len(cs)} cases, {sum(r['status'] != 'pass' for r in recs[-len(cs):])} "
                "not passing")
    finally:
        worker.close()
    return recs, part


def _alone(worker, comp, f, p, timeout, first) -> dict:
    from harness.families.tcgen05 import kernel as tcgen05_launch
    try:
        out = worker.run(str(comp.cubin_path), f.name, tcgen05_launch.pack([p]), timeout)
        return T.diff(p, out[:, :128, :p.read_cols], out[:, 128, 0])
    except LaunchFailed as e:
        return {"id": p.case.id, "kernel": f.name, "family": "tcgen05", "status": e.status, "error": str(e)}
