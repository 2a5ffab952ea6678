"""Under `pytest -n`, the root conftest keeps a module's tests on one worker (its module fixtures are built once)
and an explicit xdist_group (the GPU session sweep's cases) on one worker: xdist resets a worker's own --dist, so
without the conftest's pytest_configure_node the groups were silently ignored and every worker ran the whole
session sweep. And each worker's pools get its share of the cores (TC_HARNESS_WORKERS). Checked by running
pytest -n 2 on a few throwaway modules with the real conftest."""
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.spread  # each test runs its own inner pytest: no fixture to share (a group of them, 25 s on an
# H100 node, ended the README run there: bench9 in docs/performance.md)
ROOT = Path(__file__).resolve().parent.parent
MODULE = '''import os, pytest
@pytest.mark.parametrize("i", range(6))
def test_x(i):
    with open(os.environ["TC_GROUP_LOG"], "a") as f:
        f.write("{name} " + os.environ.get("PYTEST_XDIST_WORKER", "-") + "\\n")
def test_cores(tmp_path):
    with open(os.environ["TC_GROUP_LOG"] + ".cores", "a") as f:
        f.write(os.environ.get("TC_HARNESS_WORKERS", "unset") + "\\n")
@pytest.mark.parametrize("i", [pytest.param(i, marks=pytest.mark.xdist_group("sweep")) for i in range(3)])
def test_grouped(i):
    with open(os.environ["TC_GROUP_LOG"], "a") as f:
        f.write("sweep " + os.environ.get("PYTEST_XDIST_WORKER", "-") + "\\n")
'''


def inner_pytest_env(log: Path) -> dict:
    """The environment of an inner `pytest -n`: its own core share and worker count (this test may itself run on a
    worker of an outer pytest -n, whose variables would otherwise leak in)."""
    env = dict(os.environ, TC_GROUP_LOG=str(log), PYTHONPATH=str(ROOT))
    for v in [v for v in env if v.startswith("PYTEST_XDIST_") or v == "TC_HARNESS_WORKERS"]:
        env.pop(v)
    # no inner test uses hypothesis: its plugin cost each inner process ~0.35 CPU s to load (three a `pytest -n 2`)
    env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} -p no:hypothesispytest".strip()
    return env


def test_modules_and_named_groups_each_stay_on_one_worker(tmp_path):
    pytest.importorskip("xdist")
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: x\n    xdist_group: x\n")
    for name in "abcd":
        (tmp_path / f"test_{name}.py").write_text(MODULE.replace("{name}", name))
    log = tmp_path / "log.txt"
    env = inner_pytest_env(log)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    workers = defaultdict(set)
    for line in log.read_text().split("\n"):
        if line:
            group, worker = line.split()
            workers[group].add(worker)
    assert set(workers) == {"a", "b", "c", "d", "sweep"}
    assert all(len(w) == 1 for w in workers.values()), (dict(workers), proc.stdout[-2000:])
    assert "dropped the xdist_group" not in proc.stdout
    assert len(set().union(*workers.values())) == 2  # and the groups were spread over both workers
    # each worker's sweeps start pools of its share of the cores, not of all of them (harness/run/cores.py)
    assert set(Path(f"{log}.cores").read_text().split()) == {str(max(1, (os.cpu_count() or 1) // 2))}


# A plugin that makes the inner pytest behave as pytest 9.2.0 does (pytest-dev/pytest-xdist#1386): an item's node id
# stays what collection made it, whatever pytest-xdist writes into the field it tags ids with groups through.
IDS_AS_PYTEST_9_2 = '''import pytest

collected_id = pytest.Item.nodeid.fget


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        item.__dict__["id_as_collected"] = collected_id(item)


pytest.Item.nodeid = property(lambda item: item.__dict__.get("id_as_collected") or collected_id(item))
'''


def test_a_pytest_that_drops_the_groups_is_named_in_the_runs_warnings(tmp_path):
    """Where the installed pytest drops xdist's groups (pytest 9.2.0, simulated here so that the check runs on any
    pytest), the run's warnings say so: how many grouped tests lost their group, the upstream issue, and the fix."""
    pytest.importorskip("xdist")
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "ids_as_pytest_9_2.py").write_text(IDS_AS_PYTEST_9_2)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: x\n    xdist_group: x\n")
    for name in "ab":
        (tmp_path / f"test_{name}.py").write_text(MODULE.replace("{name}", name))
    log = tmp_path / "log.txt"
    env = inner_pytest_env(log)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path)])
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "ids_as_pytest_9_2",
                           "-n", "2", str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = " ".join(proc.stdout.split())
    assert "dropped the xdist_group of 20 tests (pytest-dev/pytest-xdist#1386)" in out, proc.stdout[-3000:]
    assert "install pytest<9.2" in out


