"""A stand-in backend whose worker takes SLOW_START_S to come up (as a real one importing CuPy and making its
context on a busy node may), then answers every launch at once: a launch's timeout must not count the start-up."""
import time

SLOW_START_S = 2.0


def use_device(index: int) -> None:
    time.sleep(SLOW_START_S)


def run(cubin_path, kernel_name, launch):
    return {"echo": kernel_name}
