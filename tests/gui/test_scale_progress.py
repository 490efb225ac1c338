"""Progress bars with a percentage for the GUI's long operations (issue 34): opening a
big design (the canvas being drawn) and the live solve in the status bar."""

from __future__ import annotations

import re

from designer.gui.open_progress import OpenProgress
from designer.model.templates import build_template
from tests.gui.test_live import solved


def test_the_solve_shows_its_percentage_in_the_status_bar(window, qtbot):
    runner = window.analysis.runner
    bar, _button = window.analysis_busy
    seen: list[tuple[int, str, bool]] = []
    runner.percent.connect(lambda p: seen.append((p, bar.text(), bar.isVisible())))
    runner.schedule()
    solved(qtbot, window)
    assert seen, "no percentage while solving"
    values = [p for p, _, _ in seen]
    assert values == sorted(values) and values[0] > 0 and values[-1] < 100
    assert all(re.fullmatch(rf"Solving {p}%", text) for p, text, _ in seen), seen
    assert all(visible for _, _, visible in seen)
    qtbot.waitUntil(lambda: not bar.isVisible())  # gone with the result


def test_opening_a_big_design_shows_the_drawing_percentage(window, qtbot):
    scene = window.scene
    scene.open_collapsed_above = 1000
    topo = build_template("superpod", sus=4)
    dialog = OpenProgress(window, "superpod")
    qtbot.addWidget(dialog)
    texts: list[str] = []

    def replace():
        scene.build_progress.connect(lambda *_: texts.append(dialog._bar.text()))
        window.document.replace(topo)

    dialog.draw(scene, replace)
    assert scene.collapsed  # drawn as a big design
    assert texts and all(re.fullmatch(r"\d+%", t) for t in texts), texts
    assert int(texts[-1][:-1]) >= 50  # the drawing half of the bar
    dialog.close()