def test_the_heaviest_group_is_handed_out_first(tmp_path):
    """xdist by itself hands out the groups with the most tests first; the conftest's order (MODULE_SECONDS, the
    heaviest first) must be the one that counts."""
    pytest.importorskip("xdist")
    (tmp_path / "conftest.py").write_text((ROOT / "conftest.py").read_text()
                                          + '\nMODULE_SECONDS.update({"test_few.py": 999})\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: x\n    xdist_group: x\n")
    test = ('import os, pytest\n@pytest.mark.parametrize("i", range({n}))\ndef test_x(i):\n'
            '    with open(os.environ["TC_GROUP_LOG"], "a") as f:\n        f.write("{name}\\n")\n')
    for name, n in (("many", 20), ("few", 1), ("mid", 10)):
        (tmp_path / f"test_{name}.py").write_text(test.replace("{n}", str(n)).replace("{name}", name))
    log = tmp_path / "log.txt"
    env = inner_pytest_env(log)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "1", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert log.read_text().split()[0] == "few"


def test_where_gpu_shards_are_collected_the_node_table_orders_the_groups(tmp_path):
    """A run with GPU shards (a GPU node) ranks the groups by the seconds they took on a node, not by the 2-core CI
    table: here the CI table puts `many` first and the node table `few`; `many`, which the node table lacks, weighs
    a third of its CI seconds, still more than a shard; a gpu-sweep shard is collected. A spread module's test that
    the node table of spread tests has weighs its own seconds (`sprd` 1, before the shard), the others their share of
    their module's (`sprd` 0, in no table: after it)."""
    pytest.importorskip("xdist")
    (tmp_path / "conftest.py").write_text((ROOT / "conftest.py").read_text()
                                          + '\nMODULE_SECONDS.update({"test_many.py": 999})'
                                          + '\nNODE_GROUP_SECONDS.update({"test_few": 500})'
                                          + '\nNODE_SPREAD_TEST_SECONDS.update({"test_sprd::test_x[1]": 300})\n')
    (tmp_path / "test_sprd.py").write_text(
        'import os, pytest\npytestmark = pytest.mark.spread\n@pytest.mark.parametrize("i", range(2))\ndef test_x(i):\n'
        '    with open(os.environ["TC_GROUP_LOG"], "a") as f:\n        f.write(f"sprd{i}\\n")\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: x\n    xdist_group: x\n    spread: x\n")
    test = ('import os, pytest\n{mark}\n@pytest.mark.parametrize("i", range({n}))\ndef test_x(i):\n'
            '    with open(os.environ["TC_GROUP_LOG"], "a") as f:\n        f.write("{name}\\n")\n')
    for name, n, mark in (("many", 20, ""), ("few", 1, ""),
                          ("shard", 3, 'pytestmark = pytest.mark.xdist_group("gpu-sweep-0")')):
        (tmp_path / f"test_{name}.py").write_text(test.replace("{n}", str(n)).replace("{name}", name)
                                                  .replace("{mark}", mark))
    log = tmp_path / "log.txt"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "1", str(tmp_path)],
                          cwd=tmp_path, env=inner_pytest_env(log), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    order = list(dict.fromkeys(log.read_text().split()))
    assert order == ["few", "many", "sprd1", "shard", "sprd0"], order


TIMED_MODULE = ('import os, time, pytest\n{mark}\n@pytest.mark.parametrize("i", range({n}))\ndef test_x(i):\n'
                '    time.sleep({s})\n'
                '    with open(os.environ["TC_GROUP_LOG"], "a") as f:\n'
                '        f.write("{name} " + os.environ.get("PYTEST_XDIST_WORKER", "-") + "\\n")\n')
SPREAD = "pytestmark = pytest.mark.spread"


def run_modules(tmp_path, workers: int, modules, conftest_extra: str = "") -> tuple[dict[str, list[str]], list[str]]:
    """An inner `pytest -n workers` over throwaway modules (name, tests, seconds each, module-level mark) with the
    real conftest (plus `conftest_extra`): (which worker ran each module's tests, in the order they ran; the modules
    in the order their first test ran)."""
    pytest.importorskip("xdist")
    (tmp_path / "conftest.py").write_text((ROOT / "conftest.py").read_text() + "\n" + conftest_extra + "\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: x\n    xdist_group: x\n    spread: x\n")
    for name, n, sleep, mark in modules:
        (tmp_path / f"test_{name}.py").write_text(TIMED_MODULE.replace("{n}", str(n)).replace("{s}", str(sleep))
                                                  .replace("{name}", name).replace("{mark}", mark))
    log = tmp_path / "log.txt"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers),
                           str(tmp_path)], cwd=tmp_path, env=inner_pytest_env(log), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    ran = defaultdict(list)
    for line in log.read_text().split("\n"):
        if line:
            name, worker = line.split()
            ran[name].append(worker)
    return ran, list(dict.fromkeys(line.split()[0] for line in log.read_text().split("\n") if line))


