"""View > Theme: follow the system's light/dark scheme, or force light or dark.

The choice is remembered (``QSettings`` key ``view/theme``) and applied to the scene with
`FabricScene.set_theme_mode`; in "System" the scene follows ``colorSchemeChanged``.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu, QWidget

from designer.gui.canvas.scene import FabricScene
from designer.gui.canvas.style import THEME_MODES

SETTINGS_KEY = "view/theme"
_LABELS = {"system": "&System", "light": "&Light", "dark": "&Dark"}


class ThemeMenu(QMenu):
    """A submenu of three exclusive choices driving ``scene``'s theme."""

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
        if remember:
            QSettings().setValue(SETTINGS_KEY, mode)

    def _on_group_triggered(self, action: QAction) -> None:
        self.choose(str(action.data()))
