"""`User`: synthetic mouse, drop, menu and tooltip input on the main window's canvas, for
`tools/screenshots.py` (which drives the real application the way the user guide
describes).  Qt is imported inside the methods: the script sets its environment first."""

from __future__ import annotations


def settle(app) -> None:
    """Let the events that input or a repaint queued run."""
    for _ in range(3):
        app.processEvents()


class User:
    """Mouse, drop, menu and tooltip input on a main window's canvas, as tests send it:
    straight to ``view.viewport()`` (a real ``QDrag.exec()`` would block)."""

    def __init__(self, app, win):
        self.app, self.win, self.view = app, win, win.view

    def at(self, scene_xy):
        from PySide6.QtCore import QPointF

        return self.view.mapFromScene(QPointF(*scene_xy))

    def node_xy(self, node_id: str) -> tuple[float, float]:
        pos = self.win.scene.nodes[node_id].pos()
        return pos.x(), pos.y()

    def _mouse(self, kind, scene_xy, button, buttons, modifiers) -> None:
        from PySide6.QtCore import QPointF
        from PySide6.QtGui import QMouseEvent
        from PySide6.QtWidgets import QApplication

        vp = self.view.viewport()
        local = QPointF(self.at(scene_xy))
        QApplication.sendEvent(vp, QMouseEvent(kind, local, QPointF(vp.mapToGlobal(local)),
                                               button, buttons, modifiers))

    def drag(self, start, end, modifiers=None, steps: int = 6, release: bool = True) -> None:
        """Press at ``start`` (scene coordinates), move to ``end``, release there."""
        from PySide6.QtCore import QEvent, Qt

        mods = modifiers if modifiers is not None else Qt.KeyboardModifier.NoModifier
        left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
        self._mouse(QEvent.Type.MouseButtonPress, start, left, left, mods)
        for i in range(1, steps + 1):
            xy = (start[0] + (end[0] - start[0]) * i / steps,
                  start[1] + (end[1] - start[1]) * i / steps)
            self._mouse(QEvent.Type.MouseMove, xy, none, left, mods)
        if release:
            self._mouse(QEvent.Type.MouseButtonRelease, end, left, none, mods)
        settle(self.app)

    def release(self, scene_xy) -> None:
        from PySide6.QtCore import QEvent, Qt

        self._mouse(QEvent.Type.MouseButtonRelease, scene_xy, Qt.MouseButton.LeftButton,
                    Qt.MouseButton.NoButton, Qt.KeyboardModifier.ShiftModifier)
        settle(self.app)

    def shift_drag(self, a: str, b: str, release: bool = True) -> None:
        """Shift-drag from node ``a`` to node ``b``: draws a link."""
        from PySide6.QtCore import Qt

        self.drag(self.node_xy(a), self.node_xy(b), Qt.KeyboardModifier.ShiftModifier,
                  release=release)

    def drop(self, kind: str, model: str, scene_xy) -> None:
        """Drag a palette entry in, over and onto ``scene_xy``."""
        from PySide6.QtCore import QPointF, Qt
        from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
        from PySide6.QtWidgets import QApplication

        from designer.gui.canvas.interactions import component_mime

        mime = component_mime(kind, model)
        at = self.at(scene_xy)
        copy, left = Qt.DropAction.CopyAction, Qt.MouseButton.LeftButton
        mods = Qt.KeyboardModifier.NoModifier
        for cls, where in ((QDragEnterEvent, at), (QDragMoveEvent, at),
                           (QDropEvent, QPointF(at))):
            QApplication.sendEvent(self.view.viewport(), cls(where, copy, mime, left, mods))
        settle(self.app)

    def context_menu(self, scene_xy):
        """Right-click at ``scene_xy``: the canvas's context menu, as it pops up."""
        from PySide6.QtWidgets import QApplication, QMenu

        self.view.customContextMenuRequested.emit(self.at(scene_xy))
        settle(self.app)
        menus = [w for w in QApplication.topLevelWidgets()
                 if isinstance(w, QMenu) and w.isVisible()]
        if not menus:
            raise RuntimeError(f"no context menu at {scene_xy}")
        return menus[-1]

    def tooltip(self, scene_xy):
        """Hover at ``scene_xy`` until Qt asks for a tooltip; the tooltip widget shown."""
        from PySide6.QtCore import QEvent, QPoint
        from PySide6.QtGui import QHelpEvent
        from PySide6.QtWidgets import QApplication

        vp = self.view.viewport()
        local = self.at(scene_xy)
        QApplication.sendEvent(vp, QHelpEvent(QEvent.Type.ToolTip, local,
                                              vp.mapToGlobal(local)))
        settle(self.app)
        tips = [w for w in QApplication.topLevelWidgets()
                if w.metaObject().className() == "QTipLabel" and w.isVisible()]
        if not tips:
            raise RuntimeError(f"no tooltip at {scene_xy}")
        return tips[0], vp.mapTo(self.win, local) + QPoint(0, 0)
