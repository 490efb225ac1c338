"""A percentage on stderr while a long command works (opening, summarising, saving).

Shown only when stderr is a terminal and once the command has run for `DELAY` seconds,
so that quick commands and scripts piping stderr see nothing; redrawn in place at most
every `INTERVAL` seconds, and wiped when the work is done.

Example
-------
>>> import io
>>> progress = TerminalProgress("open big.fabric.json", stream=io.StringIO())
>>> progress("reading", 1, 2)   # not a terminal: nothing shown
>>> progress.close()
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["DELAY", "INTERVAL", "TerminalProgress"]

#: Seconds a command runs before its progress shows.
DELAY = 1.0
#: Seconds between two redraws.
INTERVAL = 0.1


class TerminalProgress:
    """``progress(stage, done, total)`` callback that draws ``label: stage 42%``.

    Parameters
    ----------
    label : str
        What the command does (``open design.fabric.json``).
    stream : text stream, optional
        Where to draw; stderr by default.  Nothing is drawn unless it is a terminal.
    clock : callable, optional
        Seconds, for the delay and the redraw interval (``time.monotonic``).
    """

    def __init__(
        self,
        label: str,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.clock = clock
        self.start = clock()
        self._drawn_at: float | None = None
        isatty = getattr(self.stream, "isatty", None)
        self.active = bool(isatty and isatty())

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.active:
            return
        now = self.clock()
        if now - self.start < DELAY:
            return
        if self._drawn_at is not None and now - self._drawn_at < INTERVAL and done < total:
            return
        percent = 100 * done // total if total > 0 else 100
        self.stream.write(f"\r{self.label}: {stage} {min(percent, 100):3d}%\x1b[K")
        self.stream.flush()
        self._drawn_at = now

    def close(self) -> None:
        """Wipe the line drawn, if any."""
        if self._drawn_at is not None:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn_at = None

    def __enter__(self) -> TerminalProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
