"""The command line run in the test's own process: harness.cli.main (what `python -m harness` runs) with its output
captured, answered as subprocess.run answers. Starting a process costs ~0.45 CPU s (Python, numpy, the harness):
~60 of a CI run's commands were processes for that alone. tests/test_readme.py and tests/test_packaging.py still
run the documented commands as processes, and the installed command."""
import contextlib
import io
import subprocess

from harness import cli


def run(*args) -> subprocess.CompletedProcess:
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return subprocess.CompletedProcess(["python", "-m", "harness", *argv], int(code), out.getvalue(), err.getvalue())
