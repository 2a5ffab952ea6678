"""`python -m harness bench`: compile every timing module (NVRTC, the harness's cache), time each selected form
on GPU `device` in a GpuWorker (backend harness.timing.backend), write JSON Lines (the environment record,
then one `timing` record per form, then a `summary`) and print a table.

Forms of an arch the GPU is not are recorded `not-run` with the reason (tcgen05 on an H100, wgmma on a B200,
everything without a GPU); they are compiled all the same, so a run anywhere proves they build.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

from harness.records import results
from harness.families.mma_sync import kernel as mma_sync_kernel
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
    chain = lat_job.meta.get("latency_chain", 1)  # mma.sync: a sample is a chain of this many dependent mma
    lat = lat / chain
    t0 = time.perf_counter()
    out = worker.run(cubin, tput_job.entry, tput_job, timeout)
    per_launch = [stats.throughput_launch(w, tput_job.meta["flop_per_cta"]) for w in out["words"]]
    tput = stats.summary([p["sm_median"] for p in per_launch])
    peak = f.peak()
    clock = stats.summary([p["clock_mhz"] for p in per_launch])
    rec = {
        "latency": {"unit": "clk", **stats.summary(lat), "clock64_overhead_min": int(overhead.min()),
                    "reps_per_launch": int(lat_job.params["reps"][0]), "warmup_reps": int(lat_job.params["warmup"][0]),
                    "launches": lat_job.launches, "chain": chain},
        "throughput": {"unit": "FLOP/clk/SM", **tput, "sm_min_worst": min(p["sm_min"] for p in per_launch),
                       "sms": per_launch[0]["sms"], "ctas": tput_job.grid, "threads_per_cta": tput_job.block,
                       "iters": int(tput_job.params["iters"][0]),
                       "mma_per_iter": tput_job.meta.get("mma_per_iter", S.KSTEPS),
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
    if f.family == "mma_sync":  # an emulated form issues a CALL of ptxas's routine instead
        kind, what = mma_sync_kernel.sass_expected(f.form)[0]
        return what if kind == "op" else "CALL"
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


INSTRUCTION_BYTES = 16  # every sm_90 instruction: the i-th of a function sits at offset 16 * i
MMA_SYNC_TENSOR = re.compile(mma_sync_kernel.TENSOR_OPCODE)


def backward_branches(instructions) -> list[tuple[int, int]]:
    """(index of the loop's first instruction, index of its backward branch) of each loop of a function's listing
    (sass.instructions gives a branch's target as its offset)."""
    out = []
    for j, ins in enumerate(instructions):
        m = re.fullmatch(r"0x([0-9a-f]+)", ins.operands) if ins.opcode.startswith("BRA") else None
        if m and int(m.group(1), 16) // INSTRUCTION_BYTES <= j:
            out.append((int(m.group(1), 16) // INSTRUCTION_BYTES, j))
    return out


def _registers(ins) -> list[str]:
    return [x.strip().removesuffix(".reuse") for x in ins.operands.split(",")]


def _mma_sync_loop(instructions, what: str) -> tuple[list, list[str]]:
    """The instructions of the one loop that issues mma (tensor-core instructions or calls), or the problem."""
    issuing = [(a, b) for a, b in backward_branches(instructions)
               if any(MMA_SYNC_TENSOR.fullmatch(i.opcode) or i.opcode.startswith("CALL") for i in instructions[a:b])]
    if len(issuing) != 1:
        return [], [f"{what}: {len(issuing)} loops issue mma, not 1"]
    a, b = issuing[0]
    return list(instructions[a:b + 1]), []


def mma_sync_sass_problems(f, fns: dict) -> list[str]:
    """Why an mma.sync timing module's SASS cannot give the form's numbers ([] when it can). Per mma the form's
    instructions (harness.families.mma_sync.kernel.sass_expected: one HMMA/IMMA/DMMA/BMMA, two HMMA for e4m3, a
    CALL of ptxas's routine for a form sm_90a emulates); then
      _tput: one loop, holding CHAINS mma per iteration and no other tensor-core instruction, in CHAINS distinct
             accumulators, each instruction's D its own C (independent chains, nothing serialised by a copy);
      _lat:  one loop, whose LAT_CHAIN mma all sit between its first two clock reads, every one on the same single
             accumulator, D = C (a dependent chain: each waits for the one before).
    An emulated form's calls are counted (their registers pass through the calling convention, not checked)."""
    expected = Counter(mma_sync_kernel.sass_expected(f.form))
    ops = {o: n for (kind, o), n in expected.items() if kind == "op"}
    calls = sum(n for (kind, _), n in expected.items() if kind == "call")
    out = []
    for entry, per_iter in ((f"{f.module_name}_tput", S.MMA_SYNC_CHAINS), (f"{f.module_name}_lat", S.MMA_SYNC_LAT_CHAIN)):
        body, problems = _mma_sync_loop(fns[entry], entry)
        out += problems
        if problems:
            continue
        if entry.endswith("_lat"):
            clocks = [i for i, ins in enumerate(body) if ins.opcode == "CS2R" and "SR_CLOCKLO" in ins.operands]
            if len(clocks) < 2:
                out.append(f"{entry}: the loop reads the clock {len(clocks)} times, not around the chain")
                continue
            inside, outside = body[clocks[0]:clocks[1]], body[:clocks[0]] + body[clocks[1]:]
            stray = [i.opcode for i in outside if MMA_SYNC_TENSOR.fullmatch(i.opcode) or i.opcode.startswith("CALL")]
            if stray:
                out.append(f"{entry}: {len(stray)} mma instructions outside the timed chain ({stray[0]})")
            body = inside
        tensor = [i for i in body if MMA_SYNC_TENSOR.fullmatch(i.opcode)]
        have = Counter(i.opcode for i in tensor)
        want = {o: n * per_iter for o, n in ops.items()}
        if dict(have) != want:
            out.append(f"{entry}: {dict(have) or 'no tensor-core instructions'} per iteration, not {want}")
        n_calls = sum(i.opcode.startswith("CALL") for i in body)
        if n_calls != calls * per_iter:
            out.append(f"{entry}: {n_calls} calls per iteration, not {calls * per_iter}")
        if calls and not any(MMA_SYNC_TENSOR.fullmatch(i.opcode) for i in fns[entry]):
            out.append(f"{entry}: the emulation routine it calls issues no tensor-core instruction")
        if calls or sum(ops.values()) != 1:  # a call, or ptxas's expansion (e4m3): no one instruction's registers
            continue
        regs = [_registers(i) for i in tensor]  # D, A, B, C[, metadata, selector]
        if entry.endswith("_lat"):
            broken = [k for k in range(1, len(regs)) if regs[k][3] != regs[k - 1][0]]
            if broken:
                out.append(f"{entry}: mma {broken[0]} of the chain does not take the one before's D as its C "
                           f"({tensor[broken[0] - 1].operands} -> {tensor[broken[0]].operands})")
        else:
            written: set[str] = set()
            for ins, r in zip(tensor, regs):
                if r[3] in written:
                    out.append(f"{entry}: an mma of the iteration waits for another's D ({ins.operands})")
                    break
                written.add(r[0])
    return out


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
    if out:
        return out
    if f.family == "mma_sync":
        return mma_sync_sass_problems(f, fns)
    if f.family != "wgmma":
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


# mma.sync rows: latency per mma of a dependent chain; "% wgmma" against wgmma's datasheet peak of the kind, as no
# mma.sync rate is cited (forms.MMA_SYNC_PEAK_BASIS); no % for s4, b1 and f64, which have no such peak
MMA_SYNC_HEADER = HEADER.replace("form" + " " * 4, "mma.sync" + " " * 0, 1).replace("% kind", "%wgmma")


def table(records: list[dict]) -> str:
    ran = [r for r in records if r["status"] != "not-run"]
    skipped = [r for r in records if r["status"] == "not-run"]
    warp_level = [r for r in ran if r["family"] == "mma_sync"]
    lines = [HEADER] + [row(r) for r in ran if r["family"] != "mma_sync"]
    if warp_level:
        lines += [MMA_SYNC_HEADER] + [row(r) for r in warp_level]
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

