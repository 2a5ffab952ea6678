"""A third instruction family, kept outside harness/, to show the engine runs a family it has never seen.

It is deliberately tiny: one "kernel" per arch that adds two int32 vectors, 128 lanes per case, its operands in
the case's shared-memory image. Registered with TC_HARNESS_FAMILIES="toy=tests.simulated.toy_family"; its launches
run on tests/simulated/toy_device.py. Nothing in harness/run, harness/plan.py, harness/sweep.py or
harness/records knows it."""
import zlib
from dataclasses import dataclass

import numpy as np

from harness.enums import Arch
from harness.contract import Kernel, LaunchInput, OutputSpec, SassCheck, SassRule, case_record

PARAMS = np.dtype([("image_offset", "<u8"), ("image_bytes", "<u4"), ("bias", "<i4")])


class SeededCase:
    """A test family's case whose draws come from its id (shared by the test families)."""

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())


@dataclass(frozen=True)
class ToyCase(SeededCase):
    n: int
    bias: int

    @property
    def id(self) -> str:
        return f"toy-add-n{self.n}-bias{self.bias}"


@dataclass
class ToyExpectation:
    """A case and the values its launch must give (shared by the test families)."""
    case: SeededCase
    expected: np.ndarray


class PlainFamily:
    """What a test family without probes, case fields or controls answers (shared by the test families)."""

    def diagnose(self, kernel, cases, cubin_path, worker, timeout, png_dir):
        return []

    def sass_check(self, kernel):
        return SassCheck(str(kernel.arch), (SassRule(r"EXIT", "the kernel returns"),))

    @staticmethod
    def case_fields(case):
        return {}

    @staticmethod
    def settle_control(case, record):
        return record


class ToyFamily(PlainFamily):
    name = "toy"
    archs = (Arch.SM_90A,)
    facets = frozenset({"n"})

    def kernels(self, arch):
        if arch not in self.archs:
            return []
        return [(Kernel(self.name, Arch(arch), "toy_add", "add"), [ToyCase(n, b) for n in (8, 64) for b in (0, 3)])]

    @staticmethod
    def facets_of(case):
        return {"n": case.n, "control": False}

    def source(self, kernel):
        return 'extern "C" __global__ void toy_add() {}'

    def prepare(self, kernel, cases):
        launch, sums = toy_launch(cases, lambda c: c.bias)
        return launch, [ToyExpectation(c, s + c.bias) for c, s in zip(cases, sums)]

    def readback(self, kernel, expectations, outputs):
        out = []
        for e, got in zip(expectations, outputs["out"]):
            bad = int((got != e.expected).sum())
            out.append(case_record(e.case.id, kernel, "pass" if bad == 0 else "fail", mismatches=bad))
        return out



def toy_launch(cases, bias_of) -> tuple[LaunchInput, list]:
    """The test families' launch: each case's A and B (128 int32 each, drawn from its seed) in one image, the bias
    the kernel adds (`bias_of(case)`) in its parameters, one 128-lane output poisoned with -1; and each case's A + B,
    the sum before the bias."""
    images, params, sums = [], np.zeros(len(cases), PARAMS), []
    off = 0
    for i, c in enumerate(cases):
        rng = np.random.default_rng(c.seed)
        a, b = rng.integers(-100, 100, 128, dtype=np.int32), rng.integers(-100, 100, 128, dtype=np.int32)
        img = np.concatenate([a, b]).view(np.uint8)
        images.append(img)
        params[i] = (off, img.size, bias_of(c))
        off += img.size
        sums.append(a + b)
    return LaunchInput(np.concatenate(images), params, {}, {"out": OutputSpec((128,), "int32", -1)}), sums


FAMILY = ToyFamily()
