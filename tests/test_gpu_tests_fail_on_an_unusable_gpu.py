"""pytest -m gpu on a machine whose GPU is unusable fails (it used to skip, as if no GPU were there: green).
The root conftest's hooks, called directly with CUDA stood in for."""
import importlib.util
from pathlib import Path

import pytest

from harness.run import gpu

spec = importlib.util.spec_from_file_location("root_conftest", Path(__file__).resolve().parent.parent / "conftest.py")


class _Item:
    def __init__(self, marked: bool):
        self.marked, self.markers = marked, []

    def get_closest_marker(self, name):
        return pytest.mark.gpu("sm_90a").mark if (self.marked and name == "gpu") else None

    def add_marker(self, m):
        self.markers.append(m)


def test_gpu_marked_tests_fail_and_are_not_skipped_when_the_gpu_is_unusable(monkeypatch):
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    monkeypatch.setattr(gpu, "unusable", lambda: "cudaGetDeviceCount failed: cudaErrorUnknown")
    on_gpu, on_cpu = _Item(True), _Item(False)
    conftest.pytest_collection_modifyitems(None, [on_gpu, on_cpu])
    assert on_gpu.markers == []  # not skipped
    with pytest.raises(pytest.fail.Exception, match="unusable: cudaGetDeviceCount failed"):
        conftest.pytest_runtest_setup(on_gpu)
    conftest.pytest_runtest_setup(on_cpu)  # CPU tests run as ever
    monkeypatch.setattr(gpu, "unusable", lambda: None)
    monkeypatch.setattr(gpu, "skip_reason", lambda *archs: "needs a sm_90a GPU; none is visible")  # as on a CPU
    conftest.pytest_collection_modifyitems(None, [on_gpu])
    assert on_gpu.markers and on_gpu.markers[0].name == "skip"  # no GPU here: skipped with the reason, as before
