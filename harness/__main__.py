import signal

# Until the command line's own handlers are in place (cli.entry, processes.on_signals), Ctrl-C and SIGTERM end the
# process as they end any program, at once: killed by the signal (a shell's $? is 130 or 143), nothing started, nothing
# written. A handler of Python's own runs only between two of the main thread's bytecodes, and the imports before
# entry() spend up to a second or more inside single C calls: a Ctrl-C there took 1.3 s to act on.
signal.signal(signal.SIGINT, signal.SIG_DFL)

from harness.cli import entry  # noqa: E402

entry()
