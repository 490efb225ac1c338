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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class GrowingFrame:
    """The frame of a group the copies land in: it grows to hold them, and must not grow
    over what is outside the group.

    ``box`` is the frame now and ``pad`` what it keeps around the copies (left, top,
    right, bottom), both as ``x0, y0, x1, y1``-style floats; ``outsiders`` the
    ``(n, 4)`` rectangles of the nodes and frames outside the group that the frame does
    not already overlap.
    """

    box: tuple[float, float, float, float]
    pad: tuple[float, float, float, float]
    outsiders: np.ndarray
    inner: bool = True  # the copies sit right in it (not in a group inside it)


def _hits(o: np.ndarray, x0: float, y0: float, x1: float, y1: float) -> bool:
    return bool(np.any(_overlapping(o, (x0, y0, x1, y1))))


def free_offset(
    rect: QRectF, obstacles: np.ndarray, growing: Sequence[GrowingFrame] = ()
) -> tuple[float, float]:
    """The shift that puts ``rect`` clear of every obstacle, nearest first.

    Parameters
    ----------
    rect : QRectF
        What the copies cover where they were copied from.
    obstacles : ndarray, shape (n, 4)
        ``x0, y0, x1, y1`` of every rectangle to keep clear of.
    growing : sequence of GrowingFrame
        Frames that grow to hold the copies; a spot where one would grow over an
        outsider is not free (while there is such a spot).

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

    def free(dx: float, dy: float, frames: Sequence[GrowingFrame]) -> bool:
        if _hits(obstacles, x0 + dx, y0 + dy, x1 + dx, y1 + dy):
            return False
        for g in frames:
            (f0, f1, f2, f3), (p0, p1, p2, p3) = g.box, g.pad
            grown = (
                min(f0, x0 + dx - p0),
                min(f1, y0 + dy - p1),
                max(f2, x1 + dx + p2),
                max(f3, y1 + dy + p3),
            )
            if _hits(g.outsiders, *grown):
                return False
        return True

    # In a packed design no spot may leave every frame clear of outsiders: then keep
    # the copies' own groups clear (their outer groups may grow over a neighbour),
    # then only the copies themselves, before putting them right of everything.
    inner = [g for g in growing if g.inner]
    for frames in (growing, inner, ()) if growing else ((),):
        if free(0.0, 0.0, frames):
            return 0.0, 0.0
        for k in range(1, MAX_STEPS + 1):
            for dx, dy in ((k * step_x, 0.0), (0.0, k * step_y)):
                if free(dx, dy, frames):
                    return float(dx), float(dy)
    right = float(obstacles[:, 2].max(initial=x1))
    beyond = right - x0 + GAP
    return float(math.ceil(beyond / GRID) * GRID), 0.0


def _box(r: QRectF) -> tuple[float, float, float, float]:
    return r.left(), r.top(), r.right(), r.bottom()


def paste_offset(
    topo: Topology, frames: dict[str, QRectF], groups: list[Group], nodes: list[Node]
) -> tuple[float, float]:
    """The shift for copies of ``groups`` and ``nodes`` (at their copied positions) into
    ``topo``, whose groups' frames on the canvas are ``frames`` (see `free_offset`)."""
    if not nodes:
        return 0.0, 0.0
    landing = landing_groups(topo, groups, nodes)
    # The graph's attributes, not `Topology.nodes`: no Node objects for 10^5 nodes.
    node_ids, xy = [], []
    for nid, attrs in topo.graph.nodes(data=True):
        node_ids.append(nid)
        xy.append((attrs["x"], attrs["y"]))
    b = NODE_BOUNDS
    node_boxes = np.array(xy, dtype=float).reshape(-1, 2)[:, [0, 1, 0, 1]] + np.array(
        [b.left(), b.top(), b.right(), b.bottom()]
    )
    frame_ids = [gid for gid, f in frames.items() if f.isValid()]
    frame_boxes = np.array([_box(frames[g]) for g in frame_ids], dtype=float).reshape(-1, 4)
    obstacles = np.concatenate([node_boxes, frame_boxes[[g not in landing for g in frame_ids]]])
    growing = []
    for gid in landing:
        if gid not in frame_ids:
            continue
        box = _box(frames[gid])
        members = set(topo.members(gid))
        related = _lineage(topo, gid)  # its frame contains theirs, or theirs contains it
        outsiders = np.concatenate(
            [
                node_boxes[[n not in members for n in node_ids]],
                frame_boxes[[g not in related for g in frame_ids]],
            ]
        )
        outsiders = outsiders[~_overlapping(outsiders, box)]
        # One padding and title strip per frame between it and the copies.
        levels = 1 + sum(_is_ancestor(topo, gid, other) for other in landing)
        pad = (PAD * levels, (PAD + TITLE) * levels, PAD * levels, PAD * levels)
        growing.append(GrowingFrame(box, pad, outsiders, inner=levels == 1))
    return free_offset(copies_rect(groups, nodes), obstacles, growing)


def _is_ancestor(topo: Topology, gid: str, of: str) -> bool:
    """Whether group ``gid`` holds group ``of`` (at any depth)."""
    g = topo.group(of).parent
    while g is not None:
        if g == gid:
            return True
        g = topo.group(g).parent if topo.has_group(g) else None
    return False


def _lineage(topo: Topology, gid: str) -> set[str]:
    """``gid``, the groups it holds and the groups that hold it."""
    related = {gid} | {g.id for g in topo.groups() if _is_ancestor(topo, gid, g.id)}
    g = topo.group(gid).parent
    while g is not None and topo.has_group(g):
        related.add(g)
        g = topo.group(g).parent
    return related


def _overlapping(o: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    x0, y0, x1, y1 = box
    return (o[:, 0] < x1) & (o[:, 2] > x0) & (o[:, 1] < y1) & (o[:, 3] > y0)
