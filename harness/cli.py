"""python -m harness {sweep, compare, merge, probe, desc, idesc, zmask, layout}

Bad arguments exit with status 2 and one line on stderr, before anything is compiled or launched.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path

from harness.enums import Arch, ExitCode, FamilyName, Major, OperandSource, Swizzle
from harness.spec import descriptors as D, layouts as L


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump, exit 2
        raise UsageError(f"{self.prog}: {message}")


def _int(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def _print(obj, as_json: bool, text: str):
    print(json.dumps(obj, indent=2) if as_json else text)


def _report_decoded(info: dict, title: str, as_json: bool, width: int) -> int:
    """Print a decoded descriptor's fields and the spec rules it breaks; exit 1 if it breaks any."""
    lines = [f"{title} {info['value']}"]
    lines += [f"  {k:<{width}} {v}" for k, v in info["fields"].items()]
    lines += [f"  problem: {p}" for p in info["problems"]] or ["  (no spec violations)"]
    _print(info, as_json, "\n".join(lines))
    return 1 if info["problems"] else 0


# ---------------------------------------------------------------------------------------------------- desc

def cmd_desc(a) -> int:
    if a.decode is not None:
        info = (D.decode_wgmma_desc(a.decode) if a.arch == "sm_90a"
                else D.decode_tcgen05_smem_desc(a.decode, a.arch))
    else:
        missing = [n for n in ("start", "lbo", "sbo") if getattr(a, n) is None]
        if missing:
            raise UsageError(f"desc: give --{', --'.join(missing)} (or --decode VALUE)")
        if a.arch == "sm_90a":
            if a.lbo_mode != "relative":
                raise UsageError("desc: --lbo-mode absolute is a tcgen05 (sm_103a) mode, not sm_90a")
            value = D.encode_wgmma_desc(a.start, a.lbo, a.sbo, a.swizzle, a.base_offset)
            info = D.decode_wgmma_desc(value)
        else:
            value = D.encode_tcgen05_smem_desc(a.start, a.lbo, a.sbo, a.swizzle, a.base_offset, a.lbo_mode, a.arch)
            info = D.decode_tcgen05_smem_desc(value, a.arch)
    return _report_decoded(info, f"{info['arch']} shared-memory matrix descriptor", a.json, 22)


def cmd_idesc(a) -> int:
    if a.decode is not None:
        info = D.decode_idesc(a.decode, a.kind)
    else:
        missing = [n for n in ("atype", "btype", "m", "n") if getattr(a, n) is None]
        if missing:
            raise UsageError(f"idesc: give --{', --'.join(missing)} (or --decode VALUE)")
        dtype = a.dtype or next(iter(D.DTYPE_CODES.get(a.kind, {"f32": 0})))
        d = D.InstrDescriptor(a.kind, a.atype, a.btype, dtype, a.m, a.n, a.transpose_a, a.transpose_b,
                              a.negate_a, a.negate_b, a.sparse, a.sparsity_selector, a.saturate, a.max_shift,
                              a.scale_type, a.a_sf_id, a.b_sf_id, a.k96, a.cta_group, a.ws)
        info = D.decode_idesc(D.encode_idesc(d), a.kind)
    return _report_decoded(info, f"tcgen05 instruction descriptor .kind::{info['kind']}", a.json, 18)


def cmd_zmask(a) -> int:
    if a.decode is not None:
        z = D.decode_zero_column_mask(a.decode)
    else:
        z = D.ZeroColumnMask(tuple(a.start_count), tuple(a.first_span), not a.all_zero, a.skip_span,
                             a.use_span, a.shift)
    value = D.encode_zero_column_mask(z)
    bits = D.zero_column_mask_bits(z, a.m, a.n)
    info = {"value": f"0x{value:016x}", "fields": D.as_dict(z), "m": a.m, "n": a.n,
            "mask_lsb_first": "".join(map(str, bits)),
            "zero_columns": [j for j, b in enumerate(bits) if b],
            "b_columns_used_from": z.column_shift}
    text = (f"zero-column mask descriptor {info['value']}  (M={a.m}, N={a.n})\n"
            f"  mask, column 0 first (1 = column reads as zero): {info['mask_lsb_first']}\n"
            f"  B columns {z.column_shift}..{z.column_shift + a.n - 1} are used (column shift {z.column_shift})")
    _print(info, a.json, text)
    return 0


