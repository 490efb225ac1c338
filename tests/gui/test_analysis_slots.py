"""The analysis parts listen through bound-method slots, which PySide drops with their
widget: a panel or status-bar part deleted while the runner and the document live on is
no longer called, and nothing raises (a lambda connected to the runner or the document
would outlive the widget it calls)."""

from __future__ import annotations

import shiboken6


def test_deleted_analysis_widgets_are_no_longer_called(window, qtbot, dialogs):
    analysis = window.analysis
    runner, document = analysis.runner, window.document
    runner.shutdown()  # no real solve meanwhile: the signals below are the test's own
    bar, button = window.analysis_busy
    for widget in (*analysis.panels, bar, button):
        shiboken6.delete(widget)
    generation = document.topology.generation
    with qtbot.captureExceptions() as raised:
        runner.started.emit(generation)
        runner.failed.emit(generation, "a failure after the panels went")
        runner.cancelled.emit(generation)
        document.path_changed.emit(document.path)
        document.topology_replaced.emit(document.topology)
    assert [str(e[1]) for e in raised] == []
    assert dialogs == []
