"""`python -m harness bench`: compile every timing module (NVRTC, the harness's cache), time each selected form
on GPU `device` in a GpuWorker (backend harness.timing.backend), write JSON Lines (the environment record,
then one `timing` record per form, then a `summary`) and print a table.

Forms of an arch the GPU is not are recorded `not-run` with the reason (tcgen05 on an H100, wgmma on a B200,
everything without a GPU); they are compiled all the same, so a run anywhere proves they build.
"""
from __future__ import annotations

import datetime as _dt
import json
import subprocess
import time
from pathlib import Path

from harness.records import results
from harness.families.wgmma import kernel as wgmma_kernel
from harness.run import compile as C, gpu, sass
from harness.timing import forms as F, source as S, stats

STATUS_OK = "ok"


def _smi_uuid(uuid_hex: str) -> str | None:
    h = uuid_hex.removeprefix("GPU-")
    if len(h) != 32:
        return None
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def nvidia_smi_clocks(info: dict | None) -> dict | None:
    """SM clocks as nvidia-smi reports them now (MHz), or None. Older drivers lack some fields: the query
    falls back to the clocks alone."""
    if not info:
        return None
    target = _smi_uuid(info.get("uuid", "")) or str(info["index"])
    for fields in (("clocks.sm", "clocks.max.sm", "clocks.applications.graphics", "power.draw", "temperature.gpu"),
                   ("clocks.sm", "clocks.max.sm")):
        try:
            out = subprocess.run(["nvidia-smi", "-i", target, f"--query-gpu={','.join(fields)}",
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20)
        except Exception:
            return None
        if out.returncode == 0 and out.stdout.strip():
            vals = [v.strip() for v in out.stdout.strip().splitlines()[0].split(",")]
            return dict(zip(fields, vals))
    return None


def device_clock_mhz(device: int) -> float | None:
    """cudaDevAttrClockRate (the rated SM clock, kHz) in MHz, or None."""
    try:
        import cupy as cp
        return cp.cuda.runtime.deviceGetAttribute(13, device) / 1e3
    except Exception:
        return None


def compile_modules(forms_, workers: int | None = None) -> dict[tuple[str, str], C.Compiled]:
    mods = S.module_forms(forms_)
    keys = list(mods)
    # at full optimization (no fast-compile level): the loop's schedule is what is timed
    jobs = [C.CompileJob(name, S.source(mods[(name, arch)]), arch, fast_compile=False) for name, arch in keys]
    return dict(zip(keys, C.compile_many(jobs, workers=workers, raise_on_error=False)))


def _time_form(f, worker, cubin: str, sms: int, timeout: float) -> dict:
    lat_job, tput_job = S.jobs(f, sms)
    out = worker.run(cubin, lat_job.entry, lat_job, timeout)
    lat, overhead = stats.latency_samples(out["words"], int(lat_job.params["reps"][0]))
    t0 = time.perf_counter()
    out = worker.run(cubin, tput_job.entry, tput_job, timeout)
    per_launch = [stats.throughput_launch(w, tput_job.meta["flop_per_cta"]) for w in out["words"]]
    tput = stats.summary([p["sm_median"] for p in per_launch])
    peak = f.peak()
    clock = stats.summary([p["clock_mhz"] for p in per_launch])
    rec = {
        "latency": {"unit": "clk", **stats.summary(lat), "clock64_overhead_min": int(overhead.min()),
                    "reps_per_launch": int(lat_job.params["reps"][0]), "warmup_reps": int(lat_job.params["warmup"][0]),
                    "launches": lat_job.launches},
        "throughput": {"unit": "FLOP/clk/SM", **tput, "sm_min_worst": min(p["sm_min"] for p in per_launch),
                       "sms": per_launch[0]["sms"], "ctas": tput_job.grid, "threads_per_cta": tput_job.block,
                       "iters": int(tput_job.params["iters"][0]), "mma_per_iter": S.KSTEPS,
                       "warmup_launches": tput_job.warmup, "launches": tput_job.launches,
                       "cycles_median": per_launch[len(per_launch) // 2]["cycles_median"],
                       "launch_ms": [round(float(x), 4) for x in out["ms"]]},
        "sm_clock_mhz_measured": clock["median"],
        "tflops": tput["median"] * per_launch[0]["sms"] * clock["median"] * 1e6 / 1e12,
        "pct_of_kind_peak": 100 * tput["median"] / peak if peak else None,
        "pct_of_bf16_4096": 100 * tput["median"] / F.BF16_PEAK_H100,
        "wall_s": round(time.perf_counter() - t0, 3),
    }
    if f.reference():
        rec["latency_vs_reference"] = rec["latency"]["median"] - f.reference()["latency_clk"]
    return rec


BACKEND = "harness.timing.backend"


def sass_opcode(f) -> str:
    """The tensor-core SASS opcode (prefix) a timed form must issue: the sweep kernels' opcode for wgmma."""
    if f.family == "tcgen05":
        return "UTCHMMA.2CTA" if f.cta_group == 2 else "UTCHMMA"
    return wgmma_kernel.sass_opcode(f.key, f.variant)


def longest_mma_run(instructions) -> int:
    """The most wgmma (GMMA) instructions issued back to back: with nothing between them but NOPs. NVRTC 13.0's
    ptxas puts a NOP between the MMAs of one commit group, 13.5's does not; either way they pipeline. A wait
    (WARPGROUP.DEPBAR), an arrive or any other instruction ends a run."""
    run = best = 0
    for ins in instructions:
        if "GMMA" in ins.opcode:
            run += 1
        elif ins.opcode != "NOP":
            run = 0
        best = max(best, run)
    return best


def sass_problems(f, compiled: C.Compiled) -> list[str]:
    """Why a timing module's SASS cannot give the form's numbers ([] when it can): both kernels issue the form's
    instruction; a wgmma throughput loop issues its KSTEPS MMAs back to back (not serialized by ptxas), and the
    latency kernel waits for each MMA (wait_group 0) before it reads the clock again."""
    fns = sass.functions(str(compiled.cubin_path))
    op, out = sass_opcode(f), []
    for entry in (f"{f.module_name}_lat", f"{f.module_name}_tput"):
        if entry not in fns:
            out.append(f"{entry} is not in the module (it has {', '.join(sorted(fns))})")
        elif not any(i.opcode.startswith(op) for i in fns[entry]):
            out.append(f"{entry} issues no {op} (tensor-core: {', '.join(sass.tensor_core_opcodes(fns[entry]))})")
    if out or f.family != "wgmma":
        return out
    best = longest_mma_run(fns[f"{f.module_name}_tput"])
    if best < S.KSTEPS:
        out.append(f"{f.module_name}_tput: at most {best} wgmma in a row, not {S.KSTEPS} (serialized by ptxas?)")
    lat = fns[f"{f.module_name}_lat"]
    i = next(k for k, ins in enumerate(lat) if "GMMA" in ins.opcode)
    after = [f"{x.opcode} {x.operands}".strip() for x in lat[i + 1:] if x.opcode != "NOP"][:2]  # NOPs: as above
    if len(after) < 2 or not after[0].startswith("WARPGROUP.DEPBAR.LE gsb0, 0x0") or "CLOCK" not in after[1]:
        out.append(f"{f.module_name}_lat: the MMA is not followed by wait_group 0 and a clock read ({after})")
    return out


def run(forms_, out_path: Path, device: int = 0, timeout: float = 120.0, jobs: int | None = None,
        log=print, backend: str = BACKEND) -> dict:
    from harness.contract import LaunchFailed
    from harness.run.worker import GpuWorker
    t_start = time.perf_counter()
    info = gpu.device_info(device)
    arch = info["arch"] if info else None  # the GPU in words; which forms it times is gpu.runs's answer
    env = results.environment([device], seed_note="bench: fixed image seed 12345", run="bench")
    env["bench"] = {"device": device, "multiprocessors": info["multiprocessors"] if info else None,
                    "rated_sm_clock_mhz": device_clock_mhz(device) if info else None,
                    "nvidia_smi_before": nvidia_smi_clocks(info), "forms": len(forms_),
                    "consumer_warpgroups": S.CONSUMER_WGS, "mma_per_commit_group": S.KSTEPS,
                    "latency_reps": S.LAT_REPS, "latency_warmup_reps": S.LAT_WARMUP,
                    "latency_launches": S.LAT_LAUNCHES, "throughput_launches": S.TPUT_LAUNCHES,
                    "throughput_warmup_launches": S.TPUT_WARMUP_LAUNCHES, "target_cycles": S.TARGET_CYCLES}
    t = time.perf_counter()
    compiled = compile_modules(forms_, jobs)
    compile_s = time.perf_counter() - t
    log(f"compiled {len(compiled)} timing modules in {compile_s:.1f}s "
        f"({sum(c.cached for c in compiled.values())} from the cache)")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    records = []
    worker = GpuWorker(device, backend=backend) if any(gpu.runs(device, a) for f in forms_ for a in f.archs) \
        else None
    if worker:
        worker.start()
    try:
        with open(out_path, "w") as fh:
            def write(rec):
                fh.write(json.dumps(rec) + "\n")
                fh.flush()
            write(env)
            for f in forms_:
                farch = next((a for a in f.archs if gpu.runs(device, a)), None)
                here, farch = farch is not None, farch or f.archs[0]
                comp = compiled[(f.module_name, farch)]
                problems = sass_problems(f, comp) if comp.error is None else []
                if comp.error is not None:
                    rec = stats.timing_record(f, farch, "compile-error", reason=str(comp.error))
                elif problems:  # a number from this module would not be the form's: say why, time nothing
                    rec = stats.timing_record(f, farch, "compile-error", reason="SASS: " + "; ".join(problems))
                elif not here:
                    why = ("no GPU visible" if info is None else
                           f"needs {' or '.join(f.archs)}; GPU {device} is {info['name']} ({arch or info['compute_capability']})")
                    rec = stats.timing_record(f, farch, "not-run", reason=why)
                else:
                    try:
                        rec = stats.timing_record(f, farch, STATUS_OK,
                                                  **_time_form(f, worker, str(comp.cubin_path),
                                                               info["multiprocessors"], timeout))
                    except LaunchFailed as e:
                        rec = stats.timing_record(f, farch, e.status, reason=str(e))
                    except ValueError as e:  # a kernel that ran but wrote no clocks
                        rec = stats.timing_record(f, farch, "fail", reason=str(e))
                counts[rec["status"]] = counts.get(rec["status"], 0) + 1
                records.append(rec)
                write(rec)
                if rec["status"] != "not-run":
                    log(row(rec))
            summary = {"type": "summary", "forms": len(forms_), **counts, "compile_s": round(compile_s, 2),
                       "wall_s": round(time.perf_counter() - t_start, 2),
                       "nvidia_smi_after": nvidia_smi_clocks(info)}
            write(summary)
    finally:
        if worker:
            worker.close()
    return {"records": records, "summary": summary, "env": env}


# ---------------------------------------------------------------------------------------------------- table

HEADER = (f"{'form':<58} {'status':<8} {'lat min':>7} {'lat med':>7} {'FLOP/clk/SM':>11} {'spread':>7} "
          f"{'% kind':>6} {'% 4096':>6} {'MHz':>5}")


def _f(x, fmt):
    return format(x, fmt) if x is not None else "-"


def row(r: dict) -> str:
    if r["status"] != STATUS_OK:
        return f"{r['id']:<58} {r['status']:<8} {r.get('reason', '')[:90]}"
    lat, tp = r["latency"], r["throughput"]
    s = (f"{r['id']:<58} {'ok':<8} {lat['min']:>7.0f} {lat['median']:>7.0f} {tp['median']:>11.1f} "
         f"{stats.spread(tp):>7.2f} {_f(r['pct_of_kind_peak'], '6.1f'):>6} {r['pct_of_bf16_4096']:>6.1f} "
         f"{r['sm_clock_mhz_measured']:>5.0f}")
    if "reference" in r:
        s += f"  (published {r['reference']['latency_clk']} clk)"
    return s


def table(records: list[dict]) -> str:
    ran = [r for r in records if r["status"] != "not-run"]
    skipped = [r for r in records if r["status"] == "not-run"]
    lines = [HEADER] + [row(r) for r in ran]
    if skipped:
        reasons = sorted({r.get("reason", "") for r in skipped})
        lines.append(f"{len(skipped)} forms not run: " + "; ".join(reasons))
    ok = [r for r in ran if r["status"] == STATUS_OK and r["kind"] == "f16" and r["atype"] == "bf16"
          and r["family"] == "wgmma"]
    if ok:
        best = max(ok, key=lambda r: r["throughput"]["median"])
        lines.append(f"best dense bf16 wgmma: {best['id']}: {best['throughput']['median']:.1f} FLOP/clk/SM = "
                     f"{best['pct_of_bf16_4096']:.1f}% of {F.BF16_PEAK_H100} "
                     f"({'meets' if best['pct_of_bf16_4096'] >= 90 else 'BELOW'} the 90% goal)")
    return "\n".join(lines)


def default_out() -> Path:
    return Path("results") / "scratch" / f"bench-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}.jsonl"


def exit_code(summary: dict) -> int:
    return 1 if any(summary.get(k, 0) for k in ("fault", "timeout", "fail", "compile-error")) else 0

