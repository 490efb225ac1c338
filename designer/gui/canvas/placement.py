"""Where a paste or a duplicate puts its copies: in the nearest free spot of the canvas.

A copy that lands on its original (or on anything else) hides it and reads as one
device; a small fixed shift interleaves the copies with the originals' neighbours.  So
the copies keep their shape and move as a block: where they were if that is free (a cut
pasted back, a paste into another design), else one block-width to the right or one
block-height down, then two, and so on, snapped to the grid.  The block is clear of
every node's icon and label and of the frame of every group it does not land in (the
frames it lands in grow to hold it).  Repeated pastes therefore cascade, each beside the
last.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from PySide6.QtCore import QRectF

from designer.gui.canvas.drags import GRID
from designer.gui.canvas.geometry import NODE_BOUNDS
from designer.gui.canvas.groups import PAD, TITLE
from designer.model.topology import Group, Node, Topology

#: Scene units kept free between a copy and its neighbours.
GAP = GRID
#: Spots tried in each direction before the copies go right of everything.
MAX_STEPS = 64


def copies_rect(groups: Iterable[Group], nodes: Iterable[Node]) -> QRectF:
    """What the copies will cover: their nodes' icons and labels, and the frames of the
    copied groups around them (one padding and title strip per level of nesting)."""
    rect = QRectF()
    for n in nodes:
        rect = rect.united(NODE_BOUNDS.translated(n.x, n.y))
    parents = {g.id: g.parent for g in groups}
    depth = 0
    for gid in parents:
        level, g = 0, gid
        while g in parents:
            level, g = level + 1, parents[g]
        depth = max(depth, level)
    return rect.adjusted(-PAD * depth, -(PAD + TITLE) * depth, PAD * depth, PAD * depth)


def landing_groups(topo: Topology, groups: Iterable[Group], nodes: Iterable[Node]) -> set[str]:
    """The groups of ``topo`` the copies will sit in, and their ancestors: their frames
    grow to hold the copies, so they are no obstacle."""
    copied = {g.id for g in groups}
    direct = {g.parent for g in groups if g.parent not in copied} | {
        n.group for n in nodes if n.group not in copied
    }
    inside: set[str] = set()
    for gid in direct:
        while gid is not None and topo.has_group(gid) and gid not in inside:
            inside.add(gid)
            gid = topo.group(gid).parent
    return inside


def free_offset(rect: QRectF, obstacles: np.ndarray) -> tuple[float, float]:
    """The shift that puts ``rect`` clear of every obstacle, nearest first.

    Parameters
    ----------
    rect : QRectF
        What the copies cover where they were copied from.
    obstacles : ndarray, shape (n, 4)
        ``x0, y0, x1, y1`` of every rectangle to keep clear of.

    Returns
    -------
    (dx, dy)
        ``(0, 0)`` when ``rect`` is free, else a whole number of grid steps of about
        the block's width (right) or height (down), the smaller count first; right of
        everything when none of the first `MAX_STEPS` is free.

    Examples
    --------
    >>> free_offset(QRectF(0, 0, 50, 30), np.array([[10.0, 10.0, 40.0, 20.0]]))
    (80.0, 0.0)
    >>> free_offset(QRectF(0, 0, 50, 30), np.zeros((0, 4)))
    (0.0, 0.0)
    """
    x0, y0, x1, y1 = rect.left(), rect.top(), rect.right(), rect.bottom()
    step_x = math.ceil((rect.width() + GAP) / GRID) * GRID
    step_y = math.ceil((rect.height() + GAP) / GRID) * GRID

    def free(dx: float, dy: float) -> bool:
        o = obstacles
        return not np.any(
            (o[:, 0] < x1 + dx) & (o[:, 2] > x0 + dx) & (o[:, 1] < y1 + dy) & (o[:, 3] > y0 + dy)
        )

    if free(0.0, 0.0):
        return 0.0, 0.0
    for k in range(1, MAX_STEPS + 1):
        for dx, dy in ((k * step_x, 0.0), (0.0, k * step_y)):
            if free(dx, dy):
                return float(dx), float(dy)
    beyond = float(obstacles[:, 2].max()) - x0 + GAP
    return float(math.ceil(beyond / GRID) * GRID), 0.0


def paste_offset(
    topo: Topology, frames: dict[str, QRectF], groups: list[Group], nodes: list[Node]
) -> tuple[float, float]:
    """The shift for copies of ``groups`` and ``nodes`` (at their copied positions) into
    ``topo``, whose groups' frames on the canvas are ``frames`` (see `free_offset`)."""
    if not nodes:
        return 0.0, 0.0
    skip = landing_groups(topo, groups, nodes)
    boxes = [
        (
            n.x + NODE_BOUNDS.left(),
            n.y + NODE_BOUNDS.top(),
            n.x + NODE_BOUNDS.right(),
            n.y + NODE_BOUNDS.bottom(),
        )
        for n in topo.nodes()
    ]
    boxes += [
        (f.left(), f.top(), f.right(), f.bottom())
        for gid, f in frames.items()
        if gid not in skip and f.isValid()
    ]
    obstacles = np.array(boxes, dtype=float).reshape(-1, 4)
    return free_offset(copies_rect(groups, nodes), obstacles)
