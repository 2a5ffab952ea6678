"""The benchmarks that need no GPU run here, so that they do not rot between the GPU sessions that use them."""
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest


pytestmark = pytest.mark.spread  # no module-scoped fixture: under pytest -n, each test on any free worker

ROOT = Path(__file__).resolve().parent.parent


def bench(script: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *map(str, args)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)


def report_of(script: str, out: Path, *args) -> dict:
    """The family `wgmma`'s entry of the JSON the benchmark wrote, after it exited 0."""
    proc = bench(script, "--out", out, *args, "--family", "wgmma")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(out.read_text())["families"]["wgmma"]


def test_bench_host_measures_the_host_side_of_a_sweep(tmp_path):
    r = report_of("bench_host.py", tmp_path / "bench-host.json", "--kernels", 2)
    assert r["kernels"] == 2 and r["cases"] > 0 and r["prepare_ms_per_case"] > 0 and r["spool_read_ms_per_case"] > 0


def test_bench_host_refuses_an_unknown_family(tmp_path):
    proc = bench("bench_host.py", "--out", tmp_path / "x", "--family", "nope")
    assert proc.returncode != 0 and "unknown family 'nope'" in proc.stderr and not (tmp_path / "x").exists()


def test_bench_nvrtc_times_a_kernel_with_all_its_variants_and_with_one(tmp_path):
    r = report_of("bench_nvrtc.py", tmp_path / "bench-nvrtc.json", "--kernels", 1)
    assert r["kernels"] == 1 and r["s_per_kernel"] > 0 and r["one_variant_s_per_kernel"] > 0


def test_bench_compile_compiles_and_checks_every_kernel_of_a_selection_on_an_empty_cache(tmp_path):
    from harness import plan, sweep
    # one kind of one family (7 kernels): all 61 of the family took 8 s of CI
    out = bench("bench_compile.py", "--family", "tcgen05", "--kind", "i8", "--workers", "2", "--out", tmp_path / "c.json")
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads((tmp_path / "c.json").read_text())
    kernels = sweep.plan_kernels(plan.make(plan.Selection(families=("tcgen05",), kinds=("i8",)), {}, None))
    assert got["kernels"] == len(kernels) > 0 and got["errors"] == 0 and got["wall_s"] > 0 and got["machine_cpu_s"] > 0


def test_the_pytest_timeline_says_which_worker_ran_what_and_when(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import pytest_timeline
    (tmp_path / "test_slow.py").write_text("import time\ndef test_a():\n    time.sleep(1.0)\n")
    (tmp_path / "test_quick.py").write_text("def test_b():\n    pass\ndef test_c():\n    pass\n")
    # CPU in the test's own process, and in a child it starts and waits for: both are the test's CPU seconds
    (tmp_path / "test_busy.py").write_text(
        "import subprocess, sys, time\n"
        "SPIN = 'import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.6: pass'\n"
        "def test_spin():\n    exec(SPIN)\n"
        "def test_child():\n    subprocess.run([sys.executable, '-c', SPIN], check=True)\n")
    folder = tmp_path / "timeline"
    # PYTEST_XDIST_WORKER as a pytest started inside an xdist worker inherits it (gw7: no worker of this run's
    # own): the inner controller must not take that name (on a 16-core node it did, and wrote a worker file
    # with no collection in it)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "benchmarks"), PYTEST_XDIST_WORKER="gw7",
               **{pytest_timeline.FOLDER: str(folder), pytest_timeline.PROFILE_COLLECTION: "1"})
    t = time.time()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_timeline",
                           "-p", "no:hypothesispytest",  # no inner test uses it: ~0.35 CPU s a process to load
                           "-n", "2", str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=env)
    assert proc.returncode == 0, proc.stdout[-2000:]
    where = pytest_timeline.summary(folder, t)
    ran = [r for w in where["workers"].values() for r in w["ran"]]
    assert {r.split(" ")[0] for r in ran} == {"test_quick.py", "test_slow.py", "test_busy.py"}, ran
    slow = next(t for t in where["tail"] if t["id"].endswith("test_a"))
    assert 1.0 <= slow["took_s"] < 30 and where["last_test_end_s"] >= slow["start_s"] + 1.0
    assert sum(w["busy_s"] for w in where["workers"].values()) >= 1.0
    assert all(w["first_test_s"] >= w["collected_s"] >= w["session_start_s"] >= w["process_start_s"] >= -5
               for w in where["workers"].values())
    cpu = {t["id"].split("::")[1]: t["cpu_s"] for t in where["most_cpu"]}
    assert cpu["test_spin"] >= 0.55 and cpu["test_child"] >= 0.55 and cpu["test_a"] < 0.3, cpu  # a sleep is no CPU
    assert all(w["collect_cpu_s"] > 0 and w["tests_cpu_s"] >= 0 for w in where["workers"].values())
    assert where["tests_cpu_s"] >= 1.1
    for w in where["workers"]:  # each worker's profile of its collection
        assert "pytest_collection" in (folder / f"{w}.collect.txt").read_text()


