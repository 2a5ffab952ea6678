"""Running the probes that are not ordinary sweeps (`addresses`, `field-overflow`) and writing their results.

Both write a results file (environment record first) and answer one paragraph for the terminal. Without an
sm_90a GPU they compile what they need and say that nothing ran.
"""
from __future__ import annotations

from pathlib import Path

from harness.enums import Arch
from harness.experiments import probes
from harness.families.wgmma import FAMILY as WGMMA, kernel as wgmma_kernel, probe as address_probe
from harness.records import results
from harness.run import compile as nvrtc, engine, gpu
from harness.run.worker import GpuWorker

ARCH = Arch.SM_90A


def _cubins(keys):
    keys = sorted(set(keys), key=lambda k: k.name)
    comps = nvrtc.compile_many([nvrtc.CompileJob(k.name, wgmma_kernel.source(k), ARCH) for k in keys])
    return {c.name: c.cubin_path for c in comps}


def addresses(out: Path, timeout: float, match: str | None = None) -> str:
    cases = probes.address_cases()
    if match:
        cases = [c for c in cases if match in c.id]
        if not cases:
            raise ValueError(f"no address-probe case matches {match!r}")
    cubins = _cubins([c.key for c in cases])
    reason = gpu.skip_reason(ARCH)
    if reason:
        return f"compile-only: {len(cases)} address probes planned, none run ({reason})"
    png_dir = out.parent / f"{out.stem}-png"
    worker = GpuWorker(gpu.select("all", ARCH)[0])
    try:
        recs = address_probe.diagnose(cases, lambda k: cubins[k.name], worker, timeout, png_dir, max_png=12)
    finally:
        worker.close()
    by_id = {c.id: c for c in cases}
    for r in recs:  # a control's explanation must name the setting the control changed
        c = by_id[r["id"]]
        if c.control and r.get("wrong"):
            r["control"] = c.control
    writer = results.ResultsWriter(out, results.environment(run="probe"))
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
    return _raw_experiments(out, timeout, probes.overflow_setups(), "field-overflow", probe_all=False)


def spec_examples(out: Path, timeout: float) -> str:
    return _raw_experiments(out, timeout, probes.spec_example_setups(), "spec-examples", probe_all=True)


def _raw_experiments(out: Path, timeout: float, setups, name: str, probe_all: bool) -> str:
    """Run (RawCase, Prepared, Setup, claim) experiments: every kernel key in one launch (a fault is bisected
    to its experiment), then the address probe on every experiment (`probe_all`) or on those that fail."""
    keys = {c.key.name: c.key for c, _, _, _ in setups}
    cubins = _cubins(keys.values())
    reason = gpu.skip_reason(ARCH)
    if reason:
        return f"compile-only: {len(setups)} {name} experiments planned, none run ({reason})"
    recs, diags = {}, []
    worker = GpuWorker(gpu.select("all", ARCH)[0])
    try:
        for kname, key in keys.items():
            group = [(c, p) for c, p, _, _ in setups if c.key.name == kname]
            preps = [p for _, p in group]
            for r in engine.run_isolated(worker, WGMMA.kernel_of(key), preps, wgmma_kernel.pack(preps),
                                         str(cubins[kname]), timeout):
                recs[r["id"]] = r
        chosen = [(c.id, st) for c, _, st, _ in setups if probe_all or recs[c.id]["status"] == "fail"]
        if chosen:
            diags = address_probe.diagnose_setups(chosen, lambda k: cubins[k.name], worker, timeout,
                                                  out.parent / f"{out.stem}-png")
    finally:
        worker.close()
    writer = results.ResultsWriter(out, results.environment(run="probe"))
    lines = [f"probe {name}: results {out}"]
    verdicts = {"pass": "holds", "fail": "does not hold", "fault": "faults", "timeout": "hangs"}
    for c, p, _, claim in setups:
        r = {**recs[c.id], "claim": claim, "descriptor_b": f"0x{p.descs[1]:016x}",
             "verdict": verdicts[recs[c.id]["status"]]}
        writer.write({"type": "case", **r})
        lines.append(f"  {c.id}: {claim}: {r['verdict']}" + (f" ({r.get('error')})" if r.get("error") else ""))
    for d in diags:
        writer.write(d)
        if d.get("status") != "pass":
            lines.append(f"  diagnosis {d['id']} {d['operand']}: {d.get('summary') or d.get('error')}")
    if diags:
        lines.append(f"  address probes: {sum(d.get('reads_as_model', False) for d in diags)} of {len(diags)} "
                     "operands read exactly where the experiment's claim puts them")
    writer.close({"experiments": len(recs), "hold": sum(r["status"] == "pass" for r in recs.values()),
                  "probed": len(diags), "probed_as_claimed": sum(d.get("reads_as_model", False) for d in diags)})
    return "\n".join(lines)