# ---------------------------------------------------------------------------------------------------- layout

def cmd_layout(a) -> int:
    lay = L.SmemLayout(a.major, a.swizzle, a.dtype, a.rows, a.cols, a.lbo, a.sbo, a.start, a.base_offset)
    L.validate(lay)
    L.check_distinct(lay)
    addr = L.smem_address(lay)
    if a.png:
        from harness.diagnosis import pictures
        pictures.layout_png(lay, a.png)
        print(f"wrote {a.png}")
        return 0
    if a.json:
        print(json.dumps({"layout": D.as_dict(lay), "address": addr.tolist(),
                          "chunk": (addr >> 4).tolist(), "footprint": list(L.footprint(lay))}))
    else:
        print(L.render_chunks(lay))
    return 0


# ---------------------------------------------------------------------------------------------------- sweep

def cmd_sweep(a) -> int:
    from harness import sweep
    sel = sweep.Selection(
        families=tuple(a.family) if a.family else None, kinds=tuple(a.kind) if a.kind else None,
        n_values=tuple(a.n) if a.n else None, dtypes=tuple(a.dtype) if a.dtype else None,
        a_srcs=tuple(a.a_src) if a.a_src else None, cta_groups=tuple(a.cta_group) if a.cta_group else None,
        data_modes=tuple(a.data) if a.data else None, controls=not a.no_controls, match=a.match)
    out = Path(a.out) if a.out else Path("results") / "scratch" / (
        f"sweep-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}.jsonl")
    if a.timeout <= 0:
        raise UsageError("sweep: --timeout must be positive seconds")
    if a.resume and not a.out:
        raise UsageError("sweep: --resume needs the --out file to continue")
    if a.resume and Path(a.out).exists():
        from harness.records import results
        try:
            results.load(a.out)
        except results.ResultsFileError as e:
            raise UsageError(f"sweep: {e}") from None
    shard = _shard(a.shard)
    _check_gpus(a.gpus)
    try:
        sel.validate()
    except sweep.SweepError as e:
        raise UsageError(f"sweep: {e}") from None
    cfg = sweep.SweepConfig(out_path=out, workers=a.jobs, resume=a.resume, timeout=a.timeout, gpus=a.gpus,
                            shard=shard)
    try:  # an empty or impossible selection is refused while planning, before anything is compiled
        summary = sweep.run(sel, cfg)
    except sweep.SweepError as e:
        raise UsageError(f"sweep: {e}") from None
    for e in summary.get("compile_errors", []):
        print(f"NVRTC rejected {e['kernel']} for {e['arch']} ({e['cases']} cases); source and log: "
              f"{Path(e['source']).parent}")
    print(f"{summary.get('pass', 0)} passed, {summary.get('fail', 0)} failed, {summary.get('fault', 0)} faulted, "
          f"{summary.get('timeout', 0)} timed out, {summary.get('compile-error', 0)} did not compile, "
          f"{summary.get('not-run', 0)} not run of {summary['cases']} cases in {summary['wall_s']}s; results: {out}")
    for fam, reason in summary.get("not_run_reasons", {}).items():
        print(f"{fam}: not run: {reason}")
    return int(sweep.exit_code(summary))


def _shard(text: str | None):
    if text is None:
        return None
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise UsageError(f"sweep: --shard {text!r}: write I/N, for example 0/4 (Slurm: $SLURM_PROCID/$SLURM_NTASKS)") from None
    if not (n >= 1 and 0 <= i < n):
        raise UsageError(f"sweep: --shard {text}: need 0 <= I < N")
    return i, n


