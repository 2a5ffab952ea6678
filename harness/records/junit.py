"""JUnit XML from a results file, for fleet CI (Jenkins, GitLab, GitHub test reporters).

One <testsuite> per family for its ordinary cases and one `<family>.controls` for its negative controls (so a
CI's pass count is not padded by controls); one <testcase> per case: classname `family.kernel`, name the case
id, time the case's share of its kernel's `kernel_s`. fail -> <failure> whose message gives the mismatch count
and the first mismatches (row / col / expected / got and thread / register / half for wgmma, cta / lane /
tmem_column for tcgen05), the full list and any diagnosis in the text; fault, timeout, compile-error and error
-> <error type=STATUS> with the error text; not-run -> <skipped> with the reason. The layout follows the common
Jenkins/Ant JUnit schema (tests/junit.xsd).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from harness.enums import Status
from harness.records import results
from harness.records.compare import coordinates

ERRORS = (Status.FAULT, Status.TIMEOUT, Status.COMPILE_ERROR, Status.ERROR)
IN_MESSAGE = 3  # mismatches spelled out in a failure's message (all of first_mismatches go in its text)


def _mismatch(m: dict) -> str:
    at = ", ".join(f"{k} {m[k]}" for k in coordinates(m))  # where it sits, in the family's terms
    return (f"row {m.get('row')} col {m.get('col')}: expected {m.get('expected')} got {m.get('got')}"
            + (f" ({at})" if at else ""))


def failure_message(rec: dict) -> str:
    first = rec.get("first_mismatches") or []
    n = rec.get("mismatches")
    head = []
    if rec.get("control"):
        head.append(f"negative control {rec['control']}: " + (rec.get("why") or "not caught as the model predicts"))
    if n:
        head.append(f"{n} mismatches" + ("; first: " + "; ".join(_mismatch(m) for m in first[:IN_MESSAGE])
                                         if first else ""))
    return ". ".join(head) or "failed"


def _details(rec: dict) -> str:
    lines = [_mismatch(m) for m in rec.get("first_mismatches") or []]
    lines += [f"{k}: {rec[k]}" for k in ("bad_rows", "bad_cols", "bad_threads", "bad_registers", "unsettled")
              if rec.get(k)]
    for d in rec.get("diagnosis") or []:
        lines.append(f"diagnosis operand {d.get('operand')}: {d.get('summary') or d.get('error') or d.get('status')}")
    return "\n".join(lines)


def _is_control(rec: dict) -> bool:
    """A negative control: its `control`, or its facets' (a control recorded without running has no `control`)."""
    facets = rec.get("facets")
    return bool(rec.get("control") or (isinstance(facets, dict) and facets.get("control")))


def _case_times(cases: dict) -> dict[str, float]:
    """A case's share of its kernel's launch-to-records time (0 where the file has none: not run, schema 1)."""
    per_kernel: dict[str, int] = {}
    for r in cases.values():
        if r.get("kernel_s") is not None:
            per_kernel[r.get("kernel", "")] = per_kernel.get(r.get("kernel", ""), 0) + 1
    return {cid: (r["kernel_s"] / per_kernel[r.get("kernel", "")] if r.get("kernel_s") is not None else 0.0)
            for cid, r in cases.items()}