def test_a_spread_modules_tests_go_to_whichever_worker_is_free(tmp_path):
    """A module marked `spread` is no group: its tests are handed out one by one (they fill the workers' tails),
    while an unmarked module beside it stays on one worker."""
    workers, _ = run_modules(tmp_path, 2, [("spread", 8, 0.2, SPREAD), ("whole", 8, 0.2, "")])
    assert len(workers["spread"]) == len(workers["whole"]) == 8
    assert len(set(workers["whole"])) == 1
    assert len(set(workers["spread"])) == 2, workers


def test_a_spread_modules_tests_weigh_their_share_of_its_seconds(tmp_path):
    """A spread module's tests are handed out by their share of its seconds: those of a slow one before a lighter
    group (not in the tail, where they kept one worker busy after the others were done), those of a quick one after
    it."""
    _, order = run_modules(tmp_path, 1, [("quickspread", 4, 0, SPREAD), ("light", 3, 0, ""), ("slowspread", 2, 0, SPREAD)],
                      'MODULE_SECONDS.update({"test_slowspread.py": 100, "test_light.py": 10, '
                      '"test_quickspread.py": 2})')
    assert order == ["slowspread", "light", "quickspread"]


def test_a_worker_on_a_long_lone_test_is_not_handed_the_next_heavy_group_meanwhile(tmp_path):
    """xdist gives a worker its next group when it has two tests or fewer to run, the running one counted: the worker
    that takes up a group of one long test would hold the next heavy group for as long as that test runs, while the
    other worker idles. Two quick `spread` tests follow the long one in its group (conftest.give_companions), so the
    next heavy group goes to the worker that frees up first. Here `quick` ends at once and its worker takes up `long`
    (3 s) while the other is still on `slow` (2 s): `heavy` must go to the worker of `slow`."""
    workers, _ = run_modules(tmp_path, 2, [("quick", 4, 0.01, ""), ("slow", 4, 0.5, ""), ("long", 1, 3.0, ""),
                                        ("heavy", 4, 0.1, ""), ("spread", 6, 0.01, SPREAD)],
                          'MODULE_SECONDS.update({"test_quick.py": 999, "test_slow.py": 900, "test_long.py": 800, '
                          '"test_heavy.py": 700})\nQUICK_SPREAD_MODULES = ("test_spread.py",)')
    assert [len(workers[n]) for n in ("quick", "slow", "long", "heavy", "spread")] == [4, 4, 1, 4, 6]
    assert set(workers["long"]) == set(workers["quick"]) != set(workers["slow"]), dict(workers)
    assert set(workers["heavy"]) == set(workers["slow"]), dict(workers)


@pytest.mark.parametrize("opt_out", [None, "env", "-B"], ids=["default", "TC_HARNESS_TEST_BYTECODE=0", "python -B"])
def test_the_test_session_keeps_bytecode_under_pythondontwritebytecode(tmp_path, opt_out):
    """With PYTHONDONTWRITEBYTECODE set (the H100 nodes' images), each run recompiled and assert-rewrote every test
    module: the session writes the bytecode (the rewritten test module's too), unless told not to, by the variable
    or by `python -B`."""
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: x\n    xdist_group: x\n")
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    env = inner_pytest_env(tmp_path / "log.txt")
    env.update(PYTHONDONTWRITEBYTECODE="1", **({"TC_HARNESS_TEST_BYTECODE": "0"} if opt_out == "env" else {}))
    flags = ["-B"] if opt_out == "-B" else []
    proc = subprocess.run([sys.executable, *flags, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                           str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    written = sorted(p.name for p in (tmp_path / "__pycache__").glob("test_one*.pyc"))
    assert (written == []) if opt_out else (len(written) == 1 and "pytest" in written[0]), written
