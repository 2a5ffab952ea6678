"""Mass faults on an H100: a sweep of the dense family (wgmma) clean, and with a plausible descriptor bug planted in
every launch (benchmarks/lbo_unshifted.py: the LBO written unshifted), on the same node, each through the command
line in a process of its own. Issue 53 saw the planted sweep record 2,024 of 27,554 cases in 75 s (a clean one: ~10 s);
the engine's fault storms (harness/run/engine.py, FaultStorm) are to end it with every case accounted for within twice
the clean sweep's time.

    PYTHONPATH=$PWD python benchmarks/bench_mass_faults.py --out-dir "$OUT"

Steps, each a `sweep --family wgmma` of the same selection on a private cache (TC_HARNESS_CACHE, else a new folder):
  warm     the stock command line: compiles, keeps the launches (not compared)
  stock    the stock command line again, warm (for reference)
  clean    through benchmarks/sweep_with_backend.py and lbo_unshifted.py with nothing planted (the baseline)
  planted  the same with TC_BENCH_PLANT=lbo-unshifted
  clean2   the baseline again (the node's noise)
Writes bench-mass-faults.json (walls, exit codes, statuses, records against cases, the storms, the ratio, the GPU UUID
as nvidia-smi and as the harness record it), bench-mass-faults.log (every step's stderr, each step's start since the
epoch), <step>.workers.jsonl for the steps through lbo_unshifted.py (each GPU worker's start and launches, since the
epoch: TC_BENCH_WORKER_LOG) and the planted and clean results files, gzipped, under --out-dir. Exit 0 when the
planted sweep accounted for every case, no case passed that was not launched, and it took at most twice the clean
baseline; else 1. On a machine without a GPU it runs
(nothing is launched: every case not-run) and says so."""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.records import results  # noqa: E402

STEP_TIMEOUT_S = {"warm": 150, "stock": 60, "clean": 60, "planted": 120, "clean2": 60}


def step(name: str, args: list[str], env: dict, log) -> dict:
    """Run one step; its stderr goes to the log with each line's seconds since the step began (where a storm's
    seconds go: each faulting launch's line, the storm's, the diagnosis's), read as the lines come."""
    t, epoch = time.monotonic(), time.time()
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    timed: list[str] = []
    stdout: list[str] = []

    def read_stderr():
        for line in proc.stderr:
            timed.append(f"{time.monotonic() - t:7.3f} {line}")
    readers = [threading.Thread(target=read_stderr, daemon=True),
               threading.Thread(target=lambda: stdout.append(proc.stdout.read()), daemon=True)]
    for r in readers:
        r.start()
    try:
        code = proc.wait(timeout=STEP_TIMEOUT_S[name])
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = None
    for r in readers:
        r.join(timeout=10)
    if code is None:
        timed.append(f"(killed after {STEP_TIMEOUT_S[name]} s)\n")
    out = "".join(stdout)
    err = "".join(timed)
    wall = time.monotonic() - t
    log.write(f"===== {name}: exit {code} in {wall:.2f} s (began at {epoch:.4f} s since the epoch): {' '.join(args)}\n"
              f"{err}\n")
    log.flush()
    out_rec = {"wall_s": round(wall, 2), "exit": code}
    try:
        summary = json.loads(out)
        out_rec.update(summary_wall_s=summary.get("wall_s"), timing=summary.get("timing"))
    except ValueError:
        pass
    return out_rec


def read_back(path: Path, rec: dict) -> dict:
    try:
        env, cases, summary = results.load(path)
    except (results.ResultsFileError, OSError) as e:
        rec["file_error"] = str(e)
        return rec
    statuses: dict[str, int] = {}
    for r in cases.values():
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    rec.update(cases=(summary or {}).get("cases"), records=len(cases), statuses=statuses,
               not_isolated=sum(r.get("isolated") is False for r in cases.values()),
               not_launched=sum("not launched" in (r.get("error") or "") for r in cases.values()),
               unaccounted=(summary or {}).get("unaccounted"), gpu=env.get("gpu"), gpu_uuid=env.get("gpu_uuid"),
               passed_unlaunched=sum(r["status"] == "pass" and "not launched" in (r.get("error") or "")
                                     for r in cases.values()),
               timing=(summary or {}).get("timing"))
    return rec


