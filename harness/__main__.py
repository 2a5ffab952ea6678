import os
import signal


def _starting(signum, frame):  # a signal before the command line's own handlers (cli.entry): nothing started yet
    os.write(2, f"harness: interrupted ({signal.Signals(signum).name}) while starting; exit {128 + signum}\n".encode())
    os._exit(128 + signum)


for _sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(_sig, _starting)

from harness.cli import entry  # noqa: E402

entry()
