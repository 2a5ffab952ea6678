"""Hardware requirements are markers: `@pytest.mark.gpu("sm_90a")` skips, with the reason, unless a GPU of
that arch is present. CuTe DSL cross-checks carry `cute` and skip where the DSL is not installed."""
import pytest

from harness import gpu


def pytest_collection_modifyitems(config, items):
    for item in items:
        m = item.get_closest_marker("gpu")
        if m is not None:
            reason = gpu.skip_reason(m.args[0] if m.args else "sm_90a")
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
