"""The fleet formats against their schemas: docs/results-schema.json against docs/results-schema.md and the committed
results files; the minimal validator against the `jsonschema` package (where installed) and on cases that must
fail; the node verdict (NVIDIA Health Validation's shape, its exit codes) against VERDICT_SCHEMA for every outcome
it maps; the Prometheus textfile against a parser of the text exposition format's grammar, and its atomic write."""
import copy
import datetime as dt
import json
import math
import re
from pathlib import Path

import pytest

from harness.enums import Status
from harness.records import fleet, results
from harness.records.schema_check import SchemaError, errors
from tests import cli_in_process

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "results-schema.md"
SCHEMA = json.loads((ROOT / "docs" / "results-schema.json").read_text())
RECORD_TYPES = ("environment", "case", "diagnosis", "summary")


# ---------------------------------------------------------------------------------------------------- the schema

def documented() -> dict[str, set[str]]:
    """record type -> every field its table in the md names (nested as parent.child, `timing.*` as is)."""
    out, kind = {}, None
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            kind = None  # the Status / Exit code tables are no record's
        m = re.match(r"### (\w+)", line)
        if m:
            kind = m.group(1) if m.group(1) in RECORD_TYPES else None
            if kind:
                out[kind] = set()
        elif kind and line.startswith("| `"):
            out[kind] |= set(re.findall(r"`([\w.*-]+)`", line.split("|")[1]))
    return out


def in_schema(kind: str, nested: set[str]) -> set[str]:
    """The fields the schema gives a record type: its properties, and the sub-fields of those the md documents
    field by field (`nested`); an object open to more fields (additionalProperties a schema) adds `parent.*`."""
    props = SCHEMA["$defs"][kind]["properties"]
    out = set(props)
    for parent in nested:
        sub = props[parent]
        sub = sub.get("items", sub)
        out |= {f"{parent}.{f}" for f in sub.get("properties", {})}
        if isinstance(sub.get("additionalProperties"), dict):
            out.add(f"{parent}.*")
    return out


@pytest.mark.parametrize("kind", RECORD_TYPES)
def test_the_schema_names_every_documented_field_and_no_other(kind):
    doc = documented()[kind]
    nested = {f.split(".")[0] for f in doc if "." in f}
    assert doc == in_schema(kind, nested)


def test_every_record_type_is_closed_and_one_of_the_alternatives():
    assert SCHEMA["oneOf"] == [{"$ref": f"#/$defs/{k}"} for k in RECORD_TYPES]
    for k in RECORD_TYPES:
        assert SCHEMA["$defs"][k]["additionalProperties"] is False
        assert SCHEMA["$defs"][k]["properties"]["type"] == {"const": k}
    assert SCHEMA["$defs"]["case"]["properties"]["status"]["enum"] == list(Status.values())


def _committed():
    return sorted(p for d in (ROOT / "results").iterdir() if d.is_dir()
                  for p in results.results_files(d) if results.is_sweep_file(p))


def _records(path: Path, head: int | None):
    """The first `head` records of a results file and its last (the summary), or (head None) every record."""
    with results.open_results(path) as fh:
        lines = fh.read().splitlines() if head is None else None
        if lines is None:
            kept, last = [], None
            for n, ln in enumerate(fh):
                if n < head:
                    kept.append(ln)
                last = ln
            lines = kept + ([last] if last is not None and n >= head else [])
    return [json.loads(ln) for ln in lines if ln.strip()]


