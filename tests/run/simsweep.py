"""Helpers of the simulated-device tests: run a plan through the real sweep (engine, workers, spool, records)
on simulated GPUs, and run one kernel's cases through a simulator in this process."""
from __future__ import annotations

import json
from pathlib import Path

from harness import registry
from harness.plan import Plan
from harness.sweep import SweepConfig, execute
from tests.simulated import fake_gpus, oracle_cache
from tests.simulated.sim_common import fingerprint


def sweep(p: Plan, out: Path, timeout: float = 30.0, diagnose: int = 0, resume: bool = False, gpus: str = "all",
          workers: int = 2, keep_launches: bool = False):
    """(summary, {case id: record}, raw case records in file order, log lines). With workers=1 the kernels are
    prepared, and so launched, in plan order; with more, a kernel goes as soon as its preparation is done."""
    logs: list[str] = []
    cfg = SweepConfig(out_path=out, workers=workers, resume=resume, timeout=timeout, gpus=gpus, diagnose=diagnose,
                      backend=fake_gpus.BACKEND, keep_launches=keep_launches)
    summary = execute(p, cfg, log=logs.append)
    raw = [json.loads(ln) for ln in Path(out).read_text().splitlines() if ln.strip()]
    cases = [r for r in raw if r.get("type") == "case"]
    return summary, {r["id"]: r for r in cases}, raw, logs


def in_process(kernel, cases, device_run):
    """The same comparison the sweep makes, in this process (so a monkeypatched model takes effect)."""
    fam = registry.get(kernel.family)
    inp, exp = fam.prepare(kernel, list(cases))
    return fam.readback(kernel, exp, device_run("unused.cubin", kernel.name, inp))


def case_fingerprint(kernel, case) -> str:
    """The fingerprint of a case's (first) CTA in any launch: what TC_SIM_FAULTS and TC_SIM_LOG name."""
    inp, _ = registry.get(kernel.family).prepare(kernel, [case])
    return fingerprint(inp, 0)


def warm_wgmma_oracle(p: Plan) -> None:
    """Compute the CuTe DSL layouts the plan needs once, before several workers would each ask for them."""
    reqs = set()
    for k, _ in p.work:
        key = k.form
        reqs.add((oracle_cache.D_ATOM[key.dtype], key.dtype, key.n))
        reqs.update((t, oracle_cache.A_ACC[t], 8) for t in oracle_cache.A_ACC)
    oracle_cache.ensure_wgmma(sorted(reqs))
