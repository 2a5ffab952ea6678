"""Several results files as one run: the GPUs of a node, or the nodes of a fleet (one file each).

`merge` unions the cases. A case id present in more than one file (a fleet where every node ran the whole
sweep) is kept once, with fleet semantics:
  * a failure anywhere (fail, fault, timeout, compile-error) is the case's outcome (the worst one, if several);
  * a pass with no failure elsewhere is a pass;
  * not-run only where nothing ran it (an H100 records tcgen05 not-run, a B200 wgmma: neither is a verdict);
  * `error` (the node's GPU was unusable) says nothing about the case either: it ranks above not-run and
    below every outcome that ran, and the input is listed in the summary's `environment_errors`.
Every disagreement (outcomes that ran and differ) is listed: a case that passes on one node and fails on
another is exactly what a fleet operator needs to see. The environment keeps what all inputs share and lists,
per input, what they do not. A single file merges too (the same records and summary).
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.enums import ExitCode
from harness.records import results

# worst outcome wins; not-run says nothing about the case (an H100 records tcgen05 as not run, a B200 wgmma),
# so any outcome that ran outranks it and it is no disagreement
_RANK = {"not-run": -2, "observed": -1, "error": -1, "pass": 0, "fail": 1, "timeout": 2, "fault": 3, "compile-error": 4}
_COUNTED = ("pass", "fail", "fault", "timeout", "compile-error", "error", "not-run")
_NO_VERDICT = {"not-run", "error", "observed"}
BAD = ("fail", "fault", "timeout", "compile-error")


def expand(paths) -> list[Path]:
    """Files, with each directory standing for the *.jsonl (and *.jsonl.gz) files in it (sorted)."""
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            found = results.results_files(p)
            if not found:
                raise results.ResultsFileError(f"{p}: directory holds no *.jsonl results file")
            out += found
        else:
            out.append(p)
    if not out:
        raise results.ResultsFileError("no results file given")
    return out


def merge(paths) -> tuple[dict, dict[str, dict], dict, list[dict]]:
    """(environment, {id: record}, summary, disagreements) of several results files taken together."""
    files = expand(paths)
    loaded = [(str(f), *results.load(f)) for f in files]
    env_errors = [{"file": f, "error": (s or {}).get("environment_error") or e.get("gpu_error")}
                  for f, e, _, s in loaded if (s or {}).get("environment_error") or e.get("gpu_error")]
    if len(loaded) == 1:
        _, env, cases, _ = loaded[0]
        return env, cases, _summary(cases, 1, env_errors), []
    envs = [env for _, env, _, _ in loaded]
    shared = {k: v for k, v in envs[0].items() if all(e.get(k) == v for e in envs[1:])}
    env = {**shared, "type": "environment", "schema": results.SCHEMA,
           "merged_from": [{"file": f, **{k: v for k, v in e.items() if k not in shared}}
                           for (f, _, _, _), e in zip(loaded, envs)]}
    cases: dict[str, dict] = {}
    seen: dict[str, list[tuple[str, dict]]] = {}
    for f, e, recs, _ in loaded:
        where = {"file": f, "host": e.get("host"), "gpu_uuid": e.get("gpu_uuid")}
        for cid, rec in recs.items():
            seen.setdefault(cid, []).append((f, {**rec, "source": where}))
    disagreements = []
    for cid, runs in seen.items():
        worst = max(runs, key=lambda r: _RANK.get(r[1].get("status"), 5))[1]
        statuses = {r.get("status") for _, r in runs} - _NO_VERDICT
        if len(statuses) > 1:
            worst = {**worst, "disagreement": [{"file": f, "status": r.get("status")} for f, r in runs]}
            disagreements.append({"id": cid, "runs": worst["disagreement"]})
        if len(runs) > 1:
            worst["runs"] = len(runs)
        cases[cid] = worst
    return env, cases, _summary(cases, len(loaded), env_errors), disagreements


def _summary(cases: dict[str, dict], inputs: int, env_errors=()) -> dict:
    s = {"type": "summary", "inputs": inputs, "cases": len(cases)}
    for k in _COUNTED:
        s[k] = sum(r.get("status") == k for r in cases.values())
    s["environment_errors"] = list(env_errors)
    return s


def exit_code(summary: dict, disagreements: list) -> ExitCode:
    """1 when a case failed anywhere or the inputs disagree; 4 when an input's GPU was unusable and no case
    failed; 3 when no input ran anything; else 0."""
    if disagreements or any(summary.get(k) for k in BAD):
        return ExitCode.FAILED
    if summary.get("environment_errors") or summary.get("error"):
        return ExitCode.ENVIRONMENT
    if summary.get("cases") and summary.get("not-run") == summary.get("cases"):
        return ExitCode.NOTHING_RAN
    return ExitCode.OK


def write(path, env: dict, cases: dict[str, dict], summary: dict, disagreements: list[dict]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fh.write(json.dumps(env) + "\n")
        for rec in cases.values():
            fh.write(json.dumps({**rec, "type": "case"}) + "\n")
        fh.write(json.dumps({**summary, "type": "summary", "disagreements": len(disagreements)}) + "\n")
