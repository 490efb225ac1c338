"""The error dialog shows every line of its text, also when a count of further errors
appears while it is open (it grows instead of squeezing its paragraphs)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QLabel

from designer.gui.crash import CrashDialog, CrashReport


def _report() -> CrashReport:
    return CrashReport(
        summary="DesignError: no node 'leaf-r0-0'",
        details="Traceback (most recent call last):\n  ...\nDesignError\n",
        design_note="Your design has no unsaved changes, so nothing is lost.",
        recovery=None,
        log_file=Path("/home/someone/.local/state/fabric-designer/log/fabric-designer.log"),
    )


def _clipped(dialog: CrashDialog) -> list[str]:
    """Paragraphs shown shorter than their text needs at their width."""
    return [
        label.text()
        for label in dialog.findChildren(QLabel)
        if label.isVisible()
        and label.wordWrap()
        and label.height() < label.heightForWidth(label.width())
    ]


def test_every_paragraph_is_shown_whole(qtbot):
    dialog = CrashDialog(_report())
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    assert _clipped(dialog) == []


def test_a_count_of_further_errors_does_not_clip_the_text(qtbot):
    dialog = CrashDialog(_report())
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.set_more_errors(3)
    qtbot.wait(20)
    assert dialog.more.isVisible()
    assert _clipped(dialog) == []