def _check_gpus(spec: str) -> None:
    """Refuse a bad --gpus before compiling; device numbers are checked only where a GPU is."""
    from harness.enums import Arch
    from harness.run import gpu
    if not (spec == "all" or spec.isdigit() or all(x.strip().isdigit() for x in spec.split(","))):
        raise UsageError(f"sweep: --gpus {spec!r}: use 'all', a count, or a comma list such as 0,1")
    if gpu.device_count():
        try:
            if spec != "all" and not any(gpu.select(spec, arch) for arch in Arch.values()):
                raise UsageError(f"sweep: --gpus {spec}: none of those GPUs is one the harness runs on "
                                 f"({', '.join(Arch.values())})")
        except gpu.GpuSelectionError as e:
            raise UsageError(f"sweep: {e}") from None


def cmd_merge(a) -> int:
    from harness.records import merge, results
    try:
        env, cases, summary, disagreements = merge.merge(a.inputs)
    except results.ResultsFileError as e:
        raise UsageError(f"merge: {e}") from None
    merge.write(a.out, env, cases, summary, disagreements)
    bad = sum(summary[k] for k in merge.BAD)
    print(f"merged {summary['inputs']} files: {summary['cases']} cases: {summary['pass']} pass, {bad} fail, fault, "
          f"time out or did not compile, {summary['not-run']} not run anywhere -> {a.out}")
    for d in disagreements[:20]:
        print(f"  disagreement: {d['id']}: " + ", ".join(f"{r['file']}={r['status']}" for r in d["runs"]))
    if len(disagreements) > 20:
        print(f"  ... {len(disagreements) - 20} more disagreements (in the merged file)")
    for f in summary.get("environment_errors", []):
        print(f"  unusable GPU in {f['file']}: {f['error']}")
    return int(merge.exit_code(summary, disagreements))


def cmd_probe(a) -> int:
    from harness.experiments import probes
    from harness import sweep
    if a.timeout <= 0:
        raise UsageError("probe: --timeout must be positive seconds")
    out = Path(a.out) if a.out else Path("results") / "scratch" / f"probe-{a.name}.jsonl"
    if a.name in ("base-offset", "start-alignment"):
        from harness.families.wgmma import FAMILY as WGMMA
        work = sweep.Plan([(WGMMA.kernel_of(key), cs) for key, cs in probes.work(a.name)])
        summary = sweep.execute(work, sweep.SweepConfig(out_path=out, timeout=a.timeout))
        if summary.get("ran") == 0:
            print(f"compile-only: {summary['not_run_reasons'].get('wgmma')}")
            return 0
        print(f"probe {a.name}: {summary.get('pass', 0)} cases behave as the model says, "
              f"{summary['cases'] - summary.get('pass', 0)} do not; results: {out}")
        return 0
    from harness.experiments import probe_runs
    run = {"addresses": lambda: probe_runs.addresses(out, a.timeout, a.match),
           "field-overflow": lambda: probe_runs.field_overflow(out, a.timeout),
           "spec-examples": lambda: probe_runs.spec_examples(out, a.timeout)}[a.name]
    print(run())
    return 0


def cmd_compare(a) -> int:
    from harness.records import compare, results
    try:
        report = compare.compare(a.old.split(","), a.new.split(","),
                                 accept_lost_coverage=a.accept_lost_coverage)
    except results.ResultsFileError as e:
        raise UsageError(f"compare: {e}") from None
    print(json.dumps(report, indent=1) if a.json else compare.render(report))
    return int(ExitCode.FAILED if report["regressed"] else ExitCode.OK)


