"""python -m harness {sweep, compile, toolchains, compare, merge, junit, probe, desc, idesc, zmask, layout}

Exit status (harness.enums.ExitCode): 0 all passed / nothing regressed; 1 a case failed, faulted, timed out or
did not compile, compare found a regression, merge a disagreement, or a decoded descriptor breaks a rule;
2 bad argument, file or path (one line on stderr, nothing written, before anything is compiled or launched);
3 nothing could run (no GPU of the arch: every case recorded as not run); 4 a GPU is there but CUDA is unusable.
"""
# The docstring above is --help's text. This package is the command line, one module per command group, each holding
# its commands (cmd_<name>(args) -> exit status) and their parsers (PARSERS): sweep (sweep, compile), results (merge,
# compare, junit, report, bundle, verdict, textfile), spec (desc, idesc, zmask, layout), probe, timing (bench),
# environment (doctor, toolchains); common.py is what they share. This module builds the one parser and runs a command
# (main; entry for the command line's own process). It is the package's top layer: nothing in harness/ imports it but
# __main__.py (tests/test_layers.py).
from __future__ import annotations

import argparse
import errno
import os
import sys
from functools import lru_cache

from harness import __version__, cache, registry
from harness.cli import environment, probe, results, spec, sweep, timing
from harness.cli.common import PROG, Parser, UsageError, one_line
from harness.enums import ExitCode
from harness.run import cores
from harness.spec import descriptors, layouts as L

STDOUT_LOST = 120  # what Python's own exit says when stdout cannot be flushed (docs/results-schema.md, exit codes)

# the commands, in the order --help lists them (the order they were added in, not grouped: the listing and the
# invalid-choice message stay as users know them); each group module adds its own (its PARSERS)
COMMANDS = ("sweep", "compile", "doctor", "toolchains", "merge", "probe", "compare", "junit", "bench", "bundle",
            "verdict", "textfile", "report", "desc", "idesc", "zmask", "layout")
GROUPS = (sweep, environment, results, probe, timing, spec)


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser, one for each set of families (TC_HARNESS_FAMILIES may add some: --family's choices).
    argparse takes ~10 ms to build it, and a test session runs main() ~1,000 times; a parser parses any number of
    argument lists without changing (each parse fills a fresh namespace)."""
    return parser_for(tuple(registry.registry()))


@lru_cache(maxsize=None)
def parser_for(family_names: tuple[str, ...]) -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"tensor-core-harness {__version__}")
    sub = p.add_subparsers(dest="cmd", parser_class=Parser)
    adders = {name: add for group in GROUPS for name, add in group.PARSERS.items()}
    for name in COMMANDS:
        adders[name](sub, family_names)
    return p


def _quiet_stdout() -> None:
    """After a closed pipe (`... --json | head`): point stdout at /dev/null so the exit flush says nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv=None, own_process: bool = False) -> int:
    """Run one command; returns its exit status (ExitCode) and never raises for bad input. own_process: the command
    line's process, which ends with the command (`entry`): a sweep may then fork its GPU worker from it and hold its
    plan out of the garbage collector's sight; a caller that goes on (a test, say) gets neither."""
    from harness.run import processes
    cmd = "harness"
    try:
        registry.check_extra()  # a malformed TC_HARNESS_FAMILIES: one line, before its names become --family choices
        parser = build_parser()
        try:
            args, extra = parser.parse_known_args(argv)
        except SystemExit as e:  # --help, --version
            return int(e.code or 0) if not isinstance(e.code, str) else ExitCode.USAGE
        cmd = args.cmd or cmd
        if extra:
            raise UsageError(f"{cmd}: unrecognized arguments: {' '.join(extra)}")
        if not getattr(args, "fn", None):
            raise UsageError("harness: give a command: sweep, compile, doctor, toolchains, compare, merge, junit, probe, desc, "
                             "idesc, zmask or layout")
        cores.default_workers()  # a malformed TC_HARNESS_WORKERS is refused before anything runs
        if cmd in CACHED_COMMANDS:  # an unusable TC_HARNESS_CACHE is refused before anything runs (cache.CACHE_ENV)
            note = cache.settle_cache()
            if note:
                print(one_line(note), file=sys.stderr)
            if own_process:  # before the command's helpers: an interrupted one ends in one line
                processes.quiet_resource_tracker()
        args.own_process = own_process
        return int(args.fn(args))
    except UsageError as e:
        print(one_line(str(e)), file=sys.stderr)
        return ExitCode.USAGE
    except cache.CacheError as e:
        print(one_line(f"{cmd}: {e}"), file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (processes.on_signals): the sweep has said so in its file
        processes.kill_children()  # none left behind, whatever the command had started
        code = e.exit_code if isinstance(e, processes.Interrupted) else 128 + 2
        what = str(e) or "SIGINT"
        print(one_line(f"{cmd}: interrupted ({what}); exit {code}"), file=sys.stderr)
        return code
    except (descriptors.DescriptorError, L.LayoutError, ValueError) as e:
        print(one_line(f"{cmd}: {e}"), file=sys.stderr)
        return ExitCode.USAGE
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly
        _quiet_stdout()
        return ExitCode.FAILED
    except OSError as e:  # what it printed could not be written (a full disk under `> file`): Python's own 120
        if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        _quiet_stdout()  # the exit's flush of what is still buffered would fail again
        print(one_line(f"{cmd}: cannot write its output: {e.strerror or e}"), file=sys.stderr)
        return STDOUT_LOST
    finally:
        cache.remove_temporary_cache()  # where HOME gave no cache folder (cache.settle_cache)


# the commands that compile, and so write the cache: an unusable cache folder is refused (or, where HOME gives none, a
# temporary one is used, with a note) before they start anything; the others never need one
CACHED_COMMANDS = ("sweep", "compile", "probe")


def entry() -> None:
    """The command line's process (`python -m harness`, `tc-harness`): main(), then out without tearing the
    interpreter down where nothing is left to finish. A sweep holds its plan (~56,000 cases) and every module it
    imported; freeing them took 0.6-0.7 s after main returned, on the CPU machine
    (the CPU note 2026-11-26 fast-exit.txt in docs/performance.md). Where a child process or another thread that is not
    a daemon is still alive (nothing the commands leave behind), the ordinary exit joins them."""
    import threading

    from harness.run import processes
    processes.one_shot_process()
    processes.on_signals()  # Ctrl-C and SIGTERM: children killed at once, exit 130 or 143 in one line, no traceback
    code = int(main(own_process=True))
    processes.stop_fork_server()
    if code in (128 + 2, 128 + 15):  # interrupted: a helper a thread was starting as it came goes too
        processes.kill_children()
    # children killed (GPU workers stopped, spares, every child of an interrupted run) are not waited for: the ordinary
    # exit would join each, and one that held a CUDA context ends only after the driver's teardown (about a second)
    if processes.unfinished_children() or any(not t.daemon and t is not threading.main_thread()
                                              for t in threading.enumerate()):
        sys.exit(code)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`| head`): nothing more to say to it
        pass
    except (OSError, ValueError) as e:  # what was printed is lost (a full disk): as Python's own exit says, 120
        print(one_line(f"harness: stdout: {e}"), file=sys.stderr)
        code = max(code, 120)
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)
