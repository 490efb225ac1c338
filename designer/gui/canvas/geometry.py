"""Shapes and measures shared by the canvas items: a node's icon, label and bounds, and
the level of detail of a painter."""

from __future__ import annotations

import math

from PySide6.QtCore import QRectF
from PySide6.QtGui import QPainter

from designer.gui.canvas.style import NODE_SIZE

_HALF = NODE_SIZE / 2  # icons are centred on the node's position
ICON_RECT = QRectF(-_HALF, -_HALF, NODE_SIZE, NODE_SIZE)
LABEL_RECT = QRectF(-_HALF - 24, _HALF + 1, NODE_SIZE + 48, 14)
LABEL_WIDTH = 66.0  # elide here: neighbours in a row sit 70 apart (templates' H_GAP)
NODE_BOUNDS = QRectF(-_HALF - 24, -_HALF - 4, NODE_SIZE + 48, NODE_SIZE + 20)


def lod_of(painter: QPainter) -> float:
    """Screen pixels per scene unit of the painter (our views never rotate or shear)."""
    t = painter.worldTransform()
    return math.sqrt(abs(t.m11() * t.m22() - t.m12() * t.m21()))
