"""What a fleet's node gate reads, from one results file: a node verdict and a Prometheus textfile per GPU.

Node verdict (`python -m harness verdict FILE`): one JSON object in the shape NVIDIA Health Validation gives its
node verdicts (docs.nvidia.com/health-validation, "Verdict Schema" and "FAQ"): an `overall_severity` of PASS, INFO,
WARNING, CRITICAL or UNKNOWN, the checks that produced it each with its severity, message and remediation steps,
and `affected_components` (category, check ids, entities, max severity) for every category with a non-PASS check;
and its process exit codes: 0 PASS / INFO / WARNING (the node may stay in service), 1 CRITICAL / UNKNOWN (take it
out, or its health could not be assessed), 2 no verdict at all (the results file is missing or unreadable). This is
offered as that tool's private-check contract: a wrapper runs `sweep --level 1` and then `verdict`, and hands the
JSON on. VERDICT_SCHEMA is its JSON Schema; Health Validation's own node-verdict.schema.json was not reachable
from here, so the field names beyond those its docs show (overall_severity, affected_components with check_ids,
entities, category, max_severity; severity names; exit codes) are this harness's.

What each outcome means for the node (the mapping a gate acts on):
- a case failed, faulted or timed out on a GPU (an ordinary case or a negative control): CRITICAL for that GPU;
- a GPU was present but CUDA unusable (gpu_state `unusable`, or `error` cases): CRITICAL;
- kernels did not compile, the sweep did not finish (no summary), or nothing ran: UNKNOWN (not assessed);
- the results are older than `max_age_s`: UNKNOWN (stale);
- cases recorded not run for an arch the node lacks (tcgen05 on an H100): INFO, not a problem;
- everything that ran passed: PASS.

Prometheus textfile (`python -m harness textfile FILE --out DIR`): one file per GPU UUID,
`tc_harness_<uuid>.prom`, for node_exporter's textfile collector, written atomically (a temporary file in DIR,
then rename), with the cases of each status, when the sweep ran, its age when written, its level, and whether it
finished.
"""
from __future__ import annotations

import datetime as _dt
import os
import re
import socket
from pathlib import Path

from harness.enums import Status

SEVERITIES = ("PASS", "INFO", "WARNING", "CRITICAL", "UNKNOWN")
# the worst wins; a CRITICAL finding (the node is known bad) outranks UNKNOWN (not assessed): both exit 1, and the
# verdict should name what is known
_RANK = {"PASS": 0, "INFO": 1, "WARNING": 2, "UNKNOWN": 3, "CRITICAL": 4}
EXIT = {"PASS": 0, "INFO": 0, "WARNING": 0, "CRITICAL": 1, "UNKNOWN": 1}
NO_VERDICT_EXIT = 2
CATEGORY = "GPU"
VERDICT_VERSION = "tc-harness-node-verdict/1"

REMEDIATION = {
    "miscompute": ["Take the node out of service (drain / cordon): a tensor-core instruction gave a wrong result "
                   "or faulted on the GPUs listed.",
                   "Confirm with the full sweep: python -m harness sweep --level 3 --bundle DIR.",
                   "If it reproduces, reset the GPU and run again; if it still reproduces, open a service request "
                   "with NVIDIA and attach the repro bundle (DIR) and the results file."],
    "unusable": ["Take the node out of service: a GPU is present but CUDA cannot use it.",
                 "Check nvidia-smi and the kernel log for Xid errors; reset the GPU or restart the node, then run "
                 "the level 1 sweep again."],
    "not-assessed": ["Keep the node out of service until it is assessed: the tensor-core check did not produce a "
                     "result for every case.",
                     "Run python -m harness doctor on the node, fix what it names, and run the sweep again."],
    "stale": ["Run the sweep again (python -m harness sweep --level 1): the results are older than the gate "
              "allows."],
}

