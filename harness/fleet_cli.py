"""python -m harness verdict FILE | textfile FILE --out DIR: a fleet's formats from one results file
(harness/records/fleet.py says what each holds).

Bad input (a missing or unreadable results file, a --out that is no folder) is one line on stderr and exit 2
before anything is written; for `verdict` that is also NVIDIA Health Validation's "no verdict" exit code.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path


class FleetUsageError(ValueError):
    """One line for stderr (cli.main prefixes the command); exit 2."""


def _load(path_text: str):
    from harness.records import results
    p = Path(path_text)
    if "," in path_text or p.is_dir():
        raise FleetUsageError(f"{path_text}: give one results file (merge a run's files first)")
    try:
        return results.load(p)
    except results.ResultsFileError as e:
        raise FleetUsageError(str(e)) from None


def _age(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise FleetUsageError(f"--max-age {text!r}: give seconds, a positive number") from None
    if not math.isfinite(v) or v <= 0:
        raise FleetUsageError(f"--max-age {text!r}: give seconds, a positive number")
    return v


def cmd_verdict(a) -> int:
    from harness.records import fleet
    max_age = _age(a.max_age) if a.max_age is not None else None
    out = Path(a.out) if a.out else None
    if out is not None and out.is_dir():
        raise FleetUsageError(f"--out {a.out}: is a directory; name the verdict's file")
    env, cases, summary = _load(a.results)
    v = fleet.verdict(env, cases, summary, str(a.results), max_age_s=max_age)
    text = json.dumps(v, indent=1)
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text + "\n")
        except OSError as e:
            raise FleetUsageError(f"--out {a.out}: cannot write: {e.strerror or e}") from None
    print(text)
    return v["exit_code"]


def cmd_textfile(a) -> int:
    from harness.enums import ExitCode
    from harness.records import fleet
    out = Path(a.out)
    if out.exists() and not out.is_dir():
        raise FleetUsageError(f"--out {a.out}: not a directory (node_exporter's textfile directory)")
    env, cases, summary = _load(a.results)
    try:
        out.mkdir(parents=True, exist_ok=True)
        written = fleet.write_textfiles(env, cases, summary, out)
    except OSError as e:
        raise FleetUsageError(f"--out {a.out}: cannot write: {e.strerror or e}") from None
    if not written:
        print(f"textfile: {a.results}: the run used no GPU; nothing written", flush=True)
        return ExitCode.NOTHING_RAN
    for p in written:
        print(f"wrote {p}")
    return ExitCode.OK


def write_bundle(results_path: Path, out: Path, toolchain=None) -> int:
    """The repro bundle of a results file's failing cases (harness/records/bundle.py), one line saying where; its
    problems (a kernel that no longer compiles, a case not in today's plan) on stderr, exit 1 with them."""
    from harness.enums import ExitCode
    from harness.records import bundle, results
    try:
        m = bundle.write(results_path, out, toolchain)
    except results.ResultsFileError as e:
        raise FleetUsageError(str(e)) from None
    except OSError as e:
        raise FleetUsageError(f"--bundle {out}: cannot write: {e.strerror or e}") from None
    n = sum(len(k["cases"]) for k in m["kernels"])
    print(f"repro bundle: {n} failing cases of {len(m['kernels'])} kernels in {out} (manifest.json)")
    for p in m["problems"]:
        print(f"bundle: {p}", file=sys.stderr)
    return ExitCode.FAILED if m["problems"] else ExitCode.OK


def cmd_bundle(a) -> int:
    out = Path(a.out)
    if out.exists() and not out.is_dir():
        raise FleetUsageError(f"--out {a.out}: not a directory")
    if "," in a.results or Path(a.results).is_dir():
        raise FleetUsageError(f"{a.results}: give one results file")
    return write_bundle(Path(a.results), out)


def add_parsers(sub) -> None:
    b = sub.add_parser("bundle", help="repro bundles of a results file's failing cases (as sweep --bundle)")
    b.add_argument("results", help="a results file (JSON Lines)")
    b.add_argument("--out", required=True, metavar="DIR", help="the bundle's folder (created)")
    b.set_defaults(fn=cmd_bundle)
    v = sub.add_parser("verdict", help="a node verdict (NVIDIA Health Validation's shape) from a results file: "
                                       "exit 0 PASS/INFO/WARNING, 1 CRITICAL/UNKNOWN, 2 no verdict")
    v.add_argument("results", help="a results file (JSON Lines)")
    v.add_argument("--max-age", metavar="SECONDS", help="UNKNOWN when the sweep is older than this")
    v.add_argument("--out", metavar="FILE", help="also write the verdict to FILE")
    v.set_defaults(fn=cmd_verdict)
    t = sub.add_parser("textfile", help="Prometheus textfiles (one per GPU UUID, written atomically) from a "
                                        "results file, for node_exporter's textfile collector")
    t.add_argument("results", help="a results file (JSON Lines)")
    t.add_argument("--out", required=True, metavar="DIR", help="the textfile collector's directory")
    t.set_defaults(fn=cmd_textfile)
