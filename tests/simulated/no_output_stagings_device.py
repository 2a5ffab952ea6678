"""A backend the GPU worker cannot use (tests/run/test_worker.py): it copies outputs to the host (`run_to_host`) but
has no OUTPUT_STAGINGS to copy them into."""
from tests.simulated.passthrough_device import run, use_device  # noqa: F401


def run_to_host(cubin_path, kernel_name, launch, slot):
    raise AssertionError("never called: the backend is refused before any worker starts")