VERDICT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tensor-core-harness node verdict (NVIDIA Health Validation's shape)",
    "type": "object",
    "required": ["schema_version", "tool", "node", "timestamp", "overall_severity", "exit_code", "checks",
                 "affected_components", "results_file"],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": VERDICT_VERSION},
        "tool": {"type": "string"}, "tool_version": {"type": "string"},
        "node": {"type": "string"}, "timestamp": {"type": "string"},
        "results_file": {"type": "string"}, "sweep_date": {"type": ["string", "null"]},
        "sweep_age_s": {"type": ["number", "null"]}, "level": {"type": ["integer", "null"]},
        "overall_severity": {"enum": list(SEVERITIES)},
        "exit_code": {"enum": [0, 1]},
        "checks": {"type": "array", "items": {"$ref": "#/$defs/check"}},
        "affected_components": {"type": "array", "items": {"$ref": "#/$defs/component"}},
    },
    "$defs": {
        "check": {"type": "object", "additionalProperties": False,
                  "required": ["check_id", "category", "severity", "entities", "message", "remediation"],
                  "properties": {"check_id": {"type": "string", "pattern": r"^tensor_core\.[a-z0-9_.]+$"},
                                 "category": {"const": CATEGORY},
                                 "severity": {"enum": list(SEVERITIES)},
                                 "entities": {"type": "array", "items": {"type": "string"}},
                                 "message": {"type": "string"},
                                 "remediation": {"type": "array", "items": {"type": "string"}},
                                 "counts": {"type": "object", "additionalProperties": {"type": "integer"}}}},
        "component": {"type": "object", "additionalProperties": False,
                      "required": ["category", "check_ids", "entities", "max_severity"],
                      "properties": {"category": {"const": CATEGORY},
                                     "check_ids": {"type": "array", "items": {"type": "string"}},
                                     "entities": {"type": "array", "items": {"type": "string"}},
                                     "max_severity": {"enum": list(SEVERITIES)}}},
    },
}


def _parse_date(text) -> _dt.datetime | None:
    try:
        d = _dt.datetime.fromisoformat(str(text))
    except (TypeError, ValueError):
        return None
    return d if d.tzinfo else d.replace(tzinfo=_dt.timezone.utc)


def _gpu_names(env: dict) -> dict:
    """CUDA index -> the GPU's UUID (or, without one, 'GPU <index>'): the entities a verdict names."""
    out = {}
    for g in env.get("gpus") or []:
        if isinstance(g, dict) and isinstance(g.get("index"), int):
            out[g["index"]] = g.get("uuid") or f"GPU {g['index']}"
    return out


def _entity(env: dict, index) -> str:
    names = _gpu_names(env)
    if index in names:
        return names[index]
    return env.get("gpu_uuid") or (f"GPU {index}" if index is not None else env.get("host") or "node")


def _check(check_id: str, severity: str, entities, message: str, remediation=(), counts=None) -> dict:
    c = {"check_id": check_id, "category": CATEGORY, "severity": severity, "entities": sorted(set(entities)),
         "message": message, "remediation": list(remediation)}
    if counts is not None:
        c["counts"] = counts
    return c


