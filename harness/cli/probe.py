"""probe: targeted experiments on what the spec leaves open (harness/experiments/), each a run of its own into a
results file."""
from __future__ import annotations

import json

from harness.cli.common import DEFAULT_OUT, DEFAULT_RESULTS_DIR, UsageError, results_out, seconds
from harness.enums import ExitCode


def cmd_probe(a) -> int:
    if a.match is not None and a.name != "addresses":
        raise UsageError(f"probe: --match selects address probes only (probe addresses), not {a.name}")
    if a.match is not None and not a.match.strip():
        raise UsageError("probe: --match '': give some text of the case ids to probe")
    out = results_out("probe", "--out", a.out) or DEFAULT_RESULTS_DIR / f"probe-{a.name}.jsonl"
    from harness.experiments import probes
    from harness import sweep
    if a.name in ("base-offset", "start-alignment"):
        from harness.families.wgmma import FAMILY as WGMMA
        work = sweep.Plan([(WGMMA.kernel_of(key), cs) for key, cs in probes.work(a.name)])
        try:
            summary = sweep.execute(work, sweep.SweepConfig(out_path=out, timeout=a.timeout), run_kind="probe")
        except sweep.SweepError as e:  # another run writes --out
            raise UsageError(f"probe: {e}") from None
        code = sweep.exit_code(summary)
        if a.json:
            print(json.dumps({"probe": a.name, **summary, "results": str(out), "exit": int(code)}, indent=2,
                             default=str))
        elif summary.get("ran") == 0 or code == ExitCode.NOTHING_RAN:
            print(f"compile-only: {summary.get('not_run_reasons', {}).get('wgmma')}")
        else:
            print(f"probe {a.name}: {summary.get('pass', 0)} cases behave as the model says, "
                  f"{summary['cases'] - summary.get('pass', 0)} do not; results: {out}")
        return code
    from harness.experiments import probe_runs
    run = {"addresses": lambda: probe_runs.addresses(out, a.timeout, a.match),
           "field-overflow": lambda: probe_runs.field_overflow(out, a.timeout),
           "spec-examples": lambda: probe_runs.spec_examples(out, a.timeout)}[a.name]
    text = run()
    code = ExitCode.NOTHING_RAN if text.startswith("compile-only") else ExitCode.OK
    if a.json:
        print(json.dumps({"probe": a.name, "report": text.splitlines(), "results": str(out), "exit": int(code)},
                         indent=2))
    else:
        print(text)
    return code


def _probe_parser(sub, family_names) -> None:
    pr = sub.add_parser("probe", help="targeted experiments on what the spec leaves open")
    pr.add_argument("name", choices=["base-offset", "start-alignment", "addresses", "field-overflow",
                                     "spec-examples"])
    pr.add_argument("--match", help="addresses only: only cases whose id contains this text")
    pr.add_argument("--out", help=f"results file; default {DEFAULT_OUT}, probe-<name>.jsonl")
    pr.add_argument("--timeout", type=seconds, default=30.0, help="seconds before a launch counts as hung "
                                                                   "(default 30)")
    pr.add_argument("--json", action="store_true", help="print the summary as JSON")
    pr.set_defaults(fn=cmd_probe)


# the commands this group adds, by name (harness/cli/__init__.py puts them in --help's order)
PARSERS = {"probe": _probe_parser}