def build(env: dict, cases: dict, summary: dict | None = None, incomplete=()) -> ET.Element:
    """The <testsuites> element for one run's records (results.load's answer); `incomplete`: why the file is not
    one whole run (results.ResultsFile.problems), each an <error> of a `results-file` suite, so that a CI's
    reporter shows a run cut short as red, not as the green of the cases it got to."""
    times = _case_times(cases)
    suites: dict[str, list[dict]] = {}
    for r in cases.values():
        fam = r.get("family") or "unknown"  # null in a record of another tool's: no suite named None
        suites.setdefault(f"{fam}.controls" if _is_control(r) else fam, []).append(r)
    root = ET.Element("testsuites", name="tensor-core-harness")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    for sid, (name, recs) in enumerate(sorted(suites.items())):
        counts = {"tests": len(recs), "failures": sum(r["status"] == Status.FAIL for r in recs),
                  "errors": sum(r["status"] in ERRORS for r in recs),
                  "skipped": sum(r["status"] == Status.NOT_RUN for r in recs),
                  "time": sum(times[r["id"]] for r in recs)}
        for k, v in counts.items():
            totals[k] += v
        suite = ET.SubElement(root, "testsuite", name=name, id=str(sid), tests=str(counts["tests"]),
                              failures=str(counts["failures"]), errors=str(counts["errors"]),
                              skipped=str(counts["skipped"]), time=f"{counts['time']:.3f}",
                              hostname=str(env.get("host") or "unknown"))
        if env.get("date"):
            suite.set("timestamp", str(env["date"])[:19])
        props = ET.SubElement(suite, "properties")
        for key in ("harness", "schema", "gpu", "gpu_uuid", "compute_capability", "driver", "nvrtc",
                    "cuda_visible_devices", "gpus_requested"):
            if env.get(key) is not None:
                ET.SubElement(props, "property", name=key, value=str(env[key]))
        if name.endswith(".controls"):
            ET.SubElement(props, "property", name="negative_controls",
                          value="a control passes when the wrong descriptor is caught as the model predicts")
        for r in recs:
            tc = ET.SubElement(suite, "testcase", classname=f"{r.get('family')}.{r.get('kernel')}", name=r["id"],
                               time=f"{times[r['id']]:.4f}")
            st = r["status"]
            if st == Status.FAIL:
                f = ET.SubElement(tc, "failure", message=failure_message(r), type="fail")
                f.text = _details(r) or None
            elif st in ERRORS:
                e = ET.SubElement(tc, "error", message=str(r.get("error") or st), type=str(st))
                e.text = str(r.get("error") or "") or None
            elif st == Status.NOT_RUN:
                ET.SubElement(tc, "skipped", message=str(r.get("reason") or "not run"))
            elif st == Status.OBSERVED:  # neither a pass nor a fail
                ET.SubElement(tc, "skipped", message=f"observation: {r.get('observation', '')}")
    if incomplete:
        suite = ET.SubElement(root, "testsuite", name="results-file", id=str(len(suites)), tests=str(len(incomplete)),
                              failures="0", errors=str(len(incomplete)), skipped="0", time="0.000",
                              hostname=str(env.get("host") or "unknown"))
        for i, why in enumerate(incomplete):
            tc = ET.SubElement(suite, "testcase", classname="results-file", name=f"whole-{i}", time="0.0000")
            ET.SubElement(tc, "error", message=str(why), type="incomplete").text = str(why)
        totals["tests"] += len(incomplete)
        totals["errors"] += len(incomplete)
    for k, v in totals.items():
        root.set(k, f"{v:.3f}" if k == "time" else str(v))
    return root


def write(env: dict, cases: dict, summary: dict | None, out: Path, incomplete=()) -> ET.Element:
    root = build(env, cases, summary, incomplete)
    ET.indent(root)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
    return root


def convert(results_path: Path, out: Path, allow_mixed: bool = False, allow_incomplete: bool = False) -> dict:
    """Write `out` from a sweep's results file (merge.read_run's checks: ResultsFileError for a probe's or bench's
    file, merge.MixedRuns, merge.NotWhole unless allowed); returns the totals (tests, failures, errors, skipped) and
    `incomplete`, why the file is not whole (then also in the XML)."""
    from harness.records import merge
    f, = merge.read_run([results_path], allow_mixed, allow_incomplete)
    problems = f.problems()
    root = write(f.env, f.cases, f.summary, out, problems)
    return {**{k: root.get(k) for k in ("tests", "failures", "errors", "skipped", "time")}, "incomplete": problems}