def verdict(env: dict, cases: dict, summary: dict | None, results_file: str, now: _dt.datetime | None = None,
            max_age_s: float | None = None) -> dict:
    """The node verdict of one results file's records (see the module docstring for the mapping)."""
    from harness import __version__
    now = now or _dt.datetime.now(_dt.timezone.utc)
    date = _parse_date(env.get("date"))
    age = (now - date).total_seconds() if date else None
    checks = []
    by_family: dict[str, list[dict]] = {}
    for rec in cases.values():
        by_family.setdefault(str(rec.get("family", "unknown")), []).append(rec)
    for family, recs in sorted(by_family.items()):
        counts = {s.value: sum(r.get("status") == s for r in recs) for s in Status}
        bad = [r for r in recs if r.get("status") in (Status.FAIL, Status.FAULT, Status.TIMEOUT)]
        err = [r for r in recs if r.get("status") == Status.ERROR]
        uncompiled = [r for r in recs if r.get("status") == Status.COMPILE_ERROR]
        ran = sum(Status(r["status"]).ran for r in recs if r.get("status") in Status.values())
        cid = f"tensor_core.{family}"
        if bad:
            ids = ", ".join(sorted(r["id"] for r in bad)[:3]) + (" ..." if len(bad) > 3 else "")
            checks.append(_check(cid, "CRITICAL", (_entity(env, r.get("gpu")) for r in bad),
                                 f"{len(bad)} of {len(recs)} {family} cases failed, faulted or timed out ({ids})",
                                 REMEDIATION["miscompute"], counts))
        elif err:
            checks.append(_check(cid, "CRITICAL", (_entity(env, r.get("gpu")) for r in err),
                                 f"{len(err)} {family} cases could not run: the GPU is unusable "
                                 f"({err[0].get('error', 'no message')})"[:400], REMEDIATION["unusable"], counts))
        elif uncompiled:
            checks.append(_check(cid, "UNKNOWN", [_entity(env, None)],
                                 f"{len(uncompiled)} {family} cases did not compile: their instructions were not "
                                 "checked", REMEDIATION["not-assessed"], counts))
        elif ran == 0:
            reason = next((r.get("reason") for r in recs if r.get("reason")), "no GPU of its arch")
            checks.append(_check(cid, "INFO", [_entity(env, None)],
                                 f"{len(recs)} {family} cases not run: {reason}"[:400], (), counts))
        else:
            checks.append(_check(cid, "PASS", (_entity(env, r.get("gpu")) for r in recs if r.get("gpu") is not None),
                                 f"all {ran} {family} cases that ran passed"
                                 + (f" ({counts['not-run']} not run)" if counts["not-run"] else ""), (), counts))
    run_problems = []
    if env.get("gpu_state") == "unusable":
        run_problems.append(("CRITICAL", f"the GPU is unusable: {env.get('gpu_error', 'no message')}"[:400],
                             REMEDIATION["unusable"]))
    if summary is None:
        run_problems.append(("UNKNOWN", "the sweep did not finish (its results file has no summary record)",
                             REMEDIATION["not-assessed"]))
    elif summary.get("interrupted") or summary.get("unaccounted"):  # results.ResultsFile.problems: not whole
        run_problems.append(("UNKNOWN", "the sweep did not finish (its summary is marked interrupted, or counts "
                                        "planned cases without a record)", REMEDIATION["not-assessed"]))
    if not any(Status(r["status"]).ran for r in cases.values() if r.get("status") in Status.values()):
        run_problems.append(("UNKNOWN", "no case ran on this node", REMEDIATION["not-assessed"]))
    if max_age_s is not None and (age is None or age > max_age_s):
        what = f"{age:.0f} s old" if age is not None else "of an unknown date"
        run_problems.append(("UNKNOWN", f"the results are {what}; the gate allows {max_age_s:g} s",
                             REMEDIATION["stale"]))
    if run_problems:
        worst = max(run_problems, key=lambda p: _RANK[p[0]])
        checks.append(_check("tensor_core.sweep", worst[0], [_entity(env, None)],
                             "; ".join(p[1] for p in run_problems),
                             [step for p in run_problems for step in p[2]]))
    else:
        checks.append(_check("tensor_core.sweep", "PASS", [_entity(env, None)],
                             f"the sweep finished{' at level ' + str(env['level']) if env.get('level') else ''}"))
    overall = max((c["severity"] for c in checks), key=_RANK.__getitem__)
    components = []
    non_pass = [c for c in checks if c["severity"] != "PASS"]
    if non_pass:
        components.append({"category": CATEGORY, "check_ids": [c["check_id"] for c in non_pass],
                           "entities": sorted({e for c in non_pass for e in c["entities"]}),
                           "max_severity": max((c["severity"] for c in non_pass), key=_RANK.__getitem__)})
    return {"schema_version": VERDICT_VERSION, "tool": "tensor-core-harness", "tool_version": __version__,
            "node": env.get("host") or socket.gethostname(),
            "timestamp": now.isoformat(timespec="seconds"), "results_file": results_file,
            "sweep_date": env.get("date"), "sweep_age_s": None if age is None else round(age, 1),
            "level": env.get("level"), "overall_severity": overall, "exit_code": EXIT[overall],
            "checks": checks, "affected_components": components}


