"""A warm sweep's compile in one file read: which module each kernel of a plan is, once every one of them compiled
and passed its SASS check.

Without it a warm sweep still wrote every kernel's source, hashed it to find its cubin in the cache, made every
kernel's SASS rules and read every verdict (about 1.1 s of an H100 node's warm sweep, on the path to the first
launch, `benchmarks/sweep_timeline.py`). The index is keyed by everything those steps read: the package's own files
(`plan.source_digest`: the kernel templates, the code that fills them in, the SASS rules and the checker), the
compile options, the toolchain (kind, NVRTC version and build), the disassembler that made the verdicts, and the
kernels themselves. Each entry keeps its cubin's identity (size, modification time, inode), as Python's own
bytecode cache does its source's: a cubin replaced or touched since is looked up the long way.

Only a plan whose kernels all compiled and showed what they test is indexed (a failure is found again, and
reported, by the long way), and only kernels of the package's own families (another family's sources are not in
the digest).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from harness import families
from harness.families.base import Kernel
from harness.run import compile as nvrtc
from harness.run.toolchain import Toolchain

FOLDER = "compile-index"


def index_path(kernels: list[Kernel], tc: Toolchain, checked: bool) -> Path | None:
    """Where the index of these kernels built by `tc` (and SASS-checked, if `checked`) lives; None when they
    cannot be indexed (a family from outside the package)."""
    from harness import plan  # here: plan imports the families, which import harness.run
    from harness.run import sass
    registry = families.registry()
    if not kernels or any(not registry.get(str(k.family), "").startswith("harness.") for k in kernels):
        return None
    h = hashlib.sha256()
    for part in (plan.source_digest(), "\0".join(nvrtc.DEFAULT_OPTIONS), "\0".join(tc.cache_key()),
                 sass.disassembler_id() if checked else "not SASS-checked",
                 *(f"{k.family}/{k.arch}/{k.name}" for k in kernels)):
        h.update(part.encode() + b"\1")
    return nvrtc.cache_dir() / FOLDER / f"{h.hexdigest()[:32]}.json"


def identity(path: Path) -> list[int]:
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def load(kernels: list[Kernel], tc: Toolchain, checked: bool) -> dict[Kernel, nvrtc.Compiled] | None:
    """Every kernel's module, cached, when the index has them all and each cubin is the one indexed; else None."""
    path = index_path(kernels, tc, checked)
    if path is None:
        return None
    try:
        entries = json.loads(path.read_text())["kernels"]
        out = {}
        for k in kernels:
            cubin, ident = entries[f"{k.arch}/{k.name}"]
            if identity(Path(cubin)) != ident:
                return None
            out[k] = nvrtc.Compiled(k.name, str(k.arch), Path(cubin), True)
        return out
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent, damaged, or a cubin gone: the long way


def save(kernels: list[Kernel], tc: Toolchain, checked: bool, compiled: dict[Kernel, nvrtc.Compiled]) -> None:
    """Index the kernels' modules, when every one compiled and passed its SASS check (else nothing is written)."""
    path = index_path(kernels, tc, checked)
    if path is None or any(compiled[k].error is not None or compiled[k].cubin_path is None for k in kernels):
        return
    try:
        entries = {f"{k.arch}/{k.name}": [str(compiled[k].cubin_path), identity(compiled[k].cubin_path)]
                   for k in kernels}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        tmp.write_text(json.dumps({"kernels": entries}))
        tmp.replace(path)  # atomic: a concurrent sweep never reads half an index
    except OSError:
        pass  # a read-only cache, or a cubin gone meanwhile: the next sweep goes the long way
