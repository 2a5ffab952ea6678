"""The seconds each xdist group of the README's test command took, from bench_pytest.py's timelines: what the
conftest's NODE_GROUP_SECONDS (GPU nodes) orders the groups by. A group missing from that table weighs a third of its
CI seconds, or nothing, and goes out last: a module of 12 s handed out last ended a README run on an H100 node 9 s after
most workers had finished (bench18 in docs/performance.md). Run it on the timelines of cold runs on a
node, and put the groups it lists into the table:
    python3 benchmarks/group_seconds.py results/<run>/<name>-readme.timeline.gz [...] [--min 2]
A group is an xdist group (a test id's `@group`); the tests of a `spread` module, each a group of its own, are summed
as their module (the table weighs each of them its share of that). The GPU shards (gpu-sweep-*) are left out: the
conftest weighs them all alike (GPU_SHARD_SECONDS). Seconds are each group's tests' wall time in a worker, the mean
over the timelines given. With --tests, the spread modules' tests instead, each as `<module>::<test>`, for
NODE_SPREAD_TEST_SECONDS (a spread test that takes seconds weighs its own, not its share of its module's)."""
import argparse
import gzip
import json
from collections import defaultdict
from pathlib import Path


def group_of(test_id: str) -> str:
    """The table's key of a test: its xdist group, or for a test of a spread module its module's name."""
    if "@" in test_id:
        return test_id.rsplit("@", 1)[1]
    return Path(test_id.split("::")[0]).stem


def spread_test(test_id: str) -> str | None:
    """A spread module's test (its own group: no `@group`) as the table keys it, `<module>::<test>` (its name with
    its parameters), else None."""
    if "@" in test_id:
        return None
    file, name = test_id.split("::", 1)
    return f"{Path(file).stem}::{name}"


def seconds_by_group(timeline: Path, key=group_of) -> dict[str, float]:
    """Each group's seconds in one run (`key`: a test id's group, or None for a test not counted): its tests' time in
    the worker that ran them (not the controller's copy)."""
    out: dict[str, float] = defaultdict(float)
    worker = None
    with gzip.open(timeline, "rt") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec["type"] == "start":
                worker = rec["worker"]
            elif rec["type"] == "test" and worker != "controller" and rec.get("start") is not None:
                group = key(rec["id"])
                if group is not None and not group.startswith("gpu-sweep-"):
                    out[group] += rec["end"] - rec["start"]
    return out


def mean_seconds(timelines: list[Path], key=group_of) -> dict[str, float]:
    runs = [seconds_by_group(t, key) for t in timelines]
    groups = set().union(*runs)
    return {g: sum(r.get(g, 0.0) for r in runs) / len(runs) for g in groups}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("timelines", nargs="+", type=Path)
    ap.add_argument("--min", type=float, default=2.0, help="leave out groups quicker than this many seconds")
    ap.add_argument("--tests", action="store_true", help="the spread modules' tests, each as <module>::<test>")
    a = ap.parse_args(argv)
    seconds = mean_seconds(a.timelines, spread_test if a.tests else group_of)
    for g, s in sorted(seconds.items(), key=lambda gs: (-gs[1], gs[0])):
        if s >= a.min:
            print(f'    "{g}": {round(s)},')


if __name__ == "__main__":
    main()
