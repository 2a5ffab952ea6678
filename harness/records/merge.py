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

Every input must be a sweep's results (a probe's or a bench's is refused), of one toolchain and one harness
version (`MixedRuns`, unless `allow_mixed`: the merged environment then says `toolchain: "mixed"` and lists each
input's), and whole (`NotWhole` for one without its summary, marked interrupted, or missing cases, unless
`allow_incomplete`: the merged summary then lists them in `incomplete_inputs`, the merged file is itself not
whole to every reader, and the exit status is at least 1).
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
    """Files, with each directory standing for its run's sweep files (results.expand_run: not its probe-*, bench-*
    or, beside other files, merged* files, which are no sweep's or repeat its inputs)."""
    return results.expand_run(paths)


class NotWhole(results.ResultsFileError):
    """An input is not one whole run (results.ResultsFile.problems)."""


class MixedRuns(results.ResultsFileError):
    """The inputs were compiled by different toolchains or run by different harness versions."""


_TOOLCHAIN_KEYS = ("toolchain", "nvrtc", "nvrtc_build", "harness")


def is_mixed(env: dict) -> bool:
    """Whether an environment record is a merge of runs of different toolchains or harness versions: marked so
    (merge --allow-mixed), or, from a merge that did not yet check, with those fields among what its inputs did not
    share."""
    return env.get("toolchain") == "mixed" or any(
        isinstance(m, dict) and any(k in m for k in _TOOLCHAIN_KEYS) for m in env.get("merged_from") or ())


def toolchain_of(env: dict) -> str:
    """The toolchain an environment record names, in words. Files from before the toolchain axis (schema 1 and 2)
    name none: their kernels were NVRTC cubins. A merge of mixed runs names each input's."""
    if env.get("toolchain") == "mixed":
        return "mixed (" + "; ".join(map(str, env.get("toolchains") or ["each input's in merged_from"])) + ")"
    if is_mixed(env):
        return "mixed (" + "; ".join(f"{m.get('file')}: {toolchain_of({**env, 'merged_from': None, **m})}"
                                     for m in env["merged_from"] if isinstance(m, dict)) + ")"
    kind = env.get("toolchain", "nvrtc")
    build = env.get("nvrtc_build")
    parts = [f"NVRTC {env.get('nvrtc')}"] + ([f"V{build}" if not str(build).startswith("sha256:") else build]
                                              if build else [])
    if env.get("ptx_isa"):
        parts.append(f"PTX ISA {env['ptx_isa']}")
    if kind == "driver-jit" and env.get("driver"):
        parts.append(f"JIT of driver {env['driver']}")
    if env.get("kernels_dir"):
        parts.append(f"compiled on {env.get('kernels_host')}")
    return f"{kind} ({', '.join(parts)})"


def toolchains_differ(a: dict, b: dict) -> bool:
    """Whether two environment records name different compilers: kind, NVRTC version, its build where both name
    one, and for the driver's JIT the driver. A merge of mixed runs differs from anything."""
    if is_mixed(a) or is_mixed(b):
        return True
    kind_a, kind_b = a.get("toolchain", "nvrtc"), b.get("toolchain", "nvrtc")
    if kind_a != kind_b or a.get("nvrtc") != b.get("nvrtc"):
        return True
    if a.get("nvrtc_build") and b.get("nvrtc_build") and a["nvrtc_build"] != b["nvrtc_build"]:
        return True
    return kind_a == "driver-jit" and a.get("driver") != b.get("driver")


def mixed(files: list[results.ResultsFile]) -> str | None:
    """What differs between the inputs' runs that makes them no one run (None: nothing): the toolchain (kind,
    NVRTC version or build, the driver of a driver-jit run) or the harness version; an input that is itself a merge
    of mixed runs is mixed."""
    for f in files:
        if is_mixed(f.env):
            return f"{f.path} is a merge of mixed runs ({toolchain_of(f.env)})"
    first = files[0]
    for f in files[1:]:
        if toolchains_differ(first.env, f.env):
            return f"toolchains differ: {first.path}: {toolchain_of(first.env)}; {f.path}: {toolchain_of(f.env)}"
        if first.env.get("harness") != f.env.get("harness"):
            return (f"harness versions differ: {first.path}: {first.env.get('harness')}; {f.path}: "
                    f"{f.env.get('harness')}")
    return None


def read_run(paths, allow_mixed: bool = False, allow_incomplete: bool = False) -> list[results.ResultsFile]:
    """The results files of one run (a file, a list, a directory), each read and checked: a sweep's (ResultsFileError
    otherwise), of one toolchain and harness (MixedRuns unless `allow_mixed`), whole (NotWhole unless
    `allow_incomplete`)."""
    files = [results.read(f) for f in expand(paths)]
    results.check_kind(files)
    why = mixed(files)
    if why and not allow_mixed:
        raise MixedRuns(f"{why}: not one run (pass --allow-mixed to take them together anyway)")
    broken = results.whole_problems(files)
    if broken and not allow_incomplete:
        raise NotWhole(f"{broken[0]['file']}: not a whole run: {broken[0]['problem']} (pass --allow-incomplete to "
                       f"read what it holds; the answer is then flagged, exit 1 or more)"[:400])
    return files


def merge(paths, allow_mixed: bool = False,
          allow_incomplete: bool = False) -> tuple[dict, dict[str, dict], dict, list[dict]]:
    """(environment, {id: record}, summary, disagreements) of several results files taken together (read_run's
    checks first)."""
    files = read_run(paths, allow_mixed, allow_incomplete)
    loaded = [(str(f.path), f.env, f.cases, f.summary) for f in files]
    incomplete = results.whole_problems(files)
    env_errors = [{"file": f, "error": (s or {}).get("environment_error") or e.get("gpu_error")}
                  for f, e, _, s in loaded if (s or {}).get("environment_error") or e.get("gpu_error")]
    if len(loaded) == 1:
        _, env, cases, _ = loaded[0]
        return env, cases, _summary(cases, 1, env_errors, incomplete), []
    envs = [env for _, env, _, _ in loaded]
    shared = {k: v for k, v in envs[0].items() if all(e.get(k) == v for e in envs[1:])}
    env = {**shared, "type": "environment", "schema": results.SCHEMA,
           "merged_from": [{"file": f, **{k: v for k, v in e.items() if k not in shared}}
                           for (f, _, _, _), e in zip(loaded, envs)]}
    if mixed(files):  # allowed: say so, so that no reader names one toolchain for all of it
        env["toolchain"] = "mixed"
        env["toolchains"] = [f"{f}: {toolchain_of(e)}" for (f, _, _, _), e in zip(loaded, envs)]
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
    return env, cases, _summary(cases, len(loaded), env_errors, incomplete), disagreements


def _summary(cases: dict[str, dict], inputs: int, env_errors=(), incomplete=()) -> dict:
    s = {"type": "summary", "inputs": inputs, "cases": len(cases)}
    for k in _COUNTED:
        s[k] = sum(r.get("status") == k for r in cases.values())
    s["environment_errors"] = list(env_errors)
    if incomplete:
        s["incomplete_inputs"] = list(incomplete)
    return s


def exit_code(summary: dict, disagreements: list) -> ExitCode:
    """1 when a case failed anywhere, the inputs disagree or an input was not whole (--allow-incomplete); 4 when an
    input's GPU was unusable and no case failed; 3 when no input ran anything; else 0."""
    if disagreements or any(summary.get(k) for k in BAD) or summary.get("incomplete_inputs"):
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
