"""What every command group of the command line shares: the parser that answers bad input in one line, the typed
flag values, the checks of a file or folder a command will write, and printing."""
from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

PROG = "python -m harness"
DEFAULT_RESULTS_DIR = Path("results") / "scratch"  # under the current folder
DEFAULT_OUT = f"{DEFAULT_RESULTS_DIR}/ under the current folder"  # as the --out flags' help names it


class UsageError(Exception):
    """Bad input: the message is the one line printed, `<command>: <what is wrong>`; exit 2."""


def command_of(prog: str) -> str:
    """'python -m harness desc' -> 'desc'; the top-level parser -> 'harness'."""
    return prog[len(PROG):].strip() or "harness" if prog.startswith(PROG) else prog


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump, exit 2
        raise UsageError(f"{command_of(self.prog)}: {message}")


def integer(text: str) -> int:
    try:
        if len(text) > 64:
            raise ValueError
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not an integer") from None


def count(text: str) -> int:
    """A positive whole number (--jobs)."""
    v = integer(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is not a positive number")
    return v


def seconds(text: str) -> float:
    """A positive, finite number of seconds (--timeout)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number of seconds") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"{text[:40]} is not a positive, finite number of seconds")
    return v


def show(obj, as_json: bool, text: str):
    print(json.dumps(obj, indent=2) if as_json else text)


def one_line(msg: str, limit: int = 400) -> str:
    """A message as one printable line: control characters (a newline typed into an argument) escaped."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in msg)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def out_file(cmd: str, flag: str, text: str | None) -> Path | None:
    """An output file the command will write: refuse '', a folder, or a place it cannot write, before any work.
    A missing parent folder is created when the file is written."""
    if text is None:
        return None
    if not text.strip():
        raise UsageError(f"{cmd}: {flag} '': give a file name")
    p = Path(text)
    if p.is_dir() or text.endswith(os.sep):
        raise UsageError(f"{cmd}: {flag} {text}: is a folder; give a file name in it")
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"{cmd}: {flag} {text}: not writable")
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"{cmd}: {flag} {text}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{cmd}: {flag} {text}: cannot write in {parent}")
    return p


def results_out(cmd: str, flag: str, text: str | None) -> Path | None:
    """A results file the command writes (and `--resume` appends to): plain JSON Lines. A .gz name is refused,
    since the writer would put plain text under it (and resume would cut compressed bytes); gzip a finished run."""
    p = out_file(cmd, flag, text)
    if p is not None and p.name.endswith(".gz"):
        raise UsageError(f"{cmd}: {flag} {text}: results are written as plain JSON Lines; "
                         f"write {p.name[:-3]} and gzip it when the run is finished")
    return p


def given(a, defaults: dict) -> list[str]:
    """The flags among `defaults` (dest -> default) given on the command line (their value is not None)."""
    return [f"--{k.replace('_', '-')}" for k in defaults if getattr(a, k) is not None]


def fill(a, defaults: dict) -> None:
    for k, v in defaults.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