# bench_host's digest of its 3-kernel samples: the same at commit 92e69bd (before a launch's cases were prepared
# together) as since. A change that means to draw or expect other values changes it here, and says so; one that
# does not, must not (the CPU note 2026-11-26 prepare-identity-2.txt in docs/performance.md digests the whole plan).
# since the exact cases' expectations leave out the values their expected registers hold (the CPU note
# 2026-11-27 expectations.txt in docs/performance.md: every other byte the same as before, those values the registers
# decoded)
SAMPLE_DIGESTS = {"wgmma": "b626507f4b97604e3d1bf9174d3d6b7eb36da6e0464f634b7cf339364cf5ad75",
                  "wgmma_sp": "81fe5cb8b21df3279078f94fee773a2cb25451863ef18e3629785ab060182a7c"}


def test_bench_host_digests_the_same_preparation_alike_from_a_fresh_plan_and_a_cached_one(tmp_path):
    """The digest vouches that a speed-up left the prepared bytes alone; it must not change when only the plan
    cache does (a fresh plan's cases share sub-objects otherwise than a cached plan's), and it is the pinned one."""
    digests = []
    for run in ("fresh", "cached"):
        out = tmp_path / f"{run}.json"
        proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_host.py"), "--out", str(out),
                               "--family", "wgmma_sp", "--family", "wgmma", "--kernels", "3", "--repeat", "1"],
                              capture_output=True, text=True, timeout=300, cwd=ROOT,
                              env=dict(os.environ, TC_HARNESS_CACHE=str(tmp_path)))
        assert proc.returncode == 0, proc.stderr[-2000:]
        digests.append({f: r["digest"] for f, r in json.loads(out.read_text())["families"].items()})
    assert digests[0] == digests[1] == SAMPLE_DIGESTS


