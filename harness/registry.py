"""The registry: every instruction family by name, each the module holding its `FAMILY` object (harness/contract.py
says what a family is). A family is loaded when it is first asked for (`get`), by its module's name: the registry
sits at the contract's layer, below the families, and imports none of them; the engine, the plan, the sweep and the
readers find every family here and import none by name.

A family in the tree is one line of REGISTRY; one kept outside it joins through TC_HARNESS_FAMILIES (`EXTRA`)."""
from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

from harness.enums import FamilyName, declare_arch

# name -> module holding its FAMILY object; a new family in the tree is one more line here
REGISTRY = {str(FamilyName.WGMMA): "harness.families.wgmma", str(FamilyName.WGMMA_SP): "harness.families.wgmma_sp",
            str(FamilyName.WGMMA_SEQ): "harness.families.wgmma_seq",
            str(FamilyName.TCGEN05): "harness.families.tcgen05", str(FamilyName.MMA_SYNC): "harness.families.mma_sync"}
# a family kept outside the tree joins without editing it: TC_HARNESS_FAMILIES="name=package.module,..." (read in
# every process of a sweep, the preparing and GPU workers too)
EXTRA = "TC_HARNESS_FAMILIES"


def registry() -> dict[str, str]:
    return dict(registry_of(os.environ.get(EXTRA, "")))


class FamiliesError(ValueError):
    """TC_HARNESS_FAMILIES names what cannot be a family: one line saying why (the command line exits 2, before
    anything runs: `check_extra`)."""


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


@lru_cache(maxsize=None)  # the engine asks for a family per case: read the variable's value once
def registry_of(extra: str) -> Mapping[str, str]:
    """The registry with the families `extra` (the value of TC_HARNESS_FAMILIES) adds (read-only: it is kept).
    FamiliesError for an item that is not name=module (a Python module path), or a name given twice."""
    out = dict(REGISTRY)
    added = set()
    for item in filter(None, (x.strip() for x in extra.split(","))):
        name, eq, module = (x.strip() for x in item.partition("="))
        if not eq or not _NAME.fullmatch(name) or not _MODULE.fullmatch(module):
            raise FamiliesError(f"{EXTRA}: {item!r} is not name=module (for example toy=mypackage.toy_family)")
        if name in added:
            raise FamiliesError(f"{EXTRA}: the family {name!r} is named twice")
        added.add(name)
        out[name] = module
    return MappingProxyType(out)


_DECLARED: set[str] = set()  # the family modules whose archs are declared (declare_archs)


def get(name):
    reg = registry_of(os.environ.get(EXTRA, ""))
    try:
        module = reg[str(name)]
    except KeyError:
        raise ValueError(f"unknown instruction family {name!r}; one of {', '.join(reg)}") from None
    fam = importlib.import_module(module).FAMILY
    if module not in _DECLARED:
        declare_archs(fam)
        _DECLARED.add(module)
    return fam


def declare_archs(fam) -> None:
    """The archs a family declares (its optional `arch_compute_capabilities`: arch -> the compute capabilities that
    run it, for an arch whose name is not NVIDIA's spelling) made known to harness.enums.runs_on; a family on
    NVIDIA's archs declares none."""
    for arch, ccs in getattr(fam, "arch_compute_capabilities", {}).items():
        declare_arch(arch, ccs)


def check_extra() -> None:
    """The command line's check of TC_HARNESS_FAMILIES, before anything runs: every family it adds is name=module,
    and its module imports and has a FAMILY. FamiliesError, one line, if not (what the import raised, named)."""
    extra = os.environ.get(EXTRA, "")
    for name, module in registry_of(extra).items():
        if REGISTRY.get(name) == module:
            continue
        try:
            found = importlib.import_module(module)
        except Exception as e:  # noqa: BLE001 (whatever the module raises, named in one line)
            first = str(e).splitlines()[0] if str(e) else ""
            raise FamiliesError(f"{EXTRA}: family {name!r}: module {module} does not import "
                                f"({type(e).__name__}: {first})") from None
        if not hasattr(found, "FAMILY"):
            raise FamiliesError(f"{EXTRA}: family {name!r}: module {module} has no FAMILY")


def all_families():
    return [get(n) for n in registry()]
