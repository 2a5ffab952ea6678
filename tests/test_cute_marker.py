"""Tests that need CuTe DSL (`cute`: its cross-checks and the simulated GPUs) skip with the reason where the DSL
is not installed, and fail under CI, which must run every oracle. The root conftest's hooks, called directly."""
import importlib.util
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location("root_conftest", Path(__file__).resolve().parent.parent / "conftest.py")


class _Item:
    def __init__(self, marked: bool):
        self.marked, self.markers = marked, []

    def get_closest_marker(self, name):
        return pytest.mark.cute.mark if (self.marked and name == "cute") else None

    def add_marker(self, m):
        self.markers.append(m)


@pytest.fixture
def conftest(monkeypatch):
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "cute_dsl_missing", lambda: True)
    return mod


def test_without_the_dsl_cute_tests_skip_with_the_reason(conftest, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    needs, other = _Item(True), _Item(False)
    conftest.skip_or_fail_cute_tests([needs, other])
    assert [m.name for m in needs.markers] == ["skip"] and "nvidia-cutlass-dsl" in needs.markers[0].kwargs["reason"]
    assert other.markers == []


def test_under_ci_a_missing_dsl_fails_the_tests_that_need_it(conftest, monkeypatch):
    monkeypatch.setenv("CI", "true")
    needs, other = _Item(True), _Item(False)
    conftest.skip_or_fail_cute_tests([needs, other])
    assert needs.markers == []
    with pytest.raises(pytest.fail.Exception, match="under CI every oracle must run"):
        conftest.pytest_runtest_setup(needs)
    conftest.pytest_runtest_setup(other)


def test_with_the_dsl_nothing_is_skipped(conftest, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(conftest, "cute_dsl_missing", lambda: False)
    needs = _Item(True)
    conftest.skip_or_fail_cute_tests([needs])
    conftest.pytest_runtest_setup(needs)
    assert needs.markers == []
