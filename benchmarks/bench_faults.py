"""Mass faults on a GPU: the same selection swept clean and with a fault planted in every launch, side by side.

Run by hand on the GPU machine, from the repo root:
    python3 benchmarks/bench_faults.py --out-dir results/<run-name> [--kind f16 --n 64 ...] [--isolation-total 96]
The faulting sweep uses the launch backend benchmarks/fault_everywhere.py (every CTA's image offset points 4 GB
past the image buffer, and wgmma's planted trap), selected by SweepConfig(backend=...), never by the CLI.
Writes <out-dir>/faults-clean.jsonl, <out-dir>/faults-planted.jsonl and <out-dir>/bench-faults.json, and checks
that the planted sweep finished with every case accounted for (every case `fault`, none lost, none pass);
exit 1 if not. The bound on bisection is the engine's (harness/run/engine.py: IsolationBudget).
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the workers import benchmarks.fault_everywhere

from harness import sweep  # noqa: E402
from harness.records import results  # noqa: E402
from harness.run.engine import MAX_ISOLATION_FAILURES_TOTAL  # noqa: E402


def one(sel, out: Path, backend: str, isolation_total: int, timeout: float) -> dict:
    cfg = sweep.SweepConfig(out_path=out, backend=backend, isolation_total=isolation_total, timeout=timeout,
                            diagnose=0)
    t = time.time()
    summary = sweep.run(sel, cfg, log=lambda m: None)
    wall = time.time() - t
    _, recs, closing = results.load(out)
    statuses = {}
    for r in recs.values():
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    return {"wall_s": round(wall, 2), "exit": int(sweep.exit_code(summary)), "cases": summary["cases"],
            "records": len(recs), "statuses": statuses, "not_isolated": sum(r.get("isolated") is False
                                                                          for r in recs.values()),
            "timing": summary.get("timing")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--kind", action="append")
    ap.add_argument("--n", type=int, action="append")
    ap.add_argument("--isolation-total", type=int, default=MAX_ISOLATION_FAILURES_TOTAL)
    ap.add_argument("--timeout", type=float, default=30.0)
    a = ap.parse_args()
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sel = sweep.Selection(families=("wgmma", "tcgen05"), kinds=tuple(a.kind) if a.kind else None,
                          n_values=tuple(a.n) if a.n else (64,))
    clean = one(sel, out / "faults-clean.jsonl", sweep.DEFAULT_BACKEND, a.isolation_total, a.timeout)
    planted = one(sel, out / "faults-planted.jsonl", "benchmarks.fault_everywhere", a.isolation_total, a.timeout)
    ran = clean["cases"] - clean["statuses"].get("not-run", 0)
    ok = (planted["records"] == planted["cases"] and planted["statuses"].get("fault", 0) == ran
          and not planted["statuses"].get("pass"))
    report = {"clean": clean, "planted": planted, "isolation_total": a.isolation_total, "every_case_accounted": ok}
    (out / "bench-faults.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"{'':<10}{'wall s':>8}{'cases':>8}  statuses")
    for name, r in (("clean", clean), ("planted", planted)):
        print(f"{name:<10}{r['wall_s']:>8}{r['cases']:>8}  {r['statuses']} (not isolated: {r['not_isolated']})")
    print("every case accounted for" if ok else "NOT every case accounted for")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
