"""The passthrough device (tests/simulated/passthrough_device.py), whose worker process marks the interpreter's own
ending: an exit handler appends the worker's pid to the file TC_SIM_EXIT_MARKER. CuPy's module unloads run at that
ending too, and in a context that faulted each fails with a traceback on the sweep's terminal; a worker whose launch
failed must end without it (worker._serve), one that finishes cleanly ends normally."""
import atexit
import os

from tests.simulated.passthrough_device import run  # noqa: F401  (the launches: passthrough's, traps and all)


def _mark() -> None:
    with open(os.environ["TC_SIM_EXIT_MARKER"], "a") as fh:
        fh.write(f"{os.getpid()}\n")


def use_device(index: int) -> None:
    atexit.register(_mark)
