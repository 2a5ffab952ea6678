"""A pytest plugin for benchmarks/bench_pytest.py: where each test ran, and when, so a run's wall time can be
split into start-up, tests and idle workers (durations alone say how long each test took, not which worker sat
idle waiting for the last group).

With TC_HARNESS_TIMELINE=<folder> set, every process (the controller and each xdist worker) writes
<folder>/<worker>.jsonl: a `start` line (the process's start, from /proc, and when its session began), a
`collected` line (when its collection ended), then one line per test (its node id, and when its setup began and
its teardown ended). Times are epoch seconds. The `collected` line and each test's carry the CPU seconds the process
spent (`cpu_s`: user and system, its own and those of its children that ended meanwhile: a sweep's compile and
engine pools, its GPU worker) since the line before: where a run's core-seconds go, which wall time alone hides
when every core is busy.
`summary(folder)` reads them back. Loaded with `-p pytest_timeline` and this folder on PYTHONPATH.
"""
import cProfile
import io
import json
import os
import pstats
import resource
import time
from pathlib import Path

FOLDER = "TC_HARNESS_TIMELINE"
# With this set too, each process profiles itself (cProfile) from its configure to the end of its collection and
# writes <folder>/<worker>.collect.txt, its 40 costliest calls by cumulative time: what a worker waits on before its
# first test (a plan another process builds, CUDA's start-up), which its CPU seconds alone do not say.
PROFILE_COLLECTION = "TC_HARNESS_TIMELINE_PROFILE"


def _process_start() -> float | None:
    """This process's start time (epoch seconds), from /proc: what a worker spent importing and collecting."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(float(ln.split()[1]) for ln in Path("/proc/stat").read_text().splitlines()
                    if ln.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, StopIteration, IndexError):
        return None


def _cpu_seconds() -> float:
    """User and system CPU seconds of this process and of its children that have ended and been waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Timeline:
    def __init__(self, folder: str, worker: str):
        self.folder, self.worker = folder, worker
        self.profile = cProfile.Profile() if os.environ.get(PROFILE_COLLECTION) else None
        if self.profile is not None:
            self.profile.enable()
        self.fh = open(Path(folder) / f"{worker}.jsonl", "a", buffering=1)
        self.began: dict[str, float] = {}
        self.cpu = _cpu_seconds()
        self.fh.write(json.dumps({"type": "start", "worker": worker, "process_start": _process_start(),
                                  "session_start": time.time(), "cpu_s": round(self.cpu, 3)}) + "\n")

    def pytest_collection_finish(self, session):
        if self.profile is not None:
            self.profile.disable()
            text = io.StringIO()
            pstats.Stats(self.profile, stream=text).sort_stats("cumulative").print_stats(40)
            (Path(self.folder) / f"{self.worker}.collect.txt").write_text(text.getvalue())
        # a worker's start-up is: process start -> session start (Python, pytest, plugins, the root conftest) ->
        # collected (importing every test module, assertion rewriting, parametrizing) -> first test (the controller
        # hands tests out once every worker has collected)
        self.fh.write(json.dumps({"type": "collected", "time": time.time(), "items": len(session.items),
                                  "cpu_s": round(self._cpu_since(), 3)}) + "\n")

    def _cpu_since(self) -> float:
        before, self.cpu = self.cpu, _cpu_seconds()
        return self.cpu - before

    def pytest_runtest_logstart(self, nodeid, location):
        self.began[nodeid] = time.time()
        self._cpu_since()  # what ran between tests (the controller's hand-out) is no test's

    def pytest_runtest_logfinish(self, nodeid, location):
        self.fh.write(json.dumps({"type": "test", "id": nodeid, "start": self.began.pop(nodeid, None),
                                  "end": time.time(), "cpu_s": round(self._cpu_since(), 3)}) + "\n")


def pytest_configure(config):
    folder = os.environ.get(FOLDER)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        # the worker's name from xdist's own config, not from PYTEST_XDIST_WORKER: a pytest started inside an xdist
        # worker (a test that runs pytest) inherits that variable, and its controller would take the worker's name
        worker = getattr(config, "workerinput", {}).get("workerid", "controller")
        config.pluginmanager.register(Timeline(folder, worker), "tc_harness_timeline")


def summary(folder: Path, run_start: float) -> dict:
    """Per worker: seconds from the run's start to its first test, busy in tests, and idle after its last test
    until the run's last test ended; and the last tests to end (the run's tail)."""
    workers, tests = {}, []
    for f in sorted(Path(folder).glob("gw*.jsonl")):
        lines = [json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()]
        mine = [t for t in lines if t["type"] == "test" and t["start"] is not None]
        start = next((ln for ln in lines if ln["type"] == "start"), {})
        collected = next((ln for ln in lines if ln["type"] == "collected"), None)
        tests += [dict(t, worker=f.stem) for t in mine]
        if mine:
            workers[f.stem] = {"process_start_s": round((start.get("process_start") or run_start) - run_start, 1),
                               "session_start_s": round(start.get("session_start", run_start) - run_start, 1),
                               "collected_s": round(collected["time"] - run_start, 1) if collected else None,
                               "first_test_s": round(min(t["start"] for t in mine) - run_start, 1),
                               "busy_s": round(sum(t["end"] - t["start"] for t in mine), 1),
                               "start_cpu_s": start.get("cpu_s"),
                               "collect_cpu_s": collected.get("cpu_s") if collected else None,
                               "tests_cpu_s": round(sum(t.get("cpu_s") or 0 for t in mine), 1),
                               "last_test_end_s": round(max(t["end"] for t in mine) - run_start, 1)}
    if not tests:
        return {}
    end = max(t["end"] for t in tests)
    for w in workers.values():
        w["idle_at_end_s"] = round(end - run_start - w["last_test_end_s"], 1)
    for name, w in workers.items():  # what each worker ran, in order: consecutive tests of one file as one entry
        runs = []
        for t in sorted((t for t in tests if t["worker"] == name), key=lambda t: t["start"]):
            file = t["id"].split("::")[0]
            if runs and runs[-1][0] == file:
                runs[-1][1] += t["end"] - t["start"]
            else:
                runs.append([file, t["end"] - t["start"]])
        w["ran"] = [f"{f} {s:.1f}s" for f, s in runs]
    tail = sorted(tests, key=lambda t: -t["end"])[:10]
    by_cpu = sorted((t for t in tests if t.get("cpu_s") is not None), key=lambda t: -t["cpu_s"])[:30]
    return {"last_test_end_s": round(end - run_start, 1), "workers": workers,
            "tests_cpu_s": round(sum(t.get("cpu_s") or 0 for t in tests), 1),
            "most_cpu": [{"id": t["id"], "worker": t["worker"], "cpu_s": t["cpu_s"],
                          "took_s": round(t["end"] - t["start"], 1)} for t in by_cpu],
            "tail": [{"id": t["id"], "worker": t["worker"], "start_s": round(t["start"] - run_start, 1),
                      "took_s": round(t["end"] - t["start"], 1)} for t in tail]}