def test_the_ab_script_runs_each_tree_in_turn_from_its_own_folder_and_tabulates(tmp_path):
    """benchmarks/ab_sweep.sh with two stand-in trees whose bench_sweep.py records which tree ran when: OLD NEW OLD
    NEW, each from its own folder (so each imports its own harness), a table line per run; bad arguments refused."""
    log = tmp_path / "order.txt"
    for side in ("old", "new"):
        (tmp_path / side / "benchmarks").mkdir(parents=True)
        (tmp_path / side / "benchmarks" / "bench_sweep.py").write_text(
            "import json, os, sys\n"
            f"open({str(log)!r}, 'a').write(os.path.basename(os.getcwd()) + '\\n')\n"
            "out = sys.argv[sys.argv.index('--out-dir') + 1]\nos.makedirs(out, exist_ok=True)\n"
            "run = {'wall_s': 1.5, 'summary': {'wall_s': 1.0, 'compile_s': 0.5, 'timing': {'plan_s': 0.1}}}\n"
            "json.dump({'cold': run, 'warm': run}, open(os.path.join(out, 'bench.json'), 'w'))\n")
    script = str(ROOT / "benchmarks" / "ab_sweep.sh")
    env = dict(os.environ, OUT=str(tmp_path / "out"))
    r = subprocess.run([script, str(tmp_path / "old"), str(tmp_path / "new"), "2"], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert log.read_text().split() == ["old", "new", "old", "new"]
    table = (tmp_path / "out" / "ab" / "table.txt").read_text().splitlines()
    assert [ln.split()[0] for ln in table[::2]] == ["old1", "new1", "old2", "new2"] and "1.50 s" in table[0]
    bad = subprocess.run([script, str(tmp_path / "old"), str(tmp_path), "1"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "has no benchmarks/bench_sweep.py" in bad.stderr


def test_the_sweep_timeline_times_a_sweeps_phases_from_the_shells_clock(tmp_path):
    """benchmarks/sweep_timeline.py: the sweep the command line asks for, its phases stamped from T0 (set by the
    shell before Python started), in order, and its exit status; where a GPU ran the cases, the engine's run, the GPU
    worker's start-up and each launch's pieces (the GPU worker's records), else exit 3 (nothing ran)."""
    timeline, out = tmp_path / "timeline.jsonl", tmp_path / "sweep.jsonl"
    env = dict(os.environ, T0=str(time.time()))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sweep_timeline.py"), "--timeline", str(timeline),
                           "--", "--family", "wgmma", "--kind", "b1", "--n", "8", "--data", "exact",
                           "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    summary = json.loads(out.read_text().splitlines()[-1])
    ran = summary["type"] == "summary" and summary["ran"] > 0
    assert proc.returncode == (0 if ran else 3), proc.stderr[-2000:]  # the sweep's own status
    events = [json.loads(line) for line in timeline.read_text().splitlines()]
    names = [e["event"] for e in events]
    for phase in ("plan", "compile_kernels", "execute") + (("engine run",) if ran else ()):
        assert names.index(f"{phase} start") < names.index(f"{phase} end")
    worker_events = ("launch", "stage", "write")  # the GPU worker's threads' records
    main = [e for e in events if e["event"] not in worker_events and not e["event"].startswith("gpu worker")]
    assert names[0] == "python up" and main[-1] == {**main[-1], "event": "main returned", "exit": proc.returncode}
    assert all(0 <= a["t"] <= b["t"] for a, b in zip(main, main[1:]))
    launches = [e for e in events if e["event"] == "launch"]
    assert bool(launches) == ran and all(e["load_s"] >= 0 and e["kernel_s"] >= 0 for e in launches)
    # each GPU worker's start-up (the sweep command's two on a machine of one GPU), once, in order, before its first
    # launch; a sweep where nothing fails starts no other (one of the two may launch nothing in a small sweep, and
    # be stopped part way through its start-up as the sweep ends)
    workers = sorted({e["pid"] for e in events if e["event"].startswith("gpu worker") or e["event"] in worker_events})
    launching = sorted({e["pid"] for e in launches})
    assert (1 <= len(launching) <= 2) if ran else not workers
    assert len(workers) <= 2
    for pid in workers:
        start_up = [e["event"] for e in events if e["event"].startswith("gpu worker") and e["pid"] == pid]
        whole = ["gpu worker backend import", "gpu worker use_device start", "gpu worker device ready"]
        assert start_up == (whole if pid in launching else whole[:len(start_up)])
        seq = [e for e in events if e["event"].startswith("gpu worker") and e["pid"] == pid]
        seq += [e for e in launches if e["pid"] == pid][:1]
        assert all(a["t"] <= b["t"] for a, b in zip(seq, seq[1:]))
    # each launch's file read ahead by the reading thread, and its outputs' file written by the writer thread
    for kind in ("stage", "write"):
        timed = [e for e in events if e["event"] == kind]
        assert len(timed) == (len(launches) if ran else 0) and all(e["seconds"] >= 0 for e in timed), kind


def test_gc_site_logs_the_collectors_time_of_every_python_process(tmp_path):
    log = tmp_path / "gc.jsonl"
    env = dict(os.environ, TC_HARNESS_GC_LOG=str(log), PYTHONPATH=str(ROOT / "benchmarks" / "gc_site"))
    child = "import gc, subprocess, sys; gc.collect(); subprocess.run([sys.executable, '-c', 'pass'])"
    subprocess.run([sys.executable, "-c", child], env=env, check=True, timeout=60)
    lines = [json.loads(ln) for ln in log.read_text().splitlines()]
    assert len(lines) == 2  # the process and the one it started
    parent = next(ln for ln in lines if "gc.collect" in ln["argv"])
    assert parent["collections"][2] >= 1 and parent["full_s"] > 0 and parent["gc_s"] >= parent["full_s"]


def test_the_pytest_ab_script_runs_both_trees_cold_then_warm_in_turn_each_on_its_own_cache(tmp_path):
    """benchmarks/ab_pytest.sh, copied beside a stand-in bench_pytest.py that records the tree it ran in (its working
    folder) and the compile cache it was given: NEW cold, OLD cold, then OLD NEW warm, each tree always on its own
    cache, a table line per run; bad arguments refused."""
    log, bench = tmp_path / "order.txt", tmp_path / "benchmarks"
    bench.mkdir()
    shutil.copy(ROOT / "benchmarks" / "ab_pytest.sh", bench)
    (bench / "bench_pytest.py").write_text(
        "import json, os, sys\n"
        "arg = lambda flag: sys.argv[sys.argv.index(flag) + 1]\n"
        "seen = [os.path.basename(os.getcwd()), arg('--runs'), arg('--cache')]\n"
        f"open({str(log)!r}, 'a').write(' '.join(seen) + '\\n')\n"
        "run = {'wall_s': 1.5, 'exit': 0, 'last_line': '1 passed in 1.20s'}\n"
        "json.dump({'runs': {arg('--runs'): run}}, open(arg('--out'), 'w'))\n"
        "sys.exit(os.path.basename(os.getcwd()) == 'broken')\n")
    for side in ("old", "new", "broken"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "conftest.py").write_text("")
    script = str(bench / "ab_pytest.sh")
    env = dict(os.environ, OUT=str(tmp_path / "out"))
    r = subprocess.run([script, str(tmp_path / "old"), str(tmp_path / "new"), "1"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    runs = [ln.split() for ln in log.read_text().splitlines()]
    assert [(tree, kind) for tree, kind, _ in runs] == [("new", "readme"), ("old", "readme"), ("old", "readme-warm"),
                                                        ("new", "readme-warm")]
    assert runs[0][2] == runs[3][2] != runs[1][2] == runs[2][2]
    table = (tmp_path / "out" / "ab-pytest" / "table.txt").read_text().splitlines()
    assert [ln.split()[0] for ln in table] == ["new-cold", "old-cold", "old1", "new1"] and "1.5 s  exit 0" in table[0]
    bad = subprocess.run([script, str(tmp_path / "old"), str(tmp_path), "1"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "has no conftest.py" in bad.stderr
    env["OUT"] = str(tmp_path / "out2")  # a run that gives no result: every run still goes, and the exit says so
    broken = subprocess.run([script, str(tmp_path / "broken"), str(tmp_path / "new"), "1"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert broken.returncode == 1 and len((tmp_path / "out2" / "ab-pytest" / "table.txt").read_text().splitlines()) == 4


def test_bench_sweep_counts_the_cpu_of_a_run_and_of_what_its_processes_started_and_waited_for():
    """with_cpu_seconds of a process that burns ~0.6 s of CPU itself and starts a child that burns ~0.6 s: both
    count (a sweep's CPU is in its pool processes, GPU workers and disassemblers, not in the process itself)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_sweep
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\n"
    parent = spin + f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {spin!r}], check=True)\n"
    proc, cpu = bench_sweep.with_cpu_seconds(lambda: subprocess.run([sys.executable, "-c", parent]))
    assert proc.returncode == 0 and 1.2 <= cpu < 3.0, cpu
    _, idle = bench_sweep.with_cpu_seconds(lambda: time.sleep(0.3))
    assert idle == 0.0


def test_group_seconds_sums_each_groups_tests_in_their_worker_and_leaves_the_gpu_shards_out(tmp_path, capsys):
    """What the conftest's node tables are made from: a named group's tests, a spread module's tests summed as their
    module (or, for the table of spread tests, each alone), the mean over the timelines; the controller's copy of each
    test and the GPU shards are not counted."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import group_seconds

    def timeline(name: str, scale: float) -> Path:
        lines = []
        for worker, tests in (("controller", [("tests/test_a.py::t1@test_a", 99)]),
                              ("gw0", [("tests/test_a.py::t1@test_a", 2 * scale), ("tests/test_a.py::t2@test_a", scale),
                                       ("tests/test_s.py::x", 3 * scale), ("tests/test_w.py::k[a]@gpu-sweep-0", 50)]),
                              ("gw1", [("tests/test_s.py::y", scale), ("tests/run/test_m.py::z@test_m-heavy", 4)])):
            lines.append({"type": "start", "worker": worker})
            lines += [{"type": "test", "id": i, "start": 10.0, "end": 10.0 + s} for i, s in tests]
        path = tmp_path / name
        with gzip.open(path, "wt") as fh:
            fh.write("".join(json.dumps(ln) + "\n" for ln in lines))
        return path
    runs = [timeline("one.gz", 1.0), timeline("two.gz", 3.0)]
    assert group_seconds.mean_seconds(runs) == {"test_a": 6.0, "test_s": 8.0, "test_m-heavy": 4.0}
    assert group_seconds.mean_seconds(runs, group_seconds.spread_test) == {"test_s::x": 6.0, "test_s::y": 2.0}
    group_seconds.main([str(r) for r in runs] + ["--min", "5"])
    assert capsys.readouterr().out.splitlines() == ['    "test_s": 8,', '    "test_a": 6,']


def _speed_audit():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import speed_audit
    return speed_audit


@pytest.mark.parametrize("name", sorted(_speed_audit().MECHANISMS))
def test_each_audited_mechanism_is_switched_off_by_a_patch_of_names_the_package_has(name, monkeypatch):
    """benchmarks/speed_audit.py: each mechanism's patch replaces what it names (monkeypatch.setattr fails on a name
    the package no longer has: a renamed function would otherwise leave the mechanism on, and the audit measure
    nothing); the launch cache is off by the sweep's own switch, BLAS control by the environment."""
    m = _speed_audit().MECHANISMS[name]
    replaced = []
    m.patch(lambda obj, attr, value: (monkeypatch.setattr(obj, attr, value), replaced.append(attr)))
    if name == "launch-cache":
        assert m.sweep_args == ("--no-keep-launches",) and not replaced
    elif name == "one-blas-thread":
        assert not replaced and set(m.environment().values()) == {str(os.cpu_count() or 1)}
    else:
        assert replaced, f"{name}'s patch replaced nothing"


def test_modules_in_plan_order_hold_every_kernel_once():
    """The module-balancing audit's stand-in groups every kernel, in plan order, in modules of the cap."""
    from harness import plan
    from harness.run import compile as nvrtc, toolchain
    audit = _speed_audit()
    put = {}
    audit.MECHANISMS["module-balancing"].patch(lambda obj, attr, value: put.__setitem__(attr, value))
    made = plan.make(plan.Selection(families=("wgmma",), kinds=("f16",), a_srcs=("SS",)), cache=True)
    todo = [(i, nvrtc.compile_job(k)) for i, (k, _) in enumerate(made.work)]
    modules = put["modules_to_compile"](todo, toolchain.default(), 4)
    assert [t for m in modules for t in m] == todo and max(map(len, modules)) <= nvrtc.KERNELS_PER_MODULE
    assert len(todo) > nvrtc.KERNELS_PER_MODULE


def test_the_speed_audit_runs_each_variant_and_tables_the_shares(tmp_path):
    """A mechanism off, one round, a tiny selection on this machine (exit 3 where no GPU runs it, 0 on an H100):
    every run is recorded and the table has a line for each mechanism's cold and warm sweep."""
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "speed_audit.py"), "--out-dir", str(tmp_path),
                          "--rounds", "1", "--only", "checked-set", "--", "--family", "wgmma",
                          "--kind", "tf32", "--n", "8"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    runs = json.loads((tmp_path / "audit.json").read_text())
    assert [(r["variant"], r["temperature"]) for r in runs] == [
        (v, t) for v in ("as-is", "without-checked-set") for t in ("cold", "warm")]
    assert {r["exit"] for r in runs} in ({3}, {0}), runs  # every run alike: nothing ran, or every case passed
    lines = (tmp_path / "audit.txt").read_text().splitlines()
    assert [ln.split()[:3] for ln in lines[1:]] == [["checked-set", "sweep", t] for t in ("cold", "warm")]
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "speed_audit.py"), "--out-dir", str(tmp_path),
                          "--only", "fork-servr"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert bad.returncode == 2 and "unknown mechanism fork-servr" in bad.stderr


def test_the_speed_audit_as_a_plugin_switches_its_mechanism_off_in_a_test_session(tmp_path):
    """`-p speed_audit` with TC_SPEED_AUDIT_WITHOUT=fork-server: the session's helpers are spawned (the audit's pytest
    workload); without the variable the plugin changes nothing."""
    (tmp_path / "test_probe.py").write_text("from harness.run import processes\n\n"
                                            "def test_start_method():\n    print('METHOD', processes.start_method)\n")
    for without, expected in (("fork-server", "spawn"), ("", "forkserver")):
        env = dict(os.environ, TC_SPEED_AUDIT_WITHOUT=without,
                   PYTHONPATH=os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT)]))
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "speed_audit", "-p", "no:cacheprovider",
                              "--rootdir", str(tmp_path), str(tmp_path / "test_probe.py")], capture_output=True,
                             text=True, timeout=120, cwd=tmp_path, env=env)
        assert run.returncode == 0 and f"METHOD {expected}" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]


def test_timeline_diff_puts_two_trees_events_side_by_side(tmp_path):
    """benchmarks/timeline_diff.py (for `tools/device_cycle.sh ab-timeline`): each event's first time in both
    timelines and the difference, in the old one's order; an event of one tree alone has a blank; the GPU worker's
    many launch records become the first and last launch."""
    import json
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import timeline_diff

    def write(name, records):
        p = tmp_path / name
        p.write_text("".join(json.dumps({"t": t, "event": e}) + "\n" for t, e in records))
        return str(p)
    old = write("old", [(0.1, "python up"), (1.0, "plan start"), (1.5, "launch"), (1.2, "launch"), (2.0, "plan start")])
    new = write("new", [(0.1, "python up"), (0.9, "worker ahead start"), (1.25, "plan start"), (1.9, "launch")])
    rows = timeline_diff.table(timeline_diff.first_times(old), timeline_diff.first_times(new))
    assert rows[1:] == [
        "python up                             0.100    0.100   +0.000",
        "worker ahead start                             0.900         ",
        "plan start                            1.000    1.250   +0.250",
        "first launch                          1.200    1.900   +0.700",
        "last launch                           1.500    1.900   +0.400"]
    assert "ab-timeline" in (ROOT / "tools" / "device_cycle.sh").read_text().split("set -u")[1]
