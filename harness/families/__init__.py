"""The instruction families, one subpackage each with the same module names (forms, cases, reference, kernel,
readback), and the registry the engine looks them up in by name."""
from __future__ import annotations

import importlib

from harness.enums import FamilyName

# name -> module holding its FAMILY object; the third family (mma.sync, sm_120 ...) is one more line here
REGISTRY = {FamilyName.WGMMA: "harness.families.wgmma", FamilyName.TCGEN05: "harness.families.tcgen05"}


def get(name):
    try:
        module = REGISTRY[FamilyName(name)]
    except ValueError:
        raise ValueError(f"unknown instruction family {name!r}; one of {', '.join(map(str, REGISTRY))}") from None
    return importlib.import_module(module).FAMILY


def all_families():
    return [get(n) for n in REGISTRY]
