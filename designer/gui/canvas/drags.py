"""`NodeDrag`: nodes being dragged on the canvas, from press to one undoable move.

Two gestures make one: Qt moves a selection of nodes itself (movable items), and pressing a
group's frame or collapsed box moves all its members (``by_group``).  Either way the drag
remembers where every node started, makes their links follow while the mouse moves, and
on release says where the nodes end up: all moved by one displacement, the one that puts
the grabbed node on the grid (unless Alt), so a selection keeps its shape.  Only then
does the scene push a single `MoveNodes`.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF

from designer.gui.canvas.items import GroupItem, NodeItem

GRID = 20.0
"""Scene units between the canvas's grid lines; dropped and dragged nodes snap to it."""


def snap(value: float, grid: float = GRID) -> float:
    """``value`` rounded to the nearest multiple of ``grid``."""
    return round(value / grid) * grid


class NodeDrag:
    """A drag of ``items`` (the grabbed one is ``anchor``); ``frames`` are the group
    frames/boxes carried along when a group is dragged from ``press`` (scene)."""

    def __init__(self, items: list[NodeItem], anchor: NodeItem | None = None,
                 frames: list[GroupItem] = (), press: QPointF | None = None):
        self.items = {i.node_id: i for i in items}
        self.start = {nid: i.pos() for nid, i in self.items.items()}
        self.anchor = anchor if anchor is not None else next(iter(items), None)
        self.frames = list(frames)
        self.press = press
        self._lines: list | None = None

    @property
    def by_group(self) -> bool:
        return self.press is not None

    def lines(self) -> list:
        """Links and aggregated bundles touching what moves (found once per drag)."""
        if self._lines is None:
            found: dict[int, object] = {}
            for item in self.items.values():
                for line in (*item.links, *item.bundles):
                    found[id(line)] = line
            for frame in self.frames:
                for line in frame.bundles:
                    found[id(line)] = line
            self._lines = list(found.values())
        return self._lines

    def move_group(self, pos: QPointF) -> None:
        """A group drag: put members and frames ``pos - press`` away from their start."""
        delta = pos - self.press
        for nid, item in self.items.items():
            item.setPos(self.start[nid] + delta)
        for frame in self.frames:
            frame.setPos(delta)
        self.follow()

    def follow(self) -> None:
        """Re-route the lines after the nodes moved."""
        for line in self.lines():
            line.update_path()

    def result(self, grid: float, free: bool) -> dict[str, tuple[float, float]]:
        """Where the nodes end up (empty when nothing moved)."""
        if self.anchor is None or self.anchor.node_id not in self.items:
            return {}
        start, now = self.start[self.anchor.node_id], self.anchor.pos()
        dx, dy = now.x() - start.x(), now.y() - start.y()
        if dx == 0 and dy == 0:
            return {}
        if not free:
            dx, dy = snap(start.x() + dx, grid) - start.x(), snap(start.y() + dy, grid) - start.y()
        if dx == 0 and dy == 0:  # snapped back where it started
            return {}
        return {nid: (p.x() + dx, p.y() + dy) for nid, p in self.start.items()}

    def end(self) -> None:
        """Put carried frames back (the scene refits them from the model)."""
        for frame in self.frames:
            frame.setPos(0, 0)
