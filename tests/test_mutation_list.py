"""The mutation run (tests/mutations/run.py) plants each bug by replacing a text that must occur exactly once in
exactly one file of harness/: a refactor that copies or rewrites that text leaves the plant unplantable (the run
then stops on it), so CI checks every mutation's text here, without running the mutations."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("mutation_run", ROOT / "tests" / "mutations" / "run.py")
_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_run)
MUTATIONS = [*_run.MUTATIONS, *getattr(_run, "TCGEN05_MUTATIONS", [])]
SOURCES = {p.relative_to(ROOT): p.read_text() for p in (ROOT / "harness").rglob("*.py")}


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_each_mutation_text_occurs_exactly_once(mutation):
    name, _, old = mutation[:3]
    where = {str(p): t.count(old) for p, t in SOURCES.items() if old in t}
    assert list(where.values()) == [1], f"{name}: its text occurs {where or 'nowhere'}"