def cmd_report(a) -> int:
    from harness.records import report, results
    try:
        if a.check:
            ok = report.check(a.check, a.root)
            print(f"{a.check}: {'matches' if ok else 'DRIFTED from'} the results files under {a.root}")
            return int(ExitCode.OK if ok else ExitCode.FAILED)
        if a.update:
            Path(a.update).write_text(report.update(Path(a.update).read_text(), a.root))
            return int(ExitCode.OK)
        print(report.render(a.root))
    except (results.ResultsFileError, OSError) as e:
        raise UsageError(f"report: {e}") from None
    return int(ExitCode.OK)


# ----------------------------------------------------------------------------------------------------

def _kinds() -> list[str]:
    from harness.families.wgmma import forms
    return list(dict.fromkeys(forms.KINDS + D.KINDS))


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m harness", description=__doc__)
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)

    s = sub.add_parser("sweep", help="run every case the node's GPUs support (the rest recorded as not run)")
    s.add_argument("--family", action="append", choices=FamilyName.values(), help="instruction family (repeatable)")
    s.add_argument("--kind", action="append", choices=_kinds(), help="wgmma or tcgen05 kind (repeatable)")
    s.add_argument("--n", action="append", type=int, help="only these N (repeatable)")
    s.add_argument("--a-src", action="append", choices=OperandSource.values())
    s.add_argument("--cta-group", action="append", type=int, choices=[1, 2], help="tcgen05 CTA group")
    s.add_argument("--dtype", action="append", choices=["f16", "f32", "s32"], help="accumulator type")
    s.add_argument("--data", action="append", choices=["exact", "normal"])
    s.add_argument("--match", help="only cases whose id contains this text")
    s.add_argument("--no-controls", action="store_true", help="skip the negative controls")
    s.add_argument("--out", help="results file (JSON Lines); default results/scratch/sweep-<time>.jsonl")
    s.add_argument("--resume", action="store_true", help="continue --out without re-running its cases")
    s.add_argument("--jobs", type=int, help="parallel compile processes (default: all cores)")
    s.add_argument("--timeout", type=float, default=30.0, help="seconds before a launch counts as hung")
    s.add_argument("--gpus", default="all", help="'all' (default: every visible GPU), a count, or a list 0,1")
    s.add_argument("--shard", metavar="I/N", help="run only kernel shard I of N (one per node of a fleet)")
    s.set_defaults(fn=cmd_sweep)

    m = sub.add_parser("merge", help="several results files (GPUs, nodes) as one; exit 1 on any disagreement")
    m.add_argument("inputs", nargs="+", help="results files, or directories of them")
    m.add_argument("--out", required=True)
    m.set_defaults(fn=cmd_merge)

    pr = sub.add_parser("probe", help="targeted experiments on what the spec leaves open")
    pr.add_argument("name", choices=["base-offset", "start-alignment", "addresses", "field-overflow",
                                     "spec-examples"])
    pr.add_argument("--match", help="addresses: only cases whose id contains this text")
    pr.add_argument("--out")
    pr.add_argument("--timeout", type=float, default=30.0)
    pr.set_defaults(fn=cmd_probe)

    c = sub.add_parser("compare", help="what changed between two results files (exit 1 if anything regressed)")
    c.add_argument("old", help="results file, directory of them, or a comma list of files")
    c.add_argument("new", help="results file, directory of them, or a comma list of files")
    c.add_argument("--json", action="store_true")
    c.add_argument("--accept-lost-coverage", action="store_true",
                   help="cases missing from new, or passing before and not run now, are a note, not a regression")
    c.set_defaults(fn=cmd_compare)

    rp = sub.add_parser("report", help="results/README.md's tables from the committed results files")
    rp.add_argument("root", help="the results directory (one folder per run)")
    rp.add_argument("--update", metavar="README", help="rewrite the generated block of this file")
    rp.add_argument("--check", metavar="README", help="exit 1 if this file's generated block has drifted")
    rp.set_defaults(fn=cmd_report)

    d = sub.add_parser("desc", help="encode or decode a shared-memory matrix descriptor")
    d.add_argument("--arch", required=True, choices=Arch.values())
    d.add_argument("--start", type=_int)
    d.add_argument("--lbo", type=_int)
    d.add_argument("--sbo", type=_int)
    d.add_argument("--swizzle", default="none", choices=Swizzle.values())
    d.add_argument("--base-offset", type=_int, default=0)
    d.add_argument("--lbo-mode", default="relative", choices=["relative", "absolute"])
    d.add_argument("--decode", type=_int, metavar="VALUE")
    d.add_argument("--json", action="store_true")
    d.set_defaults(fn=cmd_desc)

    i = sub.add_parser("idesc", help="encode or decode a tcgen05 instruction descriptor")
    i.add_argument("--kind", required=True, choices=list(D.KINDS))
    i.add_argument("--atype")
    i.add_argument("--btype")
    i.add_argument("--dtype")
    i.add_argument("--m", type=_int)
    i.add_argument("--n", type=_int)
    for flag in ("transpose-a", "transpose-b", "negate-a", "negate-b", "sparse", "saturate", "k96", "ws"):
        i.add_argument(f"--{flag}", action="store_true")
    i.add_argument("--sparsity-selector", type=_int, default=0)
    i.add_argument("--max-shift", type=_int, default=0)
    i.add_argument("--scale-type", default="ue8m0", choices=["ue8m0", "ue4m3"])
    i.add_argument("--a-sf-id", type=_int, default=0)
    i.add_argument("--b-sf-id", type=_int, default=0)
    i.add_argument("--cta-group", type=_int, default=1, choices=[1, 2])
    i.add_argument("--decode", type=_int, metavar="VALUE")
    i.add_argument("--json", action="store_true")
    i.set_defaults(fn=cmd_idesc)

    z = sub.add_parser("zmask", help="encode/decode a tcgen05 zero-column mask descriptor and show its mask")
    z.add_argument("--m", type=_int, required=True, choices=[32, 64, 128])
    z.add_argument("--n", type=_int, required=True)
    z.add_argument("--start-count", type=_int, nargs=4, default=[0, 0, 0, 0], metavar=("SC0", "SC1", "SC2", "SC3"))
    z.add_argument("--first-span", type=_int, nargs=4, default=[0, 0, 0, 0], metavar=("FS0", "FS1", "FS2", "FS3"))
    z.add_argument("--skip-span", type=_int, default=0)
    z.add_argument("--use-span", type=_int, default=0)
    z.add_argument("--shift", type=_int, default=0)
    z.add_argument("--all-zero", action="store_true", help="non-zero-mask bit 0: the mask is all 0s")
    z.add_argument("--decode", type=_int, metavar="VALUE")
    z.add_argument("--json", action="store_true")
    z.set_defaults(fn=cmd_zmask)

    lp = sub.add_parser("layout", help="show where each element of a canonical smem tile lives")
    lp.add_argument("--major", required=True, choices=Major.values())
    lp.add_argument("--swizzle", required=True, choices=list(L.SWIZZLE_BMS))
    lp.add_argument("--dtype", required=True)
    lp.add_argument("--rows", type=_int, required=True, help="MN extent")
    lp.add_argument("--cols", type=_int, required=True, help="K extent")
    lp.add_argument("--lbo", type=_int, required=True)
    lp.add_argument("--sbo", type=_int, required=True)
    lp.add_argument("--start", type=_int, default=0)
    lp.add_argument("--base-offset", type=_int, default=0)
    lp.add_argument("--json", action="store_true")
    lp.add_argument("--png", metavar="FILE", help="draw the tile (16-byte chunk of every element) to a PNG")
    lp.set_defaults(fn=cmd_layout)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "fn", None):
            raise UsageError("python -m harness: give a command: sweep, compare, merge, probe, desc, idesc, zmask or layout")
        return args.fn(args)
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return 2
    except (D.DescriptorError, L.LayoutError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
