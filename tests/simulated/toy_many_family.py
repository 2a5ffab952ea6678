"""The toy family (tests/simulated/toy_family.py) with many kernels: TOY_KERNELS launches of TOY_CASES cases each, for
sweeps that last long enough to be interrupted part way through their launches (tests/test_interrupts.py). Registered
with TC_HARNESS_FAMILIES="toymany=tests.simulated.toy_many_family"; its launches run on tests/simulated/toy_device.py
(TC_SIM_LAUNCH_S slows each one down). With TC_SIM_LAUNCH_LOG set, each launch prepared adds a line `prepare <kernel>`
to that file too (the mass-fault tests count the launches a storm leaves unprepared)."""
import os

from harness.enums import Arch
from harness.contract import Kernel
from tests.simulated.toy_family import ToyCase, ToyFamily

TOY_KERNELS = int(os.environ.get("TC_SIM_TOY_KERNELS", "24"))
TOY_CASES = 6


class ToyManyFamily(ToyFamily):
    name = "toymany"

    def kernels(self, arch):
        if arch not in self.archs:
            return []
        return [(Kernel(self.name, Arch(arch), f"toy_add_{k}", ("add", k)),
                 [ToyCase(8 + k, b) for b in range(TOY_CASES)]) for k in range(TOY_KERNELS)]

    def prepare(self, kernel, cases):
        from tests.simulated import toy_device
        toy_device._log(f"prepare {kernel.name}")
        return super().prepare(kernel, cases)


FAMILY = ToyManyFamily()