def uuids(env: dict) -> dict:
    """GPU 0's UUID as nvidia-smi says and as the harness records it (issue 53: recorded whole)."""
    out = {}
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30)
        out["nvidia_smi"] = [ln.strip() for ln in smi.stdout.splitlines() if ln.strip()]
    except (OSError, subprocess.TimeoutExpired) as e:
        out["nvidia_smi"] = f"unavailable: {e}"
    probe = subprocess.run([sys.executable, "-c", "from harness.run import gpu; i = gpu.device_info(0); "
                                                  "print(i['uuid'] if i else 'no GPU')"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    out["harness"] = probe.stdout.strip() or probe.stderr.strip()[-300:]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default=os.environ.get("OUT"), help="where the results go (default: $OUT)")
    ap.add_argument("--family", default="wgmma")
    ap.add_argument("--kind", action="append", default=[], help="narrow the selection (a rehearsal on a CPU)")
    ap.add_argument("--n", action="append", default=[])
    a = ap.parse_args()
    if not a.out_dir:
        print("bench_mass_faults: give --out-dir or set OUT", file=sys.stderr)
        return 2
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cache = os.environ.get("TC_HARNESS_CACHE") or tempfile.mkdtemp(prefix="tc-harness-bench-cache-")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               TC_HARNESS_CACHE=cache)
    env.pop("TC_BENCH_PLANT", None)
    sel = ["--family", a.family] + [x for k in a.kind for x in ("--kind", k)] + [x for n in a.n for x in ("--n", n)]
    work = Path(tempfile.mkdtemp(prefix="tc-bench-mass-faults-"))
    report: dict = {"selection": sel, "cache": cache, "uuid": uuids(env)}
    print(f"GPU 0 UUID: nvidia-smi {report['uuid']['nvidia_smi']}; harness {report['uuid']['harness']}", flush=True)
    stock = [sys.executable, "-m", "harness", "sweep", *sel, "--json"]
    via = [sys.executable, str(ROOT / "benchmarks" / "sweep_with_backend.py"), "benchmarks.lbo_unshifted", "sweep",
           *sel, "--json"]
    steps = [("warm", stock, {}), ("stock", stock, {}), ("clean", via, {}),
             ("planted", via, {"TC_BENCH_PLANT": "lbo-unshifted"}), ("clean2", via, {})]
    with open(out / "bench-mass-faults.log", "w") as log:
        for name, args, more in steps:
            path = work / f"{name}.jsonl"
            workers_log = {"TC_BENCH_WORKER_LOG": str(out / f"{name}.workers.jsonl")} if args is via else {}
            rec = step(name, [*args, "--out", str(path)], dict(env, **more, **workers_log), log)
            report[name] = read_back(path, rec)
            print(f"{name:<8} exit {rec['exit']} in {rec['wall_s']:>7.2f} s: {report[name].get('statuses')} "
                  f"({report[name].get('records')} records of {report[name].get('cases')} cases)", flush=True)
    for name in ("clean", "planted"):
        src = work / f"{name}.jsonl"
        if src.exists():
            with open(src, "rb") as fh, gzip.open(out / f"{name}.jsonl.gz", "wb") as gz:
                shutil.copyfileobj(fh, gz)
    shutil.rmtree(work, ignore_errors=True)
    clean = min(report[n]["wall_s"] for n in ("clean", "clean2"))
    planted = report["planted"]
    ran = planted.get("statuses", {}).get("not-run", 0) < (planted.get("cases") or 0)
    report["ratio_planted_to_clean"] = round(planted["wall_s"] / clean, 2) if clean else None
    report["every_case_accounted"] = (planted.get("records") == planted.get("cases") and not planted.get("unaccounted")
                                      and not planted.get("passed_unlaunched"))
    report["within_2x"] = bool(report["ratio_planted_to_clean"] is not None and report["ratio_planted_to_clean"] <= 2)
    report["launched_on_a_gpu"] = ran
    (out / "bench-mass-faults.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"planted {planted['wall_s']} s against clean {clean} s: {report['ratio_planted_to_clean']}x; every case "
          f"accounted for: {report['every_case_accounted']}" + ("" if ran else " (no GPU here: nothing launched)"))
    return 0 if report["every_case_accounted"] and (report["within_2x"] or not ran) else 1


if __name__ == "__main__":
    sys.exit(main())
