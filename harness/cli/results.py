"""compare, merge, junit, report, and a fleet's formats (verdict, textfile, bundle): commands that read results files
(harness/records/ does the work) and write what CI, a fleet's monitoring or a bug report takes."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from harness.cli.common import UsageError, one_line, out_file, results_out, show
from harness.enums import ExitCode


def _results_files(cmd: str, items) -> list[Path]:
    """The results files named on the command line: files, directories (one run each) or comma lists of files."""
    from harness.records import results
    names = []
    for item in items:
        parts = item.split(",")
        if any(not x.strip() for x in parts):
            raise UsageError(f"{cmd}: {item!r}: an empty name in the list of results files")
        names += parts
    try:
        return results.expand_run(names)
    except results.ResultsFileError as e:
        raise UsageError(f"{cmd}: {e}") from None


def cmd_merge(a) -> int:
    from harness.records import merge, results
    out = results_out("merge", "--out", a.out)
    files = _results_files("merge", a.inputs)
    if any(f.resolve() == out.resolve() for f in files):
        raise UsageError(f"merge: --out {a.out} is one of the inputs; write the merged run elsewhere")
    try:
        env, cases, summary, disagreements = merge.merge(files, a.allow_mixed, a.allow_incomplete)
    except results.ResultsFileError as e:
        raise UsageError(f"merge: {e}") from None
    try:
        merge.write(out, env, cases, summary, disagreements)
    except OSError as e:
        raise UsageError(f"merge: --out {a.out}: cannot write: {e.strerror or e}") from None
    bad = sum(summary[k] for k in merge.BAD)
    code = merge.exit_code(summary, disagreements)
    if a.json:
        print(json.dumps({**summary, "out": str(out), "files": list(map(str, files)),
                          "disagreements": disagreements, "exit": int(code)}, indent=2))
        return code
    print(f"merged {summary['inputs']} files: {summary['cases']} cases: {summary['pass']} pass, {bad} fail, fault, "
          f"time out or did not compile, {summary['not-run']} not run anywhere -> {out}")
    for d in disagreements[:20]:
        print(f"  disagreement: {d['id']}: " + ", ".join(f"{r['file']}={r['status']}" for r in d["runs"]))
    if len(disagreements) > 20:
        print(f"  ({len(disagreements) - 20} more disagreements, in the merged file)")
    for f in summary.get("environment_errors", []):
        print(f"  unusable GPU in {f['file']}: {f['error']}")
    for f in summary.get("incomplete_inputs", []):
        print(f"  NOT WHOLE: {f['file']}: {f['problem']} (the merged file says so too)")
    return code


def cmd_compare(a) -> int:
    from harness.records import compare, results
    old, new = _results_files("compare", [a.old]), _results_files("compare", [a.new])
    try:
        report = compare.compare(old, new, accept_lost_coverage=a.accept_lost_coverage, allow_mixed=a.allow_mixed,
                                 allow_incomplete=a.allow_incomplete)
    except results.ResultsFileError as e:
        raise UsageError(f"compare: {e}") from None
    print(json.dumps(report, indent=1) if a.json else compare.render(report))
    return ExitCode.FAILED if report["regressed"] or report["incomplete"] else ExitCode.OK


def cmd_junit(a) -> int:
    from harness.records import junit, results
    out = out_file("junit", "--out", a.out)
    src = Path(a.results)
    if "," in a.results or src.is_dir():
        raise UsageError(f"junit: {a.results}: give one results file (merge a run's files first)")
    if not src.is_file():
        raise UsageError(f"junit: {a.results}: no such results file")
    if src.resolve() == out.resolve():
        raise UsageError(f"junit: --out {a.out} is the results file; write the XML elsewhere")
    try:
        totals = junit.convert(src, out, a.allow_mixed, a.allow_incomplete)
    except results.ResultsFileError as e:
        raise UsageError(f"junit: {e}") from None
    except OSError as e:
        raise UsageError(f"junit: --out {a.out}: cannot write: {e.strerror or e}") from None
    show({**totals, "out": str(out)}, a.json, f"{totals['tests']} test cases ({totals['failures']} failures, "
           f"{totals['errors']} errors, {totals['skipped']} skipped) -> {out}"
           + "".join(f"\nNOT WHOLE: {src}: {p}" for p in totals["incomplete"]))
    return ExitCode.FAILED if totals["incomplete"] else ExitCode.OK


def cmd_report(a) -> int:
    """The tables; exit 1 where one of them is of a file that is not one whole run (each said on stderr, and in
    its table), or the README has drifted."""
    from harness.records import report, results
    try:
        text = report.render(a.root)
        code = ExitCode.OK
        if a.check:
            ok = report.check(a.check, a.root)
            text = f"{a.check}: {'matches' if ok else 'DRIFTED from'} the results files under {a.root}"
            code = ExitCode.OK if ok else ExitCode.FAILED
        elif a.update:
            Path(a.update).write_text(report.update(Path(a.update).read_text(), a.root))
            text = None
    except BrokenPipeError:
        raise
    except (results.ResultsFileError, OSError) as e:
        raise UsageError(f"report: {e}") from None
    if text is not None:
        print(text)
    for p in report.problems(report.render(a.root)):
        print(one_line(f"report: {p}"), file=sys.stderr)
        code = ExitCode.FAILED
    return int(code)

# ------------------------------------------------------------------------------------------ a fleet's formats
# verdict and textfile: a fleet's formats from one results file (harness/records/fleet.py says what each holds);
# bundle: the repro bundle of its failing cases (as sweep --bundle). Bad input (a missing or unreadable results file,
# a --out that is no folder) is one line on stderr and exit 2 before anything is written; for `verdict` that is also
# NVIDIA Health Validation's "no verdict" exit code.

def _load(cmd: str, path_text: str):
    from harness.records import results
    p = Path(path_text)
    if "," in path_text or p.is_dir():
        raise UsageError(f"{cmd}: {path_text}: give one results file (merge a run's files first)")
    try:
        return results.load(p)
    except results.ResultsFileError as e:
        raise UsageError(f"{cmd}: {e}") from None


def _age(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise UsageError(f"verdict: --max-age {text!r}: give seconds, a positive number") from None
    if not math.isfinite(v) or v <= 0:
        raise UsageError(f"verdict: --max-age {text!r}: give seconds, a positive number")
    return v


def cmd_verdict(a) -> int:
    from harness.records import fleet
    max_age = _age(a.max_age) if a.max_age is not None else None
    out = Path(a.out) if a.out else None
    if out is not None and out.is_dir():
        raise UsageError(f"verdict: --out {a.out}: is a directory; name the verdict's file")
    env, cases, summary = _load("verdict", a.results)
    v = fleet.verdict(env, cases, summary, str(a.results), max_age_s=max_age)
    text = json.dumps(v, indent=1)
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text + "\n")
        except OSError as e:
            raise UsageError(f"verdict: --out {a.out}: cannot write: {e.strerror or e}") from None
    print(text)
    return v["exit_code"]


def cmd_textfile(a) -> int:
    from harness.records import fleet
    out = Path(a.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"textfile: --out {a.out}: not a directory (node_exporter's textfile directory)")
    env, cases, summary = _load("textfile", a.results)
    try:
        out.mkdir(parents=True, exist_ok=True)
        written = fleet.write_textfiles(env, cases, summary, out)
    except OSError as e:
        raise UsageError(f"textfile: --out {a.out}: cannot write: {e.strerror or e}") from None
    if not written:
        print(f"textfile: {a.results}: the run used no GPU; nothing written", flush=True)
        return ExitCode.NOTHING_RAN
    for p in written:
        print(f"wrote {p}")
    return ExitCode.OK


def write_bundle(cmd: str, results_path: Path, out: Path, toolchain=None) -> int:
    """The repro bundle of a results file's failing cases (harness/records/bundle.py), one line saying where; its
    problems (a kernel that no longer compiles, a case not in today's plan) on stderr, exit 1 with them. `bundle`'s,
    and `sweep --bundle`'s once the sweep has run."""
    from harness.records import bundle, results
    try:
        m = bundle.write(results_path, out, toolchain)
    except results.ResultsFileError as e:
        raise UsageError(f"{cmd}: {e}") from None
    except OSError as e:
        raise UsageError(f"{cmd}: --bundle {out}: cannot write: {e.strerror or e}") from None
    n = sum(len(k["cases"]) for k in m["kernels"])
    print(f"repro bundle: {n} failing cases of {len(m['kernels'])} kernels in {out} (manifest.json)")
    for p in m["problems"]:
        print(f"bundle: {p}", file=sys.stderr)
    return ExitCode.FAILED if m["problems"] else ExitCode.OK


def cmd_bundle(a) -> int:
    out = Path(a.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"bundle: --out {a.out}: not a directory")
    if "," in a.results or Path(a.results).is_dir():
        raise UsageError(f"bundle: {a.results}: give one results file")
    return write_bundle("bundle", Path(a.results), out)


def _merge_parser(sub, family_names) -> None:
    m = sub.add_parser("merge", help="several results files (GPUs, nodes) as one; exit 1 on any disagreement")
    m.add_argument("inputs", nargs="+", help="results files, comma lists of them, or run folders (a folder: its "
                                             "*.jsonl except probe-*.jsonl and merged*.jsonl)")
    m.add_argument("--out", required=True, help="the merged results file (its folder is created)")
    m.add_argument("--json", action="store_true", help="print the summary as JSON")
    _reader_args(m)
    m.set_defaults(fn=cmd_merge)


def _compare_parser(sub, family_names) -> None:
    c = sub.add_parser("compare", help="what changed between two runs (exit 1 if anything regressed)")
    c.add_argument("old", help="results file, run folder (its *.jsonl except probe-*.jsonl and merged*.jsonl), "
                               "or a comma list of files")
    c.add_argument("new", help="the same, for the new run")
    c.add_argument("--json", action="store_true")
    c.add_argument("--accept-lost-coverage", action="store_true",
                   help="cases missing from new, or passing before and not run now, are a note, not a regression")
    _reader_args(c)
    c.set_defaults(fn=cmd_compare)


def _junit_parser(sub, family_names) -> None:
    j = sub.add_parser("junit", help="JUnit XML from a results file (one testcase per case)")
    j.add_argument("results", help="a results file (JSON Lines)")
    j.add_argument("--out", required=True, help="the XML file (its folder is created)")
    j.add_argument("--json", action="store_true", help="print the totals as JSON")
    _reader_args(j)
    j.set_defaults(fn=cmd_junit)


def _report_parser(sub, family_names) -> None:
    rp = sub.add_parser("report", help="results/README.md's tables from the committed results files")
    rp.add_argument("root", help="the results directory (one folder per run)")
    rp.add_argument("--update", metavar="README", help="rewrite the generated block of this file")
    rp.add_argument("--check", metavar="README", help="exit 1 if this file's generated block has drifted")
    rp.set_defaults(fn=cmd_report)


def _bundle_parser(sub, family_names) -> None:
    b = sub.add_parser("bundle", help="repro bundles of a results file's failing cases (as sweep --bundle)")
    b.add_argument("results", help="a results file (JSON Lines)")
    b.add_argument("--out", required=True, metavar="DIR", help="the bundle's folder (created)")
    b.set_defaults(fn=cmd_bundle)


def _verdict_parser(sub, family_names) -> None:
    v = sub.add_parser("verdict", help="a node verdict (NVIDIA Health Validation's shape) from a results file: "
                                       "exit 0 PASS/INFO/WARNING, 1 CRITICAL/UNKNOWN, 2 no verdict")
    v.add_argument("results", help="a results file (JSON Lines)")
    v.add_argument("--max-age", metavar="SECONDS", help="UNKNOWN when the sweep is older than this")
    v.add_argument("--out", metavar="FILE", help="also write the verdict to FILE")
    v.set_defaults(fn=cmd_verdict)


def _textfile_parser(sub, family_names) -> None:
    t = sub.add_parser("textfile", help="Prometheus textfiles (one per GPU UUID, written atomically) from a "
                                        "results file, for node_exporter's textfile collector")
    t.add_argument("results", help="a results file (JSON Lines)")
    t.add_argument("--out", required=True, metavar="DIR", help="the textfile collector's directory")
    t.set_defaults(fn=cmd_textfile)


def _reader_args(p) -> None:
    """The flags of the commands that read results files (merge, compare, junit): what they otherwise refuse."""
    p.add_argument("--allow-mixed", action="store_true",
                   help="take files of different toolchains or harness versions as one run (refused otherwise, "
                        "exit 2); the merged environment says toolchain: mixed")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="read a file that is not one whole run (no summary: killed or still being written; marked "
                        "interrupted; cases lost or written twice) instead of refusing it (exit 2); the answer "
                        "says so and exits 1 or more")


# the commands this group adds, by name (harness/cli/__init__.py puts them in --help's order)
PARSERS = {"merge": _merge_parser, "compare": _compare_parser, "junit": _junit_parser, "bundle": _bundle_parser,
           "verdict": _verdict_parser, "textfile": _textfile_parser, "report": _report_parser}
