"""File > Export of a big design shows a progress dialog with a percentage and Cancel,
keeps the window live while the diagram is painted, and a cancelled export writes
nothing (issue 34)."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

import designer.gui.export as export_module
import designer.gui.export_dialog as export_dialog_module
import designer.gui.export_progress as export_progress_module
from designer.gui.export_dialog import export_dialog
from designer.gui.export_progress import ExportProgress
from designer.model.templates import build_template


@pytest.fixture
def big(window, monkeypatch):
    """The window with a design above the dialog's threshold (lowered to this design's
    size: the dialog's behaviour, not the threshold, is under test) painted in many
    bands."""
    window.document.replace(build_template("superpod", sus=1))
    window.scene.refresh()
    monkeypatch.setattr(export_progress_module, "MIN_LINKS", window.document.topology.link_count())
    monkeypatch.setattr(export_module, "STRIP_PX", 64)
    monkeypatch.setattr(
        export_dialog_module, "ask_sheet", lambda *a, **k: export_dialog_module.Sheet()
    )
    monkeypatch.setattr(export_dialog_module, "_ask_png_scale", lambda *a, **k: 1.0)
    return window


def _target(monkeypatch, path, selected_filter):
    monkeypatch.setattr(
        export_dialog_module,
        "ask_export_target",
        staticmethod(lambda *a, **k: (str(path), selected_filter)),
    )


def _watch(window, on_show):
    """Call ``on_show(dialog)`` each time the event loop runs while an export dialog
    is shown; the dialogs seen."""
    seen = []

    def poll():
        for dialog in window.findChildren(ExportProgress):
            if dialog.isVisible():
                if dialog not in seen:
                    seen.append(dialog)
                on_show(dialog)

    timer = QTimer(window)
    timer.timeout.connect(poll)
    timer.start(0)
    return seen, timer


def test_a_big_png_export_shows_its_percentage_and_writes_the_file(big, monkeypatch, tmp_path):
    path = tmp_path / "pod.png"
    _target(monkeypatch, path, "PNG image (*.png)")
    texts: list[str] = []
    seen, timer = _watch(big, lambda d: texts.append(d._bar.text()))
    try:
        assert export_dialog(big, big.scene, big.document) == path
    finally:
        timer.stop()
    assert seen, "no progress dialog"
    percents = [int(t[:-1]) for t in texts if re.fullmatch(r"\d+%", t)]
    assert len(set(percents)) >= 3, texts  # it moved while the window was live
    assert percents == sorted(percents)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not seen[0].isVisible()


@pytest.mark.parametrize(
    "name, selected_filter",
    [
        ("pod.png", "PNG image (*.png)"),
        ("pod.svg", "SVG image (*.svg)"),
        ("pod.graphml", "GraphML (*.graphml)"),
    ],
)
def test_a_cancelled_export_writes_nothing(big, monkeypatch, tmp_path, name, selected_filter):
    (tmp_path / "keep.txt").write_text("x")
    path = tmp_path / name
    _target(monkeypatch, path, selected_filter)
    seen, timer = _watch(big, lambda d: d._buttons.button(d._buttons.StandardButton.Cancel).click())
    try:
        assert export_dialog(big, big.scene, big.document) is None
    finally:
        timer.stop()
    assert seen, "no progress dialog"
    QApplication.processEvents()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    assert big.scene.show_grid == big.scene.show_grid  # scene usable again
    assert big.scene.theme is not export_module.PRINT_THEME


def test_an_export_places_badges_as_the_canvas_does_without_a_scene_query_each(big, monkeypatch):
    """Every badge of an export is placed against the nodes' boxes (a scene query per
    badge took seconds on a 16k design), at the spot the canvas's own query picks."""
    from designer.gui.canvas.items import _LineItem

    scene = big.scene
    lines = [i for i in scene.items() if isinstance(i, _LineItem) and i.count > 1]
    assert len(lines) > 10
    queries = []
    real_items = type(scene).items

    def counting(self, *args, **kwargs):
        if args:
            queries.append(args)
        return real_items(self, *args, **kwargs)

    monkeypatch.setattr(type(scene), "items", counting)
    export_module.svg_bytes(scene)
    assert len(queries) < 10, len(queries)
    exported = {id(i): i._badge_at for i in lines if i._badge_at is not None}
    assert exported
    monkeypatch.setattr(type(scene), "items", real_items)
    for line in lines:
        line._badge_at = None
    on_canvas = {id(i): i._badge_center() for i in lines if id(i) in exported}
    assert on_canvas == exported
