"""docs/results-schema.md documents every field a sweep writes: a sweep on a simulated GPU (a planted fault, a
planted misreading with its diagnosis, tcgen05 recorded not run) and the committed sweep results must use no field
the document does not list, and it names every Status and ExitCode."""
import json
import re
from pathlib import Path

import pytest

from harness import plan
from harness.enums import ExitCode, Status
from harness.plan import Plan
from harness.records import results
from tests.run import simsweep
from tests.simulated import fake_gpus

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "results-schema.md"


def documented() -> dict[str, set[str]]:
    """record type -> the fields its table lists (nested ones as parent.child)."""
    out, kind = {}, None
    for line in DOC.read_text().splitlines():
        m = re.match(r"### (\w+)", line)
        if m:
            kind = m.group(1)
            out[kind] = set()
        elif kind and line.startswith("| `"):
            out[kind] |= set(re.findall(r"`([\w.-]+)`", line.split("|")[1]))
    return out


def fields(rec: dict, kind: str) -> set[str]:
    names = set(rec)
    for k in ("gpus", "first_mismatches"):
        if isinstance(rec.get(k), list):
            names |= {f"{k}.{sub}" for item in rec[k] if isinstance(item, dict) for sub in item}
    if kind == "summary" and isinstance(rec.get("timing"), dict):
        names |= {f"timing.{sub}" for sub in rec["timing"]}
    if kind == "case" and isinstance(rec.get("facets"), dict):
        names |= {f"facets.{sub}" for sub in rec["facets"]}
    return names


def field_names(records) -> set[str]:
    """Every record type.field the records use."""
    return {f"{r['type']}.{f}" for r in records for f in fields(r, r["type"])}


def undocumented(names: set[str]) -> set[str]:
    doc = documented()
    return {n for n in names if n.split(".", 1)[1] not in doc.get(n.split(".", 1)[0], set())}


def test_the_doc_names_the_schema_status_and_exit_codes():
    text = DOC.read_text()
    assert f"schema {results.SCHEMA}" in text and results.SCHEMA in results.READABLE_SCHEMAS
    assert 1 in results.READABLE_SCHEMAS  # the committed baselines
    for s in Status:
        assert f"| `{s}` |" in text, s
    for c in ExitCode:
        assert f"| {int(c)} | `{c.name}` |" in text, c


@pytest.mark.parametrize("path", sorted(p for d in (ROOT / "results").iterdir() if d.is_dir()
                                        for p in results.results_files(d) if results.is_sweep_file(p)),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_sweep_files_use_only_documented_fields(path):
    def names_in_file():
        with results.open_results(path) as fh:  # .jsonl or .jsonl.gz
            return sorted(field_names(json.loads(ln) for ln in fh if ln.strip()))
    # a committed file's field names are read once for its bytes and the code that reads them (7 CPU s in CI each run)
    names = results.memo_by_content(path, f"field names of {path.name}", (Path(__file__), Path(results.__file__)),
                                    names_in_file)
    assert names and undocumented(set(names)) == set()


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_a_simulated_sweep_writes_only_documented_fields(monkeypatch, tmp_path):
    p = plan.make(plan.Selection(families=("wgmma",), kinds=("s8",), n_values=(8,), a_srcs=("SS",)),
                  {"wgmma": "sm_90a"})
    kernel, cases = p.work[0]
    cases = cases[:4]
    simsweep.warm_wgmma_oracle(Plan([(kernel, cases)]))
    monkeypatch.setenv("TC_SIM_FAULTS", f"{kernel.name}:#{simsweep.case_fingerprint(kernel, cases[1])}:trap")
    fake_gpus.install(monkeypatch, ["sm_90a"])
    tc = plan.make(plan.Selection(families=("tcgen05",), kinds=("f16",), cta_groups=(1,)), {})
    summary, recs, raw, _ = simsweep.sweep(Plan([(kernel, cases)] + tc.work[:1]), tmp_path / "r.jsonl")
    kinds = {r["type"] for r in raw}
    statuses = {r["status"] for r in recs.values()}
    assert {"environment", "case", "summary"} <= kinds and {"pass", "fault", "not-run"} <= statuses
    assert raw[0]["schema"] == results.SCHEMA and "cuda_visible_devices" in raw[0] and "gpus_requested" in raw[0]
    assert any("kernel_s" in r for r in recs.values())
    assert all(r["facets"]["kind"] in ("s8", "f16") for r in recs.values())  # passed, faulted and not run alike
    assert undocumented(field_names(raw)) == set()


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_a_failing_case_and_its_diagnosis_write_only_documented_fields(monkeypatch, tmp_path):
    p = plan.make(plan.Selection(families=("wgmma",), kinds=("f16",), n_values=(32,), a_srcs=("RS",),
                                 dtypes=("f16",), match="B:K/128B"), {"wgmma": "sm_90a"})
    kernel, cases = p.work[0]
    p = Plan([(kernel, cases[:3])])
    simsweep.warm_wgmma_oracle(p)
    monkeypatch.setenv("TC_SIM_BUG", "swizzle")  # the simulated hardware swizzles 128B tiles like 64B
    fake_gpus.install(monkeypatch, ["sm_90a"])
    summary, recs, raw, _ = simsweep.sweep(p, tmp_path / "r.jsonl", diagnose=1)
    assert summary["fail"] and any(r["type"] == "diagnosis" for r in raw)
    drew = any(str(r.get("png", "")).endswith(".png") for r in raw)  # its time is counted apart, within the diagnosis
    assert drew and 0 < summary["timing"]["pictures_s"] <= summary["timing"]["diagnose_s"], summary["timing"]
    assert any(r.get("first_mismatches") for r in recs.values())
    assert undocumented(field_names(raw)) == set()
