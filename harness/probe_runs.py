"""Running the probes that are not ordinary sweeps (`addresses`, `field-overflow`) and writing their results.

Both write a results file (environment record first) and answer one paragraph for the terminal. Without an
sm_90a GPU they compile what they need and say that nothing ran.
"""
from __future__ import annotations

from pathlib import Path

from . import compile as _compile, diagnose, gpu, probes, results, sweep
from .worker import GpuWorker


def _cubins(keys):
    comps = _compile.compile_many(sweep.compile_jobs(sorted(set(keys), key=lambda k: k.name)))
    return {c.name: c.cubin_path for c in comps}


def addresses(out: Path, timeout: float, match: str | None = None) -> str:
    cases = probes.address_cases()
    if match:
        cases = [c for c in cases if match in c.id]
        if not cases:
            raise ValueError(f"no address-probe case matches {match!r}")
    cubins = _cubins([c.key for c in cases])
    reason = gpu.skip_reason(sweep.ARCH)
    if reason:
        return f"compile-only: {len(cases)} address probes planned, none run ({reason})"
    png_dir = out.parent / f"{out.stem}-png"
    worker = GpuWorker(gpu.select("all", sweep.ARCH)[0])
    try:
        recs = diagnose.diagnose(cases, lambda k: cubins[k.name], worker, timeout, png_dir, max_png=12)
    finally:
        worker.close()
    by_id = {c.id: c for c in cases}
    for r in recs:  # a control's explanation must name the setting the control changed
        c = by_id[r["id"]]
        if c.control and r.get("wrong"):
            r["control"] = c.control
    writer = results.ResultsWriter(out, results.environment())
    for r in recs:
        writer.write(r)
    as_model = sum(r.get("reads_as_model", False) for r in recs)
    controls = [r for r in recs if r.get("control")]
    summary = {"probes": len(recs), "reads_as_model": as_model,
               "not_probed": sum(r["status"] == "not-probed" for r in recs),
               "positive_reads_as_intended": sum(r.get("reads_as_intended", False) for r in recs
                                                 if not by_id[r["id"]].control),
               "positive": sum(not by_id[r["id"]].control for r in recs),
               "controls": len(controls), "controls_explained": sum("observed_change" in r for r in controls)}
    writer.close(summary)
    lines = [f"probe addresses: {len(recs)} operand probes over {len(cases)} cases; {as_model} read exactly the "
             f"addresses the layout model gives for their descriptor; {summary['positive_reads_as_intended']} of "
             f"{summary['positive']} positive probes read the intended layout; {summary['controls_explained']} of "
             f"{len(controls)} wrong-descriptor probes explained by a single changed setting; results: {out}"]
    lines += [f"  {r['id']} {r['operand']}: {r['summary']}" for r in controls[:6]]
    lines += [f"  NOT AS MODEL {r['id']} {r['operand']}: {r.get('vs_model') or r.get('error')}"
              for r in recs if not r.get("reads_as_model") and r["status"] != "not-probed"][:20]
    return "\n".join(lines)


def field_overflow(out: Path, timeout: float) -> str:
    setups = probes.overflow_setups()
    key = setups[0][0].key
    cubins = _cubins([key])
    reason = gpu.skip_reason(sweep.ARCH)
    if reason:
        return f"compile-only: {len(setups)} overflow experiments planned, none run ({reason})"
    from . import launch
    preps = [p for _, p, _, _ in setups]
    worker = GpuWorker(gpu.select("all", sweep.ARCH)[0])
    try:
        recs = sweep.run_isolated(worker, key, preps, launch.pack(preps), cubins[key.name], timeout)
        failed = [(c.id, st) for (c, _, st, _), r in zip(setups, recs) if r["status"] == "fail"]
        diags = diagnose.diagnose_setups(failed, lambda k: cubins[k.name], worker, timeout,
                                         out.parent / f"{out.stem}-png") if failed else []
    finally:
        worker.close()
    writer = results.ResultsWriter(out, results.environment())
    lines = [f"probe field-overflow: results {out}"]
    for (c, p, _, hypothesis), r in zip(setups, recs):
        r = {**r, "hypothesis": hypothesis, "descriptor_b": f"0x{p.descs[1]:016x}",
             "verdict": {"pass": "holds", "fail": "does not hold", "fault": "faults", "timeout": "hangs"}[r["status"]]}
        writer.write({"type": "case", **r})
        lines.append(f"  {c.id}: {hypothesis}: {r['verdict']}" + (f" ({r.get('error')})" if r.get("error") else ""))
    for d in diags:
        writer.write(d)
        lines.append(f"  diagnosis {d['id']}: {d.get('summary') or d.get('error')}")
    writer.close({"experiments": len(recs), "hold": sum(r["status"] == "pass" for r in recs)})
    return "\n".join(lines)
