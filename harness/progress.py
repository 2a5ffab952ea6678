"""Sweep progress on stderr: on a terminal a bar redrawn in place (\\r) with cases done of total, the ones not
passing, the rate and an ETA; elsewhere (a log file, CI) the plain lines the sweep always printed, one per kernel.
No dependency: the bar is a few lines of its own (rich/tqdm are not required).
"""
from __future__ import annotations

import re
import sys
import time

_KERNEL_LINE = re.compile(r"^\[\d+/\d+\] ")  # the engine's per-kernel line: the bar stands for it on a terminal


def is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _eta(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """log(msg) for every message of the sweep; start(total) once the number of case records is known;
    update(records) as records arrive; close() at the end. bar=None: a bar when `stream` is a TTY."""

    def __init__(self, stream=None, bar: bool | None = None, width: int = 30, min_interval: float = 0.1,
                 clock=time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        self.bar = is_tty(self.stream) if bar is None else bar
        self.width, self.min_interval, self.clock = width, min_interval, clock
        self.total = self.done = self.bad = 0
        self.t0 = self._last = None
        self._shown = False

    def start(self, total: int) -> None:
        self.total, self.t0 = total, self.clock()

    def update(self, statuses) -> None:
        """Count cases done, by their records' statuses."""
        for status in statuses:
            self.done += 1
            self.bad += status != "pass" and status != "not-run"
        if self.bar:
            now = self.clock()
            if self._last is None or now - self._last >= self.min_interval or self.done >= self.total:
                self._last = now
                self._draw()

    def line(self) -> str:
        total = max(self.total, self.done)
        frac = self.done / total if total else 1.0
        fill = int(round(frac * self.width))
        elapsed = self.clock() - self.t0 if self.t0 is not None else 0.0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = _eta((total - self.done) / rate) if rate > 0 and self.done < total else ("0:00" if self.done >= total
                                                                                         else "?")
        return (f"[{'#' * fill}{'.' * (self.width - fill)}] {self.done}/{total} cases {frac:4.0%} "
                f"{self.bad} not passing  {rate:,.0f}/s  ETA {eta}")

    def _draw(self) -> None:
        self.stream.write("\r\x1b[K" + self.line())
        self.stream.flush()
        self._shown = True

    def log(self, msg: str) -> None:
        if self.bar and _KERNEL_LINE.match(msg):
            return  # the bar says it
        if self.bar and self._shown:
            self.stream.write("\r\x1b[K")
        self.stream.write(msg + "\n")
        if self.bar and self._shown:
            self.stream.write(self.line())
        self.stream.flush()

    def close(self) -> None:
        if self.bar and self.total:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False
