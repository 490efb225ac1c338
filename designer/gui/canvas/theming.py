"""View > Theme: follow the system's light/dark scheme, or force light or dark.

The choice is remembered (``QSettings`` key ``view/theme``) and applied to the scene with
`FabricScene.set_theme_mode` (the canvas, the overview and, through the scene's
``theme_changed``, the analysis plots) and to the rest of the application with
`apply_app_theme`: a forced theme puts every widget (docks, menus, forms, dialogs) in
Qt's Fusion style with a palette of the canvas theme's colours, since most Linux
platform themes ignore a requested colour scheme; "System" gives the platform's own
style and palette back.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtGui import QAction, QActionGroup, QColor, QPalette
from PySide6.QtWidgets import QApplication, QMenu, QStyleFactory, QWidget

from designer.gui.canvas.scene import FabricScene
from designer.gui.canvas.style import DARK, LIGHT, THEME_MODES, Theme

SETTINGS_KEY = "view/theme"
_LABELS = {"system": "&System", "light": "&Light", "dark": "&Dark"}

#: The platform's style name and palette, kept the first time a theme is forced so that
#: "System" can give them back.
_platform_look: tuple[str, QPalette] | None = None


def app_palette(theme: Theme) -> QPalette:
    """A widget palette in ``theme``'s colours: panels a shade off the canvas background,
    fields the canvas background itself, the selection colour for highlights.

    >>> app_palette(DARK).color(QPalette.ColorRole.Base).name()
    '#1c1d1f'
    """
    R, G = QPalette.ColorRole, QPalette.ColorGroup
    panel = QColor(theme.node_fill if theme.dark else "#EFEFEF")
    field = QColor(theme.background if theme.dark else "#FFFFFF")
    text, muted = QColor(theme.text), QColor(theme.muted_text)
    p = QPalette(panel)  # derives light, mid, dark and shadow from the panel colour
    for role, color in (
        (R.Window, panel),
        (R.Button, panel),
        (R.Base, field),
        (R.AlternateBase, QColor(theme.badge_fill if theme.dark else "#F5F5F5")),
        (R.WindowText, text),
        (R.Text, text),
        (R.ButtonText, text),
        (R.BrightText, text),
        (R.ToolTipBase, panel),
        (R.ToolTipText, text),
        (R.PlaceholderText, muted),
        (R.Highlight, QColor(theme.selection)),
        (R.HighlightedText, QColor("#000000" if theme.dark else "#FFFFFF")),
        (R.Link, QColor(theme.selection)),
        (R.LinkVisited, QColor(theme.selection)),
    ):
        p.setColor(role, color)
    for role in (R.WindowText, R.Text, R.ButtonText):
        p.setColor(G.Disabled, role, muted.darker(130) if theme.dark else muted.lighter(150))
    return p


def apply_app_theme(mode: str) -> None:
    """Give the whole application the look of ``mode``: ``"dark"`` or ``"light"`` force
    Fusion and `app_palette`; ``"system"`` restores the platform's style and palette."""
    global _platform_look
    app = QApplication.instance()
    if app is None:
        return
    if mode == "system":
        if _platform_look is not None:
            name, palette = _platform_look
            app.setStyle(name)
            app.setPalette(palette)
        return
    if _platform_look is None:
        _platform_look = (app.style().name(), QPalette(app.palette()))
    if app.style().name().lower() != "fusion":
        app.setStyle(QStyleFactory.create("Fusion"))
    app.setPalette(app_palette(DARK if mode == "dark" else LIGHT))


class ThemeMenu(QMenu):
    """A submenu of three exclusive choices driving ``scene``'s theme and the
    application's."""

    def __init__(self, scene: FabricScene, parent: QWidget | None = None):
        super().__init__("&Theme", parent)
        self.setObjectName("theme_menu")
        self.scene = scene
        self.group = QActionGroup(self)
        self.group.setExclusive(True)
        self.actions_by_mode: dict[str, QAction] = {}
        for mode in THEME_MODES:
            action = self.addAction(_LABELS[mode])
            action.setCheckable(True)
            action.setData(mode)
            action.setObjectName(f"theme_{mode}")
            self.group.addAction(action)
            self.actions_by_mode[mode] = action
        saved = str(QSettings().value(SETTINGS_KEY, "system"))
        self.choose(saved if saved in THEME_MODES else "system", remember=False)
        self.group.triggered.connect(self._on_group_triggered)

    def choose(self, mode: str, remember: bool = True) -> None:
        """Switch to ``mode`` (``"system"``, ``"light"`` or ``"dark"``)."""
        self.actions_by_mode[mode].setChecked(True)
        if mode != self.scene.theme_mode or mode != "system":
            self.scene.set_theme_mode(mode)
        apply_app_theme(mode)
        if remember:
            QSettings().setValue(SETTINGS_KEY, mode)

    def _on_group_triggered(self, action: QAction) -> None:
        self.choose(str(action.data()))
