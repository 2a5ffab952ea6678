"""bench: instruction latency and throughput per form, as a regression baseline (harness/timing/ does the work).

  python -m harness bench [--out FILE] [--match TEXT] [--kind K] [--n N] [--a-src SS|RS|TS] [--swizzle S]
                          [--family wgmma|mma_sync|tcgen05] [--gpu I] [--timeout S] [--list]
  python -m harness bench compare OLD NEW [--k 3] [--json]

bench exits 0 when every selected form of this GPU's arch was timed (others are recorded not-run), 1 if one
faulted, hung or did not compile; compare exits 1 on any slowdown beyond the noise, 0 otherwise; both exit 2
on bad input (one line on stderr).
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.cli.common import UsageError


def _selection(a) -> list:
    from harness.timing import forms as F
    families = tuple(a.family) if a.family else None
    sel = F.select(F.all_default(), match=a.match, kinds=a.kind, n_values=a.n, a_srcs=a.a_src,
                   swizzles=a.swizzle, families=families, cta_groups=a.cta_group)
    if not sel:
        raise UsageError("bench: no timed form matches these filters (--list shows them all)")
    return sel


def cmd_bench(a) -> int:
    if getattr(a, "bench_cmd", None) == "compare":
        return cmd_compare(a)
    from harness.timing import bench
    if a.timeout <= 0:
        raise UsageError("bench: --timeout must be positive seconds")
    if a.gpu < 0:
        raise UsageError("bench: --gpu is a device index (0, 1, ...)")
    sel = _selection(a)
    if a.list:
        for f in sel:
            print(f.id)
        print(f"{len(sel)} forms")
        return 0
    out = Path(a.out) if a.out else bench.default_out()
    res = bench.run(sel, out, device=a.gpu, timeout=a.timeout, jobs=a.jobs,
                    log=lambda m: print(m, flush=True) if a.verbose else None)
    print(bench.table(res["records"]))
    s = res["summary"]
    print(f"{len(sel)} forms in {s['wall_s']}s (compile {s['compile_s']}s); results: {out}")
    return bench.exit_code(s)


def cmd_compare(a) -> int:
    from harness.timing import stats
    rep = stats.compare(a.old, a.new, a.k)  # BenchFileError (a ValueError) -> exit 2
    print(json.dumps(rep, indent=1) if a.json else stats.render_compare(rep))
    return 1 if rep["slowdowns"] else 0


def _bench_parser(sub, family_names) -> None:
    b = sub.add_parser("bench", help="instruction latency and throughput per form, as a regression baseline")
    b.add_argument("--out", help="JSON Lines file; default results/scratch/bench-<time>.jsonl")
    b.add_argument("--match", help="only forms whose id contains this text")
    b.add_argument("--kind", action="append", help="kind (wgmma: f16, tf32, f8, s8, b1; mma_sync also i8, i4, f64) or input type (bf16, e4m3, ...)")
    b.add_argument("--n", action="append", type=int, help="only these N (repeatable)")
    b.add_argument("--a-src", action="append", choices=["SS", "RS", "TS"])
    b.add_argument("--swizzle", action="append", choices=["128B", "64B", "32B", "none"])
    b.add_argument("--family", action="append", choices=["wgmma", "mma_sync", "tcgen05"])
    b.add_argument("--cta-group", action="append", type=int, choices=[1, 2])
    b.add_argument("--gpu", type=int, default=0, help="CUDA device index (default 0)")
    b.add_argument("--timeout", type=float, default=120.0, help="seconds before a timing launch counts as hung")
    b.add_argument("--jobs", type=int, help="parallel compile processes (default: all cores)")
    b.add_argument("--list", action="store_true", help="print the selected forms and exit")
    b.add_argument("-q", "--quiet", dest="verbose", action="store_false", help="print only the final table")
    b.set_defaults(fn=cmd_bench, bench_cmd=None)
    bs = b.add_subparsers(dest="bench_cmd")
    c = bs.add_parser("compare", help="slowdowns beyond the measured noise (exit 1 on any)")
    c.add_argument("old")
    c.add_argument("new")
    c.add_argument("--k", type=float, default=3.0, help="noise multiple a change must exceed (default 3)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(fn=cmd_bench)


# the commands this group adds, by name (harness/cli/__init__.py puts them in --help's order)
PARSERS = {"bench": _bench_parser}
