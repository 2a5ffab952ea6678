"""A whole list of kernels compiled and SASS-checked, remembered, so that a warm sweep does not redo the check's
bookkeeping for every kernel.

A warm sweep found every cubin in the compile cache and every SASS verdict beside it, but to find them it generated
each kernel's source and hashed it (the cache key), built each kernel's SASS rules, and read and hashed every cubin
again (the verdict's key): 0.8 s of an H100 node's warm sweep, ahead of the first launch (bench12 in
docs/performance.md: the sweep's compile step 0.72-1.56 s).

When every kernel of a list compiled and its SASS had what its check wants, the list is recorded under

    <cache>/checked/<key>.json      key: the package's own files (cache.source_digest, which covers every in-tree
                                    family's sources and SASS rules, the kernel templates and the NVRTC options), the
                                    toolchain's cache key, the disassembler's identity, and every kernel's repr

with each cubin's path and file identity (device, inode, size, mtime and ctime in nanoseconds). A later list with the
same key whose every cubin still has the same identity is that same list of checked cubins: the cache keys are the
same (the same sources and options, the same compiler) and the files are the ones checked (a cubin rewritten,
replaced or linked anew has another ctime). Anything else (a family from outside the package, whose code the key
does not cover; a kernel that failed; a changed or missing file) goes the whole way: compile_many and verify_many.
The key is the package's files as they are on disk, as for the plan cache and the kept launches: code replaced in a
running process (a test's monkeypatched kernel source or SASS rule) is not in it, so such a test uses a compile cache
of its own (TC_HARNESS_CACHE), as those in tests/ do.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from harness.cache import source_digest, write_atomically

FOLDER = "checked"
# lists recorded (a sweep's; each GPU shard's of a test run, one per pytest-xdist worker; each selection's), a few
# kB to ~130 kB each (the default sweep's 823 kernels): past KEEP, the oldest are removed when one is recorded
KEEP = 64


def key(kernels, toolchain_key: tuple[str, ...], disassembler: str) -> str | None:
    """The list's key, or None where it cannot be trusted to say what was checked (a family from outside the
    package: its sources and rules are not in the package's digest)."""
    from harness import registry
    registry = registry.registry()
    if any(not registry.get(str(k.family), "").startswith("harness.") for k in kernels):
        return None
    h = hashlib.sha256()
    for part in (source_digest(), *toolchain_key, disassembler, *map(repr, kernels)):
        h.update(part.encode())
        h.update(b"\1")
    return h.hexdigest()[:32]


def identity(path: Path | str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def recorded(root: Path, list_key: str, count: int) -> list[Path] | None:
    """The cubins of the list recorded under `list_key` (in its order), if there is one of `count` kernels and every
    cubin still has the identity it had when it was checked; else None."""
    try:
        entries = json.loads((root / FOLDER / f"{list_key}.json").read_text())["cubins"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(entries, list) or len(entries) != count:
        return None
    paths = []
    for entry in entries:
        if not (isinstance(entry, dict) and entry.get("identity") is not None
                and identity(entry.get("path", "")) == entry["identity"]):
            return None
        paths.append(Path(entry["path"]))
    return paths


def record(root: Path, list_key: str, cubins: list[Path]) -> None:
    """Remember that these cubins (every kernel of the list, in order) compiled and passed their SASS check. Written
    atomically; a cache it cannot write to is left alone (the next sweep checks the whole way again)."""
    folder = root / FOLDER
    try:
        folder.mkdir(parents=True, exist_ok=True)
        entries = [{"path": str(p), "identity": identity(p)} for p in cubins]
        if any(e["identity"] is None for e in entries):
            return
        write_atomically(folder / f"{list_key}.json", json.dumps({"cubins": entries}))
        lists = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in lists[KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
