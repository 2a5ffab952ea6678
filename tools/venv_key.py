"""The key a kept venv is made for: what of pyproject.toml decides what pip installs into it.

The [build-system] and [project] tables (dependencies, extras, requires-python, entry points), comments and blank
lines left out: a comment or a pytest setting edited in pyproject.toml keeps the venvs (a rebuilt one costs minutes
of downloads and installs on the CI machine), a changed dependency makes new ones. Used by .ci/run and
tests/test_environments.py.
    python tools/venv_key.py [PYPROJECT]     # prints the key's first 16 hex digits
"""
from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def install_relevant(text: str) -> str:
    """The lines of the [build-system] and [project...] tables, without comments and blank lines."""
    out, keep = [], False
    for raw in text.splitlines():
        line = re.sub(r"\s+#.*$|^\s*#.*$", "", raw).rstrip()  # dependency strings hold no '#'
        header = re.fullmatch(r"\s*\[+([^\]]+)\]+\s*", line)
        if header:
            name = header.group(1).strip()
            keep = name == "build-system" or name == "project" or name.startswith("project.")
        if keep and line.strip():
            out.append(line.strip())
    return "\n".join(out)


def key(path: Path = ROOT / "pyproject.toml", extra: str = "") -> str:
    return hashlib.sha256((install_relevant(Path(path).read_text()) + "\0" + extra).encode()).hexdigest()[:16]


if __name__ == "__main__":
    print(key(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "pyproject.toml"))
