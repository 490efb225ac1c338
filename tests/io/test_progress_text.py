"""Progress on stderr for long commands (`designer.cli_progress`) and the progress that
saving and summarising a design report."""

from __future__ import annotations

import io

from designer.cli_progress import DELAY, TerminalProgress
from designer.io.fabric_json import save
from designer.model.report import info
from designer.model.templates import build_template


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_percentage_shows_after_the_delay_on_a_terminal_and_is_wiped():
    out, clock = Terminal(), Clock()
    with TerminalProgress("open big", stream=out, clock=clock) as progress:
        progress("building", 1, 4)
        assert out.getvalue() == ""  # quick so far: nothing
        clock.now = DELAY + 0.01
        progress("building", 2, 4)
        assert out.getvalue().endswith("open big: building  50%\x1b[K")
    assert out.getvalue().endswith("\r\x1b[K")


def test_nothing_shows_when_stderr_is_not_a_terminal():
    out, clock = io.StringIO(), Clock()
    clock.now = 10.0
    progress = TerminalProgress("open big", stream=out, clock=lambda: clock.now)
    clock.now = 20.0
    progress("building", 1, 2)
    progress.close()
    assert out.getvalue() == ""


def test_save_and_info_report_their_stages_up_to_done(tmp_path):
    t = build_template("superpod", sus=1)
    seen = []
    save(t, tmp_path / "d.fabric.json", progress=lambda *a: seen.append(a))
    assert seen[0] == ("encoding", 0, 2) and seen[-1][1:] == (2, 2)
    seen.clear()
    info(t, progress=lambda *a: seen.append(a))
    done = [d / total for _, d, total in seen]
    assert done == sorted(done) and done[0] == 0 and done[-1] == 1
