"""A generated block inside a hand-written file (docs/performance.md's history, results/README.md's baselines): the
lines from a BEGIN marker to END are the generator's, the rest the file's own. Used by tools/bench_history.py and
tools/results_readme.py, whose `--update FILE` rewrites the block and `--check FILE` exits 1 where it has drifted."""
from __future__ import annotations

import sys
from pathlib import Path

END = "<!-- END generated -->"


def update(text: str, block: str, begin: str) -> str:
    """`text` with its block (from the line starting `begin` to END) replaced by `block`, or `block` appended."""
    start = text.find(begin)
    if start >= 0 and END in text[start:]:
        return text[:start] + block + text[text.index(END, start) + len(END):]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def write_or_check(block: str, begin: str, update_path: str | None, check_path: str | None, remake: str) -> int:
    """The generators' command line: rewrite `update_path`'s block, or exit 1 where `check_path`'s has drifted
    (saying the command that remakes it), or print the block."""
    if update_path:
        path = Path(update_path)
        path.write_text(update(path.read_text() if path.exists() else "", block, begin))
    elif check_path:
        text = Path(check_path).read_text()
        if update(text, block, begin) != text:
            print(f"{check_path}: the generated block has drifted: {remake}", file=sys.stderr)
            return 1
    else:
        print(block)
    return 0
