"""The mutation runs' planting (tests/mutations/planting.py): a plant is undone with no bytecode of it left behind,
so a planted bug can never outlive its own test run (Python trusts cached bytecode whose source has the same size
and the same whole-second modification time)."""
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "mutations"))
import planting  # noqa: E402


def test_a_plant_is_undone_and_leaves_no_bytecode(tmp_path):
    f = tmp_path / "planted_module.py"
    f.write_text("X = 17\n")
    py_compile.compile(str(f))  # the unplanted module's bytecode, as a test session writes it
    cached = lambda: list((tmp_path / "__pycache__").glob("planted_module.*.pyc"))  # noqa: E731
    assert cached()
    with planting.planted(f, "17", "18"):
        assert f.read_text() == "X = 18\n" and not cached()
        py_compile.compile(str(f))  # a run under the plant that wrote bytecode anyway
    assert f.read_text() == "X = 17\n" and not cached()
    out = subprocess.run([sys.executable, "-c", "import planted_module; print(planted_module.X)"], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "17"


def test_the_runs_under_a_plant_write_no_bytecode_and_a_missing_text_is_refused(tmp_path):
    assert planting.ENV["PYTHONDONTWRITEBYTECODE"] == "1" and planting.ENV["TC_HARNESS_TEST_BYTECODE"] == "0"
    f = tmp_path / "m.py"
    f.write_text("X = 17\n")
    with pytest.raises(ValueError, match="once"):
        with planting.planted(f, "19", "18"):
            pass
    assert f.read_text() == "X = 17\n"
