"""One bug planted in a source file for the length of one test run (tests/mutations/run.py and
tests/oracles/plant_layout_bugs.py).

Python checks cached bytecode against its source's size and its modification time in whole seconds. A plant of the
same length, restored within the second its bytecode was written, would leave that bytecode standing for the
restored file, and every later run would execute the planted code. So the runs that test a plant write no bytecode
(`ENV`: the test session otherwise writes it, conftest.py), and the file's cached bytecode is removed before the
plant and after the restore.
"""
import os
from contextlib import contextmanager
from pathlib import Path

ENV = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", TC_HARNESS_TEST_BYTECODE="0")


def forget_bytecode(path: Path) -> None:
    for cached in (Path(path).parent / "__pycache__").glob(f"{Path(path).stem}.*.pyc"):
        cached.unlink(missing_ok=True)


@contextmanager
def planted(path: Path, old: str, new: str):
    """`path` with its one `old` replaced by `new` inside the block, as it was after it."""
    path = Path(path)
    src = path.read_text()
    if src.count(old) != 1:
        raise ValueError(f"{path}: the text to plant over must occur once, found {src.count(old)} times: {old!r}")
    forget_bytecode(path)
    path.write_text(src.replace(old, new))
    try:
        yield
    finally:
        path.write_text(src)
        forget_bytecode(path)
