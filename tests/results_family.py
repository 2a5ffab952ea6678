"""A small instruction family for the results-file tests (resume, two writers, full disk): four kernels of three
cases, each case adding two int32 vectors, run on tests/simulated/toy_device.py through the real sweep (plan,
engine, records). Which cases fail is chosen when the plan is made: TC_RF_FAIL lists case ids whose reference is
made one off (the "hardware" is right, the expectation wrong), so a test plants failures without a device of its
own. Registered with TC_HARNESS_FAMILIES="rf=tests.results_family"."""
import os
import zlib
from dataclasses import dataclass

from harness.enums import Arch
from harness.contract import Kernel, case_record
from tests.simulated.toy_family import PlainFamily, toy_launch

ENV = "rf=tests.results_family"
BACKEND = "tests.results_family"  # this module is the simulated GPU too (use_device, run)
FAIL = "TC_RF_FAIL"
GATE = "TC_RF_GATE"  # a path: each launch waits (up to a minute) until it exists, so a sweep lasts until a test says
KERNELS, CASES = 4, 3


@dataclass(frozen=True)
class RfCase:
    kernel: int
    n: int
    wrong: bool = False  # the reference is one off: the case fails

    @property
    def id(self) -> str:
        return f"rf-k{self.kernel}-n{self.n}"

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())


def ids() -> list[str]:
    return [RfCase(k, n).id for k in range(KERNELS) for n in range(CASES)]


class RfFamily(PlainFamily):
    name = "rf"
    archs = (Arch.SM_90A,)
    facets = frozenset({"n"})

    def kernels(self, arch):
        if arch not in self.archs:
            return []
        failing = set(filter(None, os.environ.get(FAIL, "").split(",")))
        return [(Kernel(self.name, Arch(arch), f"rf_k{k}", k),
                 [RfCase(k, n, RfCase(k, n).id in failing) for n in range(CASES)]) for k in range(KERNELS)]

    @staticmethod
    def facets_of(case):
        return {"n": case.n, "control": False}

    def source(self, kernel):
        return f'extern "C" __global__ void {kernel.name}() {{}}'

    def prepare(self, kernel, cases):
        launch, sums = toy_launch(cases, lambda c: 0)
        return launch, [(c, s + int(c.wrong)) for c, s in zip(cases, sums)]

    def readback(self, kernel, expectations, outputs):
        out = []
        for (case, expected), got in zip(expectations, outputs["out"]):
            bad = int((got != expected).sum())
            out.append(case_record(case.id, kernel, "pass" if bad == 0 else "fail", mismatches=bad))
        return out


FAMILY = RfFamily()


def use_device(index: int) -> None:
    pass


def run(cubin_path, kernel_name, launch):
    """The simulated GPU: what the kernel computes (tests/simulated/toy_device.py), once TC_RF_GATE's path exists."""
    import time

    from tests.simulated import toy_device
    gate, t = os.environ.get(GATE), time.time()
    while gate and not os.path.exists(gate) and time.time() - t < 60:
        time.sleep(0.02)
    return toy_device.run(cubin_path, kernel_name, launch)


def install(monkeypatch, failing=()) -> None:
    """For a test (pytest's monkeypatch, or pytest.MonkeyPatch() in a process of its own): the family registered,
    one simulated sm_90a GPU, nothing compiled, and every engine the sweep starts launching on this module."""
    import dataclasses

    from harness import registry, sweep
    from tests.simulated import fake_gpus
    monkeypatch.setenv(registry.EXTRA, ENV)
    monkeypatch.setenv(FAIL, ",".join(failing))
    fake_gpus.install(monkeypatch, ["sm_90a"])
    start = sweep.start_engine
    monkeypatch.setattr(sweep, "start_engine", lambda devs, cfg, *a, **k: start(
        devs, dataclasses.replace(cfg, backend=BACKEND), *a, **k))


def main(argv) -> int:
    """`python -m tests.results_family SWEEP-ARGS...`: the command line's sweep of this family on its simulated GPU
    (two of these started together are the concurrent-writers test's two sweeps)."""
    import pytest

    from harness import cli
    mp = pytest.MonkeyPatch()
    install(mp, [x for x in os.environ.get(FAIL, "").split(",") if x])
    return int(cli.main(["sweep", "--family", "rf", *argv]))


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
