"""The pytest plugin from an installed wheel, in a scratch project (issue 57): the wheel registers the `pytest11`
entry point; the scratch project's own tests use the tap fixtures (a planted SBO bug fails its test with the exact
field and value, the fixed descriptors pass); `--tc-sweep` adds the selection's kernels as tests, which skip with
the harness's own reason where no GPU of their arch is here (and pass on one), after compiling them; `--tc-junit`
writes the harness's per-case JUnit XML; a bad selection is one line and pytest's usage exit."""
import importlib.util
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness import levels, plan
from harness.run import gpu
from tests.test_packaging import ROOT, _builds_here

SCRATCH_TESTS = '''
import pytest

B_ADDR = 0x2400


def desc(sbo):  # K-major, 128B swizzle, LBO 16
    return (B_ADDR >> 4) | 1 << 16 | (sbo >> 4) << 32 | 1 << 62


def decls(tc_tap, tc_api):
    lay = tc_api.canonical_layout("f16", "K", "128B", rows=24, cols=16, start=B_ADDR)
    return [tc_tap.Declaration(2, "B", "sm_90a", lay)]


def test_fixed_descriptors_pass(tc_tap, tc_api):
    tc_tap.assert_descriptors(tc_tap.build_buffer([(2, desc(1024), 0)] * 4), decls(tc_tap, tc_api))


def test_the_sbo_bug_is_named(tc_tap, tc_api):
    (f,) = tc_tap.findings(tc_tap.build_buffer([(2, desc(512), 0)]), decls(tc_tap, tc_api))
    assert (f.field, f.got, f.want) == ("SBO", 512, 1024)


def test_planted_bug_fails_this_test(tc_tap, tc_api):
    tc_tap.assert_descriptors(tc_tap.build_buffer([(2, desc(512), 0)]), decls(tc_tap, tc_api))
'''
SELECTION = "--family wgmma_seq --kind f16 --level 1"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(this python, the scratch project, the environment whose PYTHONPATH holds the wheel of this tree)."""
    if importlib.util.find_spec("pip") is None:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"pip is not installed in {sys.executable}")
    tmp = tmp_path_factory.mktemp("plugin")
    offline = ["--no-build-isolation"] if _builds_here() else []
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *offline, "-w", str(tmp / "w"),
                            str(ROOT)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = (tmp / "w").glob("tensor_core_harness-*.whl")
    # the wheel in a folder of its own that the scratch runs read first (PYTHONPATH), this environment's packages
    # behind it: not a nested venv, whose cuda.pathfinder would look for libnvrtc only in its own site-packages
    # (tests/test_packaging.py says why), so from a user's venv it could not load NVRTC
    target = tmp / "installed"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target),
                    str(wheel)], check=True, capture_output=True, timeout=600, env=_clean_env())
    env = {**_clean_env(), "PYTHONPATH": str(target)}
    project = tmp / "project"
    project.mkdir()
    (project / "test_my_kernels.py").write_text(SCRATCH_TESTS)
    return sys.executable, project, env


def _clean_env() -> dict:
    """This environment without what would put this checkout, or other plugins, into the scratch project's run."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")}


def _pytest(py, project, env, *args):
    return subprocess.run([py, "-m", "pytest", "-p", "no:cacheprovider", "-rs", *map(str, args)], cwd=project,
                          capture_output=True, text=True, timeout=600, env=env)


def test_the_wheel_registers_the_plugin(installed):
    py, project, env = installed
    out = subprocess.run([py, "-c", "import importlib.metadata as m, harness.pytest_plugin as p; "
                                    "print([e.value for e in m.entry_points(group='pytest11')]); print(p.__file__)"],
                         cwd=project, capture_output=True, text=True, check=True, env=env).stdout
    assert "'harness.pytest_plugin'" in out and str(ROOT) not in out.splitlines()[1]


def test_a_scratch_project_runs_the_tap_fixtures_and_a_sweep_selection(installed):
    py, project, env = installed
    r = _pytest(py, project, env, "-q", "--tc-sweep", SELECTION, "--tc-junit", project / "tc.xml",
                "--junitxml", project / "pytest.xml")
    sample = levels.sample(plan.make(plan.Selection(families=("wgmma_seq",), kinds=("f16",)), None, cache=True), 1)
    kernels = len(sample.work)
    reason = gpu.skip_reason("sm_90a")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]  # the planted bug's test, and only it, fails
    assert "SBO is 512, the layout needs 1024: rows 8-23" in r.stdout
    if reason:  # no sm_90a GPU: every kernel skips with the harness's own reason, after compiling
        assert f"1 failed, 2 passed, {kernels} skipped" in r.stdout and reason in r.stdout
    else:  # each kernel's test passes, beside the scratch project's two that pass
        assert f"1 failed, {kernels + 2} passed" in r.stdout
    suites = ET.parse(project / "tc.xml").getroot()
    cases = suites.findall(".//testcase")
    assert len(cases) == sample.cases and suites.get("tests") == str(sample.cases)
    assert all((c.find("skipped") is not None) == bool(reason) for c in cases)
    items = [c.get("name") for c in ET.parse(project / "pytest.xml").getroot().iter("testcase")]
    assert sum(n.startswith("tc-sweep/wgmma_seq/") for n in items) == kernels


def test_a_bad_selection_is_one_line_and_a_usage_error(installed):
    py, project, env = installed
    r = _pytest(py, project, env, "--tc-sweep", "--family nope")
    assert r.returncode == 4 and "--tc-sweep: " in r.stderr and "invalid choice: 'nope'" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = _pytest(py, project, env, "--tc-sweep", "--out x.jsonl")
    assert r.returncode == 4 and "--out is not a selection flag" in r.stderr
