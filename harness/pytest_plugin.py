"""The harness as a pytest plugin (entry point `pytest11`: loaded wherever the package is installed), so that another
project's CI can run the harness's cases, and check its own kernels' descriptors, as tests of its own.

- `--tc-sweep SELECTION`: the sweep, or a selection of it, as tests: SELECTION is `all` or the sweep's selection
  flags as one argument (`--tc-sweep "--family wgmma --kind f16 --n 64"`, `--tc-sweep "--level 1"`). One test per
  kernel (`tc-sweep/<family>/<kernel>`), as in the harness's own suite: the first of them runs the selection through
  the sweep's engine (compile, SASS check, launch, read back: python -m harness sweep's), then each fails naming its
  cases that did not pass (a negative control: not caught as predicted) or did not compile, and skips, with the
  harness's own reason ("needs a sm_90a GPU; none is visible (...)"), where no GPU of its arch is here: on a CPU
  machine the kernels are still compiled and SASS-checked, so a toolchain that cannot build them fails there.
  Under pytest-xdist the tests share one xdist group (one worker runs the sweep once).
- `--tc-sweep-out FILE`: keep the results file (default: in pytest's temporary folder); `--tc-junit FILE`: also write
  the harness's own JUnit XML of it (python -m harness junit: one testcase per case).
- Fixtures: `tc_tap` (harness/tap.py: make a tap buffer, read one back, check it against declared layouts, failing
  the test with one line per disagreeing field) and `tc_api` (harness.api).

Without --tc-sweep the plugin adds its options and fixtures and nothing else; it imports the harness only when asked.
"""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

GROUP = "tc-sweep"


def pytest_addoption(parser):
    g = parser.getgroup("tensor-core-harness", "tensor-core-harness (python -m harness) as tests")
    g.addoption("--tc-sweep", metavar="SELECTION", default=None,
                help="run the harness's sweep as tests: 'all', or its selection flags as one argument, e.g. "
                     "\"--family wgmma --kind f16\" or \"--level 1\"")
    g.addoption("--tc-sweep-out", metavar="FILE", default=None, help="keep --tc-sweep's results file here")
    g.addoption("--tc-junit", metavar="FILE", default=None,
                help="also write --tc-sweep's JUnit XML (one testcase per case, python -m harness junit's)")


def _selection(text: str):
    """(Selection, level) from --tc-sweep's text, parsed as the sweep command parses its selection flags (the same
    flags: harness.plan.add_flags); pytest.UsageError, one line, for anything it refuses."""
    import argparse

    from harness import levels, registry
    from harness.plan import Selection, SweepError, add_flags

    class Parser(argparse.ArgumentParser):
        def error(self, message):  # one line, no usage dump
            raise pytest.UsageError(f"--tc-sweep: {message}")

    words = [] if text.strip() == "all" else shlex.split(text)
    allowed = {"--family", "--kind", "--n", "--a-src", "--cta-group", "--dtype", "--data", "--match",
               "--no-controls", "--level"}
    for w in words:
        if w.startswith("--") and w.split("=")[0] not in allowed:
            raise pytest.UsageError(f"--tc-sweep: {w} is not a selection flag (one of {', '.join(sorted(allowed))})")
    parser = Parser(prog="--tc-sweep", add_help=False)
    add_flags(parser, tuple(registry.registry()))
    parser.add_argument("--level", type=int, choices=levels.LEVELS)
    a, extra = parser.parse_known_args(words)
    if extra:
        raise pytest.UsageError(f"--tc-sweep: unrecognized: {' '.join(extra)}")
    sel = Selection.from_flags(a)
    try:
        sel.validate()
    except SweepError as e:
        raise pytest.UsageError(f"--tc-sweep: {e}") from None
    return sel, a.level


class _Sweep:
    """The selection's plan and, once asked, the records of its one run."""

    def __init__(self, config, sel, level):
        from harness import levels, plan as planning, sweep
        from harness.run import gpu
        self.config = config
        devs = sweep.devices(sweep.SweepConfig(), [a for fam in _families() for a in fam.archs]) \
            if gpu.device_count() and not gpu.unusable() else []
        try:
            p = planning.make(sel, sweep.run_archs(devs), cache=True)
        except planning.SweepError as e:
            raise pytest.UsageError(f"--tc-sweep: {e}") from None
        self.plan = levels.sample(p, level, set(sweep.run_archs(devs))) if level is not None else p
        self.level = level
        self.records: dict | None = None
        self.error: BaseException | None = None
        self.out: Path | None = None

    def run(self) -> dict:
        if self.error is not None:
            raise self.error
        if self.records is None:
            from harness import sweep
            from harness.records import results
            try:
                out = self.config.getoption("tc_sweep_out")
                self.out = Path(out) if out else Path(self.config._tmp_path_factory.mktemp("tc-sweep")) / "sweep.jsonl"
                self.out.parent.mkdir(parents=True, exist_ok=True)
                cfg = sweep.SweepConfig(out_path=self.out, diagnose=0, level=self.level)
                sweep.execute(self.plan, cfg, log=lambda m: None)
                self.records = results.load(self.out)[1]
            except BaseException as e:
                self.error = e
                raise
        return self.records


