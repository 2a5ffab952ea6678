"""Compare two results files case by case: what regressed since the last known-good run, and what changed
in the environment (driver, toolkit, GPU) that could explain it."""
from __future__ import annotations

from harness.records import merge

# environment keys that differ between any two runs and say nothing about the stack
_VOLATILE = {"type", "date", "seed", "merged_from", "toolchains"}


# the fields of a first_mismatches entry that say what the element is; every other field says where it sits
VALUES = ("row", "col", "expected", "got", "expected_bits", "got_bits")


def coordinates(m: dict) -> list[str]:
    """Where a mismatch sits, in its family's terms, as its record names it: every field of the entry but the element
    and its values (VALUES), in the record's order: thread / register / half (wgmma), CTA / lane / column
    (tcgen05), or a family's own."""
    return [k for k in m if k not in VALUES]


def where(m: dict) -> str:
    """Where a mismatch sits (coordinates), in words."""
    return " ".join(f"{k} {m[k]}" for k in coordinates(m))


def _pattern(rec: dict):
    """What a failing case looked like: enough to tell 'the same failure' from 'a different one'."""
    first = rec.get("first_mismatches") or []
    return (rec.get("status"), rec.get("mismatches"), rec.get("bad_rows"), rec.get("bad_cols"),
            tuple((where(m), m.get("row"), m.get("col"), m.get("got_bits", m.get("got"))) for m in first[:3]),
            rec.get("error"))


def compare(old_path, new_path, accept_lost_coverage: bool = False, allow_mixed: bool = False,
            allow_incomplete: bool = False) -> dict:
    """Each side is a results file, or several (a list, or a directory of them) taken together as one run.

    A regression: a case that passed and now does not (`newly_failing`, an unusable GPU's `error` included),
    a failure that changed, a case that fails now and was never checked before (`failing_unchecked_before`:
    not run, or absent, in old), and lost coverage: cases in old missing from new (`missing_in_new`) or
    passing before and not run now (`no_longer_run`). With `accept_lost_coverage` lost coverage is listed in
    `notes` and is no regression (a run on a GPU of another arch, a shard).

    Each side must be one whole sweep run (merge.read_run: a probe's or a bench's file is refused; MixedRuns unless
    `allow_mixed`; NotWhole unless `allow_incomplete`, and then `incomplete` lists what is not whole: an answer
    about part of a run, which the command's exit status does not let pass)."""
    sides = []
    for p in (old_path, new_path):
        sides.append(merge.merge(p if isinstance(p, (list, tuple)) else [p], allow_mixed, allow_incomplete))
    (old_env, old, old_summary, _), (new_env, new, new_summary, _) = sides
    name = lambda p: " + ".join(map(str, p)) if isinstance(p, (list, tuple)) else str(p)
    report = {"old": name(old_path), "new": name(new_path), "newly_failing": [], "newly_passing": [],
              "changed_failures": [],
              # a case that ran before and is gone is lost coverage; one never run anywhere (a plan that dropped
              # an illegal shape, say) loses nothing and is listed apart
              "missing_in_new": sorted(c for c in set(old) - set(new) if old[c].get("status") != "not-run"),
              "dropped_not_run": sorted(c for c in set(old) - set(new) if old[c].get("status") == "not-run"),
              "new_cases": sorted(set(new) - set(old)), "environment": {},
              "toolchains": {"old": merge.toolchain_of(old_env), "new": merge.toolchain_of(new_env),
                             "differ": merge.toolchains_differ(old_env, new_env)}}
    for key in sorted((set(old_env) | set(new_env)) - _VOLATILE):
        if old_env.get(key) != new_env.get(key):
            report["environment"][key] = [old_env.get(key), new_env.get(key)]
    report["no_longer_run"] = []
    report["failing_unchecked_before"] = [{"id": cid, "was": None, "status": new[cid].get("status"),
                                           "error": new[cid].get("error"), "mismatches": new[cid].get("mismatches")}
                                          for cid in report["new_cases"] if new[cid].get("status") in merge.BAD]
    for cid in sorted(set(old) & set(new)):
        a, b = old[cid], new[cid]
        was, now = a.get("status") == "pass", b.get("status") == "pass"
        if was and b.get("status") == "not-run":  # passed before, not checked now: not a pass, and said so
            report["no_longer_run"].append({"id": cid, "reason": b.get("reason")})
        elif was and not now:
            report["newly_failing"].append({"id": cid, "status": b.get("status"), "mismatches": b.get("mismatches"),
                                            "error": b.get("error"),
                                            "first_mismatches": (b.get("first_mismatches") or [])[:3]})
        elif now and not was:
            report["newly_passing"].append({"id": cid, "was": a.get("status")})
        elif a.get("status") in ("not-run", None) and b.get("status") in merge.BAD:
            report["failing_unchecked_before"].append({"id": cid, "was": a.get("status"), "status": b.get("status"),
                                                       "error": b.get("error"), "mismatches": b.get("mismatches")})
        elif not was and not now and "not-run" not in (a.get("status"), b.get("status")) \
                and _pattern(a) != _pattern(b):
            report["changed_failures"].append({"id": cid, "old": _pattern(a)[:4], "new": _pattern(b)[:4]})
    report["common"] = len(set(old) & set(new))
    lost = bool(report["missing_in_new"] or report["no_longer_run"])
    report["notes"] = []
    if lost and accept_lost_coverage:
        report["notes"].append(f"lost coverage accepted: {len(report['missing_in_new'])} cases missing in new, "
                               f"{len(report['no_longer_run'])} passed before and are not run now")
    report["accept_lost_coverage"] = accept_lost_coverage
    report["incomplete"] = [{"side": side, **f} for side, s in (("old", old_summary), ("new", new_summary))
                            for f in s.get("incomplete_inputs") or ()]
    report["regressed"] = bool(report["newly_failing"] or report["changed_failures"]
                               or report["failing_unchecked_before"] or (lost and not accept_lost_coverage))
    return report


