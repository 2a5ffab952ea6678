"""The generated parts of the documentation are what their sources say (issue 55).

- docs/performance.md's benchmark history is `tools/bench_history.py`'s table of the run folders at the commit it names
  (those folders left the tree; git keeps them: a clone without that commit, a shallow one, skips).
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import bench_history  # noqa: E402


def test_the_benchmark_history_is_the_run_folders_table():
    text = (ROOT / "docs" / "performance.md").read_text()
    m = re.search(r"python tools/bench_history\.py --rev (\w+) --update docs/performance\.md", text)
    assert m, "docs/performance.md has no generated benchmark history (python tools/bench_history.py --rev REV --update)"
    rev = m.group(1)
    if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}^{{commit}}"], capture_output=True).returncode:
        pytest.skip(f"commit {rev}, which holds the run folders, is not in this clone")
    assert bench_history.update(text, bench_history.render(rev)) == text, \
        f"docs/performance.md's history has drifted: python tools/bench_history.py --rev {rev} --update docs/performance.md"