def _families():
    from harness import registry
    return registry.all_families()


class KernelItem(pytest.Item):
    """One kernel of the --tc-sweep selection: passes when every case of it does what the harness's own test of
    it wants."""

    def __init__(self, *, kernel, cases, sweep_run, **kw):
        super().__init__(**kw)
        self.kernel, self.cases, self.sweep_run = kernel, cases, sweep_run
        self.add_marker(pytest.mark.xdist_group(GROUP))

    def runtest(self):
        from harness.enums import Status
        from harness.registry import get
        recs = self.sweep_run.run()
        fam = get(self.kernel.family)
        mine = [(c, recs.get(c.id)) for c in self.cases]
        missing = [c.id for c, r in mine if r is None]
        if missing:
            pytest.fail(f"the sweep wrote no record for {len(missing)} cases: {', '.join(missing[:5])}", pytrace=False)
        uncompiled = [r for _, r in mine if r["status"] == Status.COMPILE_ERROR]
        if uncompiled:
            pytest.fail(f"{self.kernel.name} did not compile: {uncompiled[0].get('error', '')}"[:2000], pytrace=False)
        if all(r["status"] == Status.NOT_RUN for _, r in mine):
            from harness.run import gpu
            pytest.skip(gpu.skip_reason(str(self.kernel.arch)) or mine[0][1].get("reason", "not run"))
        bad = []
        for c, r in mine:
            control = bool(fam.facets_of(c).get("control"))
            if r["status"] != Status.PASS:
                bad.append(f"{c.id}: {r['status']}: {r.get('error') or r.get('why') or r.get('reason') or ''}"
                           f"{' mismatches ' + str(r['mismatches']) if r.get('mismatches') else ''}")
            elif control and (not r.get("caught") or r.get("matches_model_prediction") is False):
                bad.append(f"{c.id}: negative control not caught as predicted")
        if bad:
            pytest.fail(f"{len(bad)} of {self.kernel.name}'s {len(self.cases)} cases fail (each: python -m harness "
                        "sweep --match ID):\n" + "\n".join(bad[:20]), pytrace=False)

    def reportinfo(self):
        return self.name, None, f"{self.kernel.family} kernel {self.kernel.name} ({len(self.cases)} cases)"


def pytest_configure(config):
    config.addinivalue_line("markers", "xdist_group(name): tests of one group run on one pytest-xdist worker")
    text = config.getoption("tc_sweep", None)
    config._tc_sweep = _Sweep(config, *_selection(text)) if text else None


def pytest_collection_modifyitems(session, config, items):
    sw = getattr(config, "_tc_sweep", None)
    if sw is None:
        return
    for kernel, cases in sw.plan.work:
        items.append(KernelItem.from_parent(session, name=f"tc-sweep/{kernel.family}/{kernel.name}", kernel=kernel,
                                            cases=cases, sweep_run=sw))


def pytest_sessionfinish(session, exitstatus):
    sw = getattr(session.config, "_tc_sweep", None)
    junit = session.config.getoption("tc_junit", None)
    if sw is None or not junit or sw.out is None or not sw.out.exists():
        return
    from harness.records import junit as junit_xml
    Path(junit).parent.mkdir(parents=True, exist_ok=True)
    junit_xml.convert(sw.out, Path(junit))


# ---------------------------------------------------------------------------------------------------- fixtures

class TapHelper:
    """The `tc_tap` fixture: harness/tap.py for a test of the host project's own kernels."""

    def __init__(self):
        from harness import tap
        self._tap = tap
        self.Declaration = tap.Declaration
        self.include_dir = tap.include_dir()

    def new_buffer(self, capacity: int) -> bytearray:
        """A buffer's initial bytes, to copy to the device and hand the kernel (tc_tap.cuh)."""
        return self._tap.new_buffer(capacity)

    def build_buffer(self, records, capacity: int | None = None) -> bytearray:
        return self._tap.build_buffer(records, capacity)

    def findings(self, buffer, declarations) -> list:
        """Every disagreement between the buffer's records and the declared layouts (harness.tap.check)."""
        return self._tap.check_buffer(buffer, declarations)

    def assert_descriptors(self, buffer, declarations) -> None:
        """Fail the test, one line per disagreeing field, unless every recorded descriptor is the intended one."""
        found = self.findings(buffer, declarations)
        if found:
            pytest.fail("descriptors disagree with their declared layouts:\n" + "\n".join(f.message for f in found),
                        pytrace=False)


@pytest.fixture
def tc_tap() -> TapHelper:
    return TapHelper()


@pytest.fixture
def tc_api():
    from harness import api
    return api