def render(report: dict, limit: int = 20) -> str:
    lines = [f"compare {report['old']} -> {report['new']}: {report['common']} cases in both"]
    tcs = report.get("toolchains")
    if tcs:
        lines.append(f"toolchains differ: {tcs['old']} -> {tcs['new']}" if tcs["differ"]
                     else f"toolchain: {tcs['new']} on both sides")
    env = report["environment"]
    if env:
        lines.append("environment:")
        lines += [f"  {k:<20} {v[0]} -> {v[1]}" for k, v in env.items()]
    rows = [("newly failing", report["newly_failing"]), ("failure changed", report["changed_failures"]),
            ("failing, unchecked before", report["failing_unchecked_before"]),
            ("missing in new", report["missing_in_new"]), ("no longer run", report["no_longer_run"]),
            ("gone, never run", report["dropped_not_run"]),
            ("newly passing", report["newly_passing"]),
            ("only in new", report["new_cases"])]
    lines.append(f"  {'':<26}{'count':>5}")
    lines += [f"  {name:<26}{len(items):>5}" for name, items in rows]
    for name, items in rows[:5]:
        for it in items[:limit]:
            if isinstance(it, str):
                lines.append(f"  {name}: {it}")
            elif name == "newly failing":
                m = (it.get("first_mismatches") or [{}])[0]
                at = (f" first at {where(m)} row {m.get('row')} col {m.get('col')}: "
                      f"expected {m.get('expected')} got {m.get('got')}") if m else ""
                lines.append(f"  {name}: {it['id']} [{it['status']}, {it['mismatches']} mismatches]{at}"
                             f"{' ' + it['error'] if it.get('error') else ''}")
            elif name == "failing, unchecked before":
                lines.append(f"  {name}: {it['id']} [{it['status']}] was {it['was'] or 'absent'}"
                             f"{' ' + it['error'] if it.get('error') else ''}")
            elif name == "no longer run":
                lines.append(f"  {name}: {it['id']} passed before, now not run: {it['reason']}")
            else:
                lines.append(f"  {name}: {it['id']} {it['old']} -> {it['new']}")
        if len(items) > limit:
            lines.append(f"  ... {len(items) - limit} more {name} (use --json for all)")
    lines += [f"note: {n}" for n in report.get("notes", [])]
    lines += [f"NOT WHOLE ({f['side']}): {f['file']}: {f['problem']}" for f in report.get("incomplete", [])]
    lines.append("REGRESSED" if report["regressed"] else
                 "no regression among the cases recorded, but an input is not whole" if report.get("incomplete")
                 else "no regression")
    return "\n".join(lines)