# ---------------------------------------------------------------------------------------------------- textfile

METRIC_PREFIX = "tc_harness"


def _label(value: str) -> str:
    """A label value in the text format's escaping: backslash, double quote and newline."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def textfile_metrics(env: dict, cases: dict, summary: dict | None, uuid: str, index,
                     now: _dt.datetime | None = None) -> str:
    """The exposition text for one GPU: its cases per status, when the sweep ran, its age, level, and whether it
    finished."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    date = _parse_date(env.get("date"))
    mine = [r for r in cases.values() if r.get("gpu") == index]
    lab = f'gpu_uuid="{_label(uuid)}",host="{_label(env.get("host", ""))}"'
    lines = [f"# HELP {METRIC_PREFIX}_cases Cases of the last tensor-core sweep on this GPU, by status.",
             f"# TYPE {METRIC_PREFIX}_cases gauge"]
    for s in Status:
        if s is Status.NOT_RUN:
            continue  # a case not run has no GPU
        lines.append(f'{METRIC_PREFIX}_cases{{{lab},status="{s.value}"}} {sum(r.get("status") == s for r in mine)}')
    bad = sum(r.get("status") in (Status.FAIL, Status.FAULT, Status.TIMEOUT) for r in mine)
    gauges = [("failed_cases", "Cases that failed, faulted or timed out (0: the GPU passed).", bad),
              ("sweep_timestamp_seconds", "When the sweep started, Unix time.",
               date.timestamp() if date else float("nan")),
              ("sweep_age_seconds", "Seconds from the sweep's start to when this file was written.",
               (now - date).total_seconds() if date else float("nan")),
              ("sweep_level", "The sweep's fleet level (1: the seconds-long sample, 3: the full sweep; 0 unknown).",
               env.get("level") or 0),
              ("sweep_complete", "1 when the sweep finished (its results file has a summary).",
               int(summary is not None))]
    for name, help_text, value in gauges:
        lines += [f"# HELP {METRIC_PREFIX}_{name} {help_text}", f"# TYPE {METRIC_PREFIX}_{name} gauge",
                  f"{METRIC_PREFIX}_{name}{{{lab}}} {_number(value)}"]
    return "\n".join(lines) + "\n"


def _number(v) -> str:
    if isinstance(v, float):
        if v != v:
            return "NaN"
        return repr(round(v, 3))
    return str(int(v))


def textfile_name(uuid: str) -> str:
    return f"{METRIC_PREFIX}_{re.sub(r'[^A-Za-z0-9_.-]', '_', uuid)}.prom"


def write_textfiles(env: dict, cases: dict, summary: dict | None, out_dir: Path,
                    now: _dt.datetime | None = None) -> list[Path]:
    """One textfile per GPU the sweep used, each written to a temporary file in `out_dir` and renamed over the
    target (node_exporter never reads a half-written file). [] when the run used no GPU."""
    out_dir = Path(out_dir)
    written = []
    for index, uuid in sorted(_gpu_names(env).items()):
        target = out_dir / textfile_name(uuid)
        tmp = out_dir / f".{target.name}.{os.getpid()}.tmp"  # not *.prom: the collector skips it
        try:
            tmp.write_text(textfile_metrics(env, cases, summary, uuid, index, now))
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
        written.append(target)
    return written
