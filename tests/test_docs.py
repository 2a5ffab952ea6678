"""The generated parts of the documentation are what their sources say (issue 55).

- docs/performance.md's benchmark history is `tools/bench_history.py`'s table of the run folders at the commit it names
  (those folders left the tree; git keeps them: a clone without that commit, a shallow one, skips);
- results/README.md's baselines table is `tools/results_readme.py`'s, from the committed results files;
- no comment cites a run folder; results/ holds no script and stays under 20 MB.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import bench_history  # noqa: E402
import results_readme  # noqa: E402


def test_the_benchmark_history_is_the_run_folders_table():
    text = (ROOT / "docs" / "performance.md").read_text()
    m = re.search(r"python tools/bench_history\.py --rev (\w+) --update docs/performance\.md", text)
    assert m, "docs/performance.md has no generated benchmark history (python tools/bench_history.py --rev REV --update)"
    rev = m.group(1)
    if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}^{{commit}}"], capture_output=True).returncode:
        pytest.skip(f"commit {rev}, which holds the run folders, is not in this clone")
    assert bench_history.update(text, bench_history.render(rev)) == text, \
        f"docs/performance.md's history has drifted: python tools/bench_history.py --rev {rev} --update docs/performance.md"


def test_the_results_readme_tables_the_committed_baselines():
    readme = ROOT / "results" / "README.md"
    text = readme.read_text()
    assert results_readme.BEGIN in text, "results/README.md has no baselines table: python tools/results_readme.py"
    assert results_readme.update(text, results_readme.render(ROOT / "results")) == text, \
        "results/README.md's baselines table has drifted: python tools/results_readme.py --update results/README.md"


RUN_FOLDER = re.compile(r"results/\d{4}-\d\d-\d\d-")
SOURCES = ("harness", "tests", "benchmarks", "tools")


def comments_of(path: Path):
    """(line, text) of every comment and every string standing alone as a statement (docstrings) of a Python file;
    of every `#` line of any other file."""
    text = path.read_text()
    if path.suffix != ".py":
        yield from ((n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.lstrip().startswith("#"))
        return
    import ast
    import io
    import tokenize
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            yield node.lineno, node.value.value


def test_no_comment_cites_a_run_folder():
    """A comment says its reason itself, with the number and where it is recorded (docs/performance.md), not a run
    folder's path (issue 55). Code may read a committed results file; only comments and docstrings are looked at."""
    files = [p for d in SOURCES for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".sh", ".toml") and p.is_file()]
    files += [ROOT / "conftest.py", ROOT / "pyproject.toml"]
    citing = [f"{p.relative_to(ROOT)}:{n}" for p in files for n, text in comments_of(p) if RUN_FOLDER.search(text)]
    assert citing == []


def test_results_holds_what_users_need_and_no_more_than_20_mb():
    """Baselines, FINDINGS and this week's runs: no scripts (they belong in benchmarks/ or tools/), under 20 MB."""
    results = ROOT / "results"
    files = [p for p in results.rglob("*") if p.is_file() and "scratch" not in p.relative_to(results).parts]
    assert [str(p.relative_to(ROOT)) for p in files if p.suffix in (".py", ".sh", ".patch")] == []
    assert sum(p.stat().st_size for p in files) < 20 << 20
