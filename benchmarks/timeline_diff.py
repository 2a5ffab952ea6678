"""Two trees' sweep timelines side by side (benchmarks/sweep_timeline.py's files, as `tools/device_cycle.sh
ab-timeline` brings them back): each event's first time in both, in time order, and the difference.

    python benchmarks/timeline_diff.py OLD.timeline NEW.timeline

The GPU worker's many records ("launch", "stage", "write") and the machine's ("cpu") are not listed one by one: of
the launches, the first and the last. An event only one of the two has is listed with a blank for the other."""
from __future__ import annotations

import json
import sys

SUMMED = ("launch", "stage", "write", "cpu")  # many records each: not listed one by one


def first_times(path: str) -> dict[str, float]:
    """event -> the time of its first record; the GPU worker's launches as 'first launch' and 'last launch'."""
    out: dict[str, float] = {}
    launches = []
    with open(path) as fh:
        for line in fh:
            r = json.loads(line)
            if r["event"] in SUMMED:
                if r["event"] == "launch":
                    launches.append(r["t"])
                continue
            out.setdefault(r["event"], r["t"])
    if launches:
        out["first launch"], out["last launch"] = min(launches), max(launches)
    return out


def table(old: dict[str, float], new: dict[str, float]) -> list[str]:
    events = list(old) + [e for e in new if e not in old]
    events.sort(key=lambda e: old.get(e, new.get(e)))
    rows = [f"{'event':<34} {'old s':>8} {'new s':>8} {'new-old':>8}"]
    for e in events:
        a, b = old.get(e), new.get(e)
        diff = f"{b - a:+8.3f}" if a is not None and b is not None else ""
        rows.append(f"{e:<34} {'' if a is None else f'{a:8.3f}':>8} {'' if b is None else f'{b:8.3f}':>8} {diff:>8}")
    return rows


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: timeline_diff.py OLD.timeline NEW.timeline", file=sys.stderr)
        return 2
    print("\n".join(table(first_times(argv[0]), first_times(argv[1]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
