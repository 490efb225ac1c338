"""View > Theme > Dark darkens the whole application, not only the canvas: docks, menus,
form widgets (the application palette) and the analysis plots; Light and System put
them back."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QMenu

from designer.gui.canvas.style import DARK, LIGHT

ROLE = QPalette.ColorRole


def _dark(color) -> bool:
    return color.lightness() < 100


@pytest.fixture
def theme_menu(window):
    menu = window.view_menu.findChild(QMenu, "theme_menu")
    before = QApplication.palette()
    yield menu
    menu.choose("system")  # the palette is the process's: leave it as found
    assert QApplication.palette().color(ROLE.Window) == before.color(ROLE.Window)


def _widgets(window):
    analysis = window.analysis
    return [
        window.inspector,
        window.palette,
        analysis.scenario,
        window.menuBar(),
        window.statusBar(),
        analysis.scenario.collective,
        window.palette.tree,
    ]


def test_dark_darkens_docks_menus_and_plots(window, theme_menu, qtbot):
    theme_menu.choose("dark")
    QApplication.processEvents()
    assert _dark(QApplication.palette().color(ROLE.Window))
    for widget in _widgets(window):
        palette = widget.palette()
        assert _dark(palette.color(ROLE.Window)), widget.objectName()
        assert _dark(palette.color(ROLE.Base)), widget.objectName()
        assert not _dark(palette.color(ROLE.WindowText)), widget.objectName()
    for panel in window.analysis.panels:
        assert panel.theme is DARK, panel.objectName()
        assert _dark(panel.graphics.backgroundBrush().color()), panel.objectName()

    theme_menu.choose("light")
    QApplication.processEvents()
    for widget in _widgets(window):
        assert not _dark(widget.palette().color(ROLE.Window)), widget.objectName()
    for panel in window.analysis.panels:
        assert panel.theme is LIGHT, panel.objectName()
        assert not _dark(panel.graphics.backgroundBrush().color()), panel.objectName()


def test_the_utilisation_legend_follows_the_theme(window, theme_menu, qtbot):
    """The canvas legend's box is drawn in the palette's colours: dark under Dark (it
    stayed a white box on the dark canvas), light under Light."""
    legend = window.analysis.overlay.legend
    legend.resize(legend.size())  # fixed size; painted through grab() below

    def background():
        image = legend.grab().toImage()
        return image.pixelColor(image.width() - 8, 4)  # inside the box, beside the bar

    theme_menu.choose("dark")
    QApplication.processEvents()
    assert _dark(background())
    theme_menu.choose("light")
    QApplication.processEvents()
    assert not _dark(background())