@pytest.mark.parametrize("path", _committed(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_results_records_validate(path):
    recs = _records(path, head=300)
    assert recs[0]["type"] == "environment"
    bad = [(i, e) for i, r in enumerate(recs) for e in errors(r, SCHEMA)]
    assert bad == []


@pytest.mark.slow
@pytest.mark.parametrize("path", _committed(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_committed_record_validates(path):
    assert [e for r in _records(path, head=None) for e in errors(r, SCHEMA)][:5] == []


# ---------------------------------------------------------------------------------------------------- the validator

ENV = {"type": "environment", "schema": 3, "harness": "0.1.0", "date": "2026-12-06T10:00:00+00:00", "host": "node7",
       "gpu_state": "usable", "gpu": "NVIDIA H100", "gpu_uuid": "GPU-aaaa", "level": 1,
       "gpus": [{"index": 0, "name": "NVIDIA H100", "uuid": "GPU-aaaa", "compute_capability": "9.0"},
                {"index": 1, "name": "NVIDIA H100", "uuid": "GPU-bbbb", "compute_capability": "9.0"}]}
CASE = {"type": "case", "id": "wgmma/f16/n8#0", "family": "wgmma", "kernel": "k0", "arch": "sm_90a", "status": "pass",
        "gpu": 0, "mismatches": 0, "first_mismatches": [{"row": 0, "col": 1, "expected": 1.0, "got": 2.0}]}
SUMMARY = {"type": "summary", "cases": 1, "pass": 1, "timing": {"plan_s": 0.1, "new_timer_s": 2.0}, "gpus": [0]}
# a storm's summary as the engine reports it (engine.FaultStorm.report)
STORM = {"family": "wgmma", "arch": "sm_90a", "answered": 16, "failed": {"fault": 12}, "not_launched": 376}
STORMY = dict(SUMMARY, timing={"plan_s": 0.1, "fault_storms": [STORM]})


def _broken():
    """(name, a record that must not validate)."""
    out = []
    r = dict(CASE, colour="red")
    out.append(("an undocumented field", r))
    out.append(("a status outside the vocabulary", dict(CASE, status="passed")))
    out.append(("a string where an integer goes", dict(CASE, mismatches="0")))
    out.append(("true is no integer", dict(CASE, gpu=True)))
    out.append(("a missing required field", {k: v for k, v in CASE.items() if k != "id"}))
    out.append(("an unknown record type", dict(CASE, type="cases")))
    r = copy.deepcopy(CASE)
    r["first_mismatches"][0]["colour"] = 1
    out.append(("an undocumented nested field", r))
    r = copy.deepcopy(ENV)
    r["gpus"][1]["index"] = "1"
    out.append(("a nested wrong type", r))
    out.append(("a timing that is no number", dict(SUMMARY, timing={"plan_s": "fast"})))
    out.append(("a level that is no fleet level", dict(ENV, level=2)))
    out.append(("a storm without its family", dict(SUMMARY, timing={"fault_storms": [
        {k: v for k, v in STORM.items() if k != "family"}]})))
    out.append(("a storm's failed count that is no integer", dict(SUMMARY, timing={"fault_storms": [
        dict(STORM, failed={"fault": "12"})]})))
    return out


def test_good_records_validate():
    for r in (ENV, CASE, SUMMARY, STORMY):
        assert errors(r, SCHEMA) == []


@pytest.mark.parametrize("name, rec", _broken(), ids=[n for n, _ in _broken()])
def test_broken_records_are_refused(name, rec):
    assert errors(rec, SCHEMA), name


def test_the_validator_agrees_with_jsonschema():
    jsonschema = pytest.importorskip("jsonschema")  # not a dependency: present on some machines only
    v = jsonschema.Draft202012Validator(SCHEMA)
    for rec in [ENV, CASE, SUMMARY] + [r for _, r in _broken()]:
        assert (errors(rec, SCHEMA) == []) == v.is_valid(rec), rec
    vv = jsonschema.Draft202012Validator(fleet.VERDICT_SCHEMA)
    good = _verdict({"a": dict(CASE)})
    assert vv.is_valid(good) and errors(good, fleet.VERDICT_SCHEMA) == []
    assert not vv.is_valid(dict(good, overall_severity="OK")) and errors(dict(good, overall_severity="OK"),
                                                                         fleet.VERDICT_SCHEMA)


def test_a_keyword_outside_the_subset_is_refused_not_ignored():
    with pytest.raises(SchemaError, match="maxLength"):
        errors("x", {"type": "string", "maxLength": 0})


# ---------------------------------------------------------------------------------------------------- verdict

NOW = dt.datetime(2026, 12, 6, 10, 5, tzinfo=dt.timezone.utc)  # five minutes after ENV's date


def _verdict(cases, env=ENV, summary=SUMMARY, **kw):
    v = fleet.verdict(env, cases, summary, "sweep.jsonl", now=NOW, **kw)
    assert errors(v, fleet.VERDICT_SCHEMA) == [], v
    return v


def _cases(*specs):
    """{id: case} from (id, status, gpu, family)."""
    return {cid: dict(CASE, id=cid, status=st, gpu=g, family=fam) for cid, st, g, fam in specs}


def test_all_passed_is_pass_exit_0():
    v = _verdict(_cases(("a", "pass", 0, "wgmma"), ("b", "pass", 1, "wgmma")))
    assert (v["overall_severity"], v["exit_code"], v["affected_components"]) == ("PASS", 0, [])
    assert v["sweep_age_s"] == 300.0 and v["level"] == 1


@pytest.mark.parametrize("status", ["fail", "fault", "timeout"])
def test_a_miscompute_on_one_gpu_is_critical_naming_that_gpu(status):
    v = _verdict(_cases(("a", "pass", 0, "wgmma"), ("b", status, 1, "wgmma")))
    assert (v["overall_severity"], v["exit_code"]) == ("CRITICAL", 1)
    (comp,) = v["affected_components"]
    assert comp == {"category": "GPU", "check_ids": ["tensor_core.wgmma"], "entities": ["GPU-bbbb"],
                    "max_severity": "CRITICAL"}
    (check,) = [c for c in v["checks"] if c["check_id"] == "tensor_core.wgmma"]
    assert "1 of 2 wgmma cases" in check["message"] and any("bundle" in r for r in check["remediation"])


def test_a_failed_negative_control_is_critical_too():
    cases = _cases(("c", "fail", 0, "wgmma"))
    cases["c"]["control"] = "wrong-swizzle"
    assert _verdict(cases)["overall_severity"] == "CRITICAL"


def test_an_unusable_gpu_is_critical():
    v = _verdict(_cases(("a", "error", None, "wgmma")), env=dict(ENV, gpu_state="unusable", gpu_error="Xid 79"))
    assert v["overall_severity"] == "CRITICAL" and "Xid 79" in json.dumps(v)


@pytest.mark.parametrize("what, kwargs, cases", [
    ("compile errors", {}, (("a", "pass", 0, "wgmma"), ("b", "compile-error", None, "wgmma"))),
    ("no summary: the sweep was killed", {"summary": None}, (("a", "pass", 0, "wgmma"),)),
    ("nothing ran", {}, (("a", "not-run", None, "wgmma"),)),
    ("stale", {"max_age_s": 60}, (("a", "pass", 0, "wgmma"),)),
])
def test_what_was_not_assessed_is_unknown_exit_1(what, kwargs, cases):
    v = _verdict(_cases(*cases), **kwargs)
    assert (v["overall_severity"], v["exit_code"]) == ("UNKNOWN", 1), what
    assert all(c["remediation"] for c in v["checks"] if c["severity"] == "UNKNOWN")


def test_an_arch_the_node_lacks_is_info_not_a_problem():
    v = _verdict(_cases(("a", "pass", 0, "wgmma"), ("t", "not-run", None, "tcgen05")))
    assert (v["overall_severity"], v["exit_code"]) == ("INFO", 0)
    assert _verdict(_cases(("a", "pass", 0, "wgmma")), max_age_s=600)["overall_severity"] == "PASS"


def _write(tmp_path, env, cases, summary):
    f = tmp_path / "sweep.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in [env, *cases.values(), *([summary] if summary else [])]))
    return f


def test_the_verdict_command_exit_codes(tmp_path):
    ok = _write(tmp_path, ENV, _cases(("a", "pass", 0, "wgmma")), SUMMARY)
    r = cli_in_process.run("verdict", ok)
    assert r.returncode == 0 and json.loads(r.stdout)["overall_severity"] == "PASS"
    bad = _write(tmp_path, ENV, _cases(("a", "fail", 0, "wgmma")), SUMMARY)
    r = cli_in_process.run("verdict", bad, "--out", tmp_path / "v" / "verdict.json")
    assert r.returncode == 1 and json.loads((tmp_path / "v" / "verdict.json").read_text())["exit_code"] == 1
    # no verdict at all: 2, one line, nothing on stdout
    r = cli_in_process.run("verdict", tmp_path / "missing.jsonl")
    assert (r.returncode, r.stdout, len(r.stderr.splitlines())) == (2, "", 1)
    r = cli_in_process.run("verdict", ok, "--max-age", "-5")
    assert r.returncode == 2 and "--max-age" in r.stderr


# ---------------------------------------------------------------------------------------------------- textfile

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
_SAMPLE = re.compile(rf"^({_NAME})(?:\{{((?:{_LABEL})(?:,{_LABEL})*)?,?\}})? (\S+)(?: (-?\d+))?$")


def parse_exposition(text: str) -> dict[str, dict]:
    """The text format (prometheus.io, "Exposition formats"): # HELP / # TYPE lines, samples
    `name{label="value",...} value [timestamp]`; a metric's TYPE once and before its samples, its samples together;
    a float value (NaN, +Inf, -Inf allowed); the text ends with a newline. {metric: {type, help, samples}}; raises
    AssertionError naming the line that breaks the grammar."""
    assert text.endswith("\n"), "the last line must end with a newline"
    metrics: dict[str, dict] = {}
    done: set[str] = set()
    current = None
    for n, line in enumerate(text[:-1].split("\n"), 1):
        if not line or (line.startswith("#") and not re.match(r"# (HELP|TYPE) ", line)):
            continue  # blank lines and other comments are allowed
        m = re.match(rf"# (HELP|TYPE) ({_NAME}) (.*)$", line)
        if m:
            kind, name, rest = m.groups()
            entry = metrics.setdefault(name, {"samples": []})
            assert name not in done, f"line {n}: {name} is described after its samples"
            if kind == "TYPE":
                assert "type" not in entry, f"line {n}: a second TYPE for {name}"
                assert rest in ("counter", "gauge", "histogram", "summary", "untyped"), f"line {n}: type {rest}"
                entry["type"] = rest
            else:
                entry["help"] = rest
            continue
        m = _SAMPLE.match(line)
        assert m, f"line {n}: not a sample: {line!r}"
        name, labels, value, _ts = m.groups()
        if current is not None and current != name:
            done.add(current)
        assert name not in done, f"line {n}: {name}'s samples are not together"
        current = name
        assert value in ("NaN", "+Inf", "-Inf") or re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", value), \
            f"line {n}: value {value!r}"
        lab = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', labels or ""))
        metrics.setdefault(name, {"samples": []})["samples"].append((lab, float(value)))
    return metrics


def test_the_parser_refuses_what_the_grammar_does_not_allow():
    for bad in ("x 1", "x{a=1} 1\n", "1x 1\n", "x one\n", '# TYPE x gauge\n# TYPE x gauge\nx 1\n',
                'x 1\ny 1\nx 2\n', 'x{a="b\\q"} 1\n'):
        with pytest.raises(AssertionError):
            parse_exposition(bad)
    assert parse_exposition('# TYPE x gauge\nx{a="q\\"uote"} +Inf\n')["x"]["samples"] == [({"a": 'q\\"uote'},
                                                                                             math.inf)]


def test_one_textfile_per_gpu_with_its_counts_and_the_sweep_age(tmp_path):
    cases = _cases(("a", "pass", 0, "wgmma"), ("b", "fail", 1, "wgmma"), ("c", "fault", 1, "wgmma"),
                   ("d", "pass", 1, "wgmma"), ("t", "not-run", None, "tcgen05"))
    written = fleet.write_textfiles(ENV, cases, SUMMARY, tmp_path, now=NOW)
    assert [p.name for p in written] == ["tc_harness_GPU-aaaa.prom", "tc_harness_GPU-bbbb.prom"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in written]  # no temporary file left
    m = parse_exposition(written[1].read_text())
    counts = {lab["status"]: v for lab, v in m["tc_harness_cases"]["samples"]}
    assert counts == {"pass": 1, "fail": 1, "fault": 1, "timeout": 0, "compile-error": 0, "error": 0, "observed": 0}
    assert all(lab["gpu_uuid"] == "GPU-bbbb" for meta in m.values() for lab, _ in meta["samples"])
    assert m["tc_harness_failed_cases"]["samples"][0][1] == 2
    assert m["tc_harness_sweep_age_seconds"]["samples"][0][1] == 300
    assert m["tc_harness_sweep_level"]["samples"][0][1] == 1
    assert m["tc_harness_sweep_complete"]["samples"][0][1] == 1
    assert all(meta.get("type") == "gauge" and meta.get("help") for meta in m.values())
    first = parse_exposition(written[0].read_text())
    assert first["tc_harness_failed_cases"]["samples"][0][1] == 0


def test_the_write_is_atomic(tmp_path, monkeypatch):
    target = tmp_path / "tc_harness_GPU-aaaa.prom"
    target.write_text("old\n")

    def fail(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(fleet.os, "replace", fail)
    with pytest.raises(OSError):
        fleet.write_textfiles(ENV, _cases(("a", "pass", 0, "wgmma")), SUMMARY, tmp_path, now=NOW)
    assert [p.name for p in tmp_path.iterdir()] == [target.name] and target.read_text() == "old\n"


def test_the_textfile_command(tmp_path):
    f = _write(tmp_path, ENV, _cases(("a", "pass", 0, "wgmma")), None)
    r = cli_in_process.run("textfile", f, "--out", tmp_path / "tf")
    assert r.returncode == 0
    m = parse_exposition((tmp_path / "tf" / "tc_harness_GPU-aaaa.prom").read_text())
    assert m["tc_harness_sweep_complete"]["samples"][0][1] == 0
    nogpu = _write(tmp_path, {k: v for k, v in ENV.items() if k != "gpus"}, {}, SUMMARY)
    assert cli_in_process.run("textfile", nogpu, "--out", tmp_path / "tf2").returncode == 3
    assert cli_in_process.run("textfile", f, "--out", f).returncode == 2


@pytest.mark.parametrize("name, schema", [("node-verdict.schema.json", fleet.VERDICT_SCHEMA)])
def test_the_published_schema_is_the_one_the_code_checks(name, schema):
    """docs/ carries the verdict's schema for a consumer (Health Validation's private-check wrapper) to validate
    against: it must be the one the harness writes to (regenerate with json.dumps(..., indent=1))."""
    assert json.loads((ROOT / "docs" / name).read_text()) == schema
