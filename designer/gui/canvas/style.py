"""Colours, sizes and fonts of the canvas, for light and dark themes.

Technology colours follow the Okabe-Ito colour-blind-safe palette so that NVLink,
InfiniBand, Ethernet/RoCE, EFA and PCIe stay distinguishable for everyone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication

NODE_SIZE = 40.0  # scene units: icons are drawn in a NODE_SIZE square centred on the item

# Okabe-Ito: orange, sky blue, bluish green, yellow, blue, vermillion, reddish purple, grey.
TECH_COLORS = {
    "nvlink": "#E69F00",
    "infiniband": "#0072B2",
    "roce": "#009E73",
    "tcp": "#56B4E9",
    "efa-srd": "#CC79A7",
    "pcie": "#999999",
}

KIND_COLORS = {
    "gpu": "#76B900",          # the GPU green architects expect
    "nvswitch": "#E69F00",
    "nvlink-switch-tray": "#E69F00",
    "leaf": "#0072B2",
    "spine": "#56B4E9",
    "core": "#CC79A7",
    "switch": "#0072B2",
    "nic": "#009E73",
    "host": "#7F7F7F",
    "storage": "#D55E00",
}


@dataclass(frozen=True)
class Theme:
    """Canvas colours for one colour scheme."""

    dark: bool
    background: QColor
    grid: QColor
    text: QColor
    node_fill: QColor
    node_outline: QColor
    selection: QColor
    group_fill: QColor
    group_outline: QColor


LIGHT = Theme(False, QColor("#FAFAFA"), QColor("#E6E6E6"), QColor("#202020"),
              QColor("#FFFFFF"), QColor("#404040"), QColor("#1F6FEB"),
              QColor(0, 0, 0, 10), QColor("#B0B0B0"))
DARK = Theme(True, QColor("#1E1E1E"), QColor("#2C2C2C"), QColor("#E8E8E8"),
             QColor("#2A2A2A"), QColor("#C8C8C8"), QColor("#58A6FF"),
             QColor(255, 255, 255, 12), QColor("#5A5A5A"))


def system_theme() -> Theme:
    """The theme matching the system's colour scheme (light when it cannot tell)."""
    app = QGuiApplication.instance()
    if app is not None and app.styleHints().colorScheme() == Qt.ColorScheme.Dark:
        return DARK
    return LIGHT


def tech_color(protocol: str, family: str) -> QColor:
    return QColor(TECH_COLORS.get(protocol) or TECH_COLORS.get(family, "#808080"))


def link_width(gbps_total: float) -> float:
    """Pen width for a bundle carrying ``gbps_total`` per direction: logarithmic, so an
    18-link NVLink bundle and a 1G management cable are both readable."""
    return max(1.0, min(8.0, 1.0 + 1.2 * math.log10(max(gbps_total, 1.0) / 10.0)))
