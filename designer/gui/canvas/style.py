"""Colours, sizes, fonts and levels of detail of the canvas, for light and dark themes.

Technology colours follow the Okabe-Ito colour-blind-safe palette so that NVLink,
InfiniBand, Ethernet/RoCE, EFA and PCIe stay distinguishable for everyone.

Level of detail is a function of the view's scale (``lod``, screen pixels per scene
unit): far out the view paints a batched schematic instead of the items (`SCHEMATIC_LOD`),
then icons appear, then labels, then link badges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication

NODE_SIZE = 40.0  # scene units: icons are drawn in a NODE_SIZE square centred on the item

# Below this scale a node icon is under ~8 px: the view draws the schematic (coloured
# squares, plain lines, group frames) in a few batched calls instead of painting items.
SCHEMATIC_LOD = 0.2
ICON_LOD = 0.25  # items paint a plain square below this, their icon above
LABEL_LOD = 0.5  # node labels from here (7-8 pt text is ~5 px tall below it)
BADGE_LOD = 0.6  # link count badges from here

LABEL_FONT = QFont("Sans Serif", 8)
BADGE_FONT = QFont("Sans Serif", 7, QFont.Weight.Bold)
GROUP_FONT = QFont("Sans Serif", 10, QFont.Weight.Bold)
BOX_FONT = QFont("Sans Serif", 9)
GROUP_LABEL_PX = 11.0  # group titles stay at least this many pixels tall when zoomed out

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
FAILED_COLOR = QColor("#9E9E9E")
FAILED_MARK = QColor("#D55E00")


@dataclass(frozen=True)
class Theme:
    """Canvas colours for one colour scheme.

    ``node_outline`` strokes icons; ``mixed_link`` colours an aggregated bundle whose
    links use several technologies; ``box_fill``/``box_outline`` draw a collapsed group.
    """

    dark: bool
    background: QColor
    grid: QColor
    text: QColor
    node_fill: QColor
    node_outline: QColor
    selection: QColor
    group_fill: QColor
    group_outline: QColor
    muted_text: QColor
    badge_fill: QColor
    box_fill: QColor
    box_outline: QColor
    mixed_link: QColor

    @cached_property
    def label_veil(self) -> QColor:
        """The background, slightly transparent: behind labels that links cross."""
        c = QColor(self.background)
        c.setAlpha(200)
        return c

    @cached_property
    def _frame_fills(self) -> list[QColor]:
        base, tint = self.background, self.group_fill
        a = tint.alphaF()
        r, g, b = base.redF(), base.greenF(), base.blueF()
        out = []
        for _ in range(8):
            r, g, b = (r * (1 - a) + tint.redF() * a, g * (1 - a) + tint.greenF() * a,
                       b * (1 - a) + tint.blueF() * a)
            out.append(QColor.fromRgbF(r, g, b))
        return out

    def frame_fill(self, depth: int) -> QColor:
        """Opaque fill of a group frame ``depth`` levels deep: the background tinted by
        ``group_fill`` once per level, as stacked translucent frames would look, but
        opaque so a frame covering the whole view costs a plain fill, not a blend."""
        return self._frame_fills[min(max(depth, 0), 7)]


LIGHT = Theme(False, QColor("#FAFAFA"), QColor("#ECECEC"), QColor("#1E1E1E"),
              QColor("#FFFFFF"), QColor("#3C3C3C"), QColor("#1F6FEB"),
              QColor(40, 60, 90, 14), QColor("#A8B0BA"),
              muted_text=QColor("#5A5A5A"), badge_fill=QColor("#FFFFFF"),
              box_fill=QColor("#EEF2F7"), box_outline=QColor("#6B7A8F"),
              mixed_link=QColor("#6E6E6E"))
DARK = Theme(True, QColor("#1C1D1F"), QColor("#2A2B2E"), QColor("#E8E8E8"),
             QColor("#2B2C2F"), QColor("#D0D0D0"), QColor("#58A6FF"),
             QColor(200, 220, 255, 14), QColor("#5C636B"),
             muted_text=QColor("#A8A8A8"), badge_fill=QColor("#26272A"),
             box_fill=QColor("#2C3340"), box_outline=QColor("#8E9AAD"),
             mixed_link=QColor("#A0A0A0"))

THEME_MODES = ("system", "light", "dark")


def system_theme() -> Theme:
    """The theme matching the system's colour scheme (light when it cannot tell)."""
    app = QGuiApplication.instance()
    if app is not None and app.styleHints().colorScheme() == Qt.ColorScheme.Dark:
        return DARK
    return LIGHT


def theme_for(mode: str) -> Theme:
    """The theme for a View > Theme choice: ``"system"``, ``"light"`` or ``"dark"``.

    >>> theme_for("dark").dark
    True
    """
    if mode == "light":
        return LIGHT
    if mode == "dark":
        return DARK
    return system_theme()


def tech_color(protocol: str, family: str) -> QColor:
    return QColor(TECH_COLORS.get(protocol) or TECH_COLORS.get(family, "#808080"))


def link_width(gbps_total: float) -> float:
    """Pen width for a bundle carrying ``gbps_total`` per direction: logarithmic, so an
    18-link NVLink bundle and a 1G management cable are both readable.

    >>> link_width(10.0), round(link_width(400.0), 2), link_width(1e9)
    (1.0, 2.92, 8.0)
    """
    return max(1.0, min(8.0, 1.0 + 1.2 * math.log10(max(gbps_total, 1.0) / 10.0)))


def opaque_over(color: QColor, background: QColor, weight: float = 1.0) -> QColor:
    """``color`` (its alpha times ``weight``) blended onto ``background``, as one opaque
    colour: looks the same as the translucent line over the background, but rasterises
    several times faster (translucent wide antialiased lines are slow in Qt's raster
    engine).

    >>> opaque_over(QColor(0, 0, 0, 128), QColor("white")).name()
    '#7f7f7f'
    """
    k = color.alphaF() * weight
    return QColor.fromRgbF(color.redF() * k + background.redF() * (1 - k),
                           color.greenF() * k + background.greenF() * (1 - k),
                           color.blueF() * k + background.blueF() * (1 - k))


def shows_icons(lod: float) -> bool:
    """Whether a node is drawn as its icon (else a plain coloured square)."""
    return lod >= ICON_LOD


def shows_labels(lod: float) -> bool:
    """Whether node labels are drawn at this level of detail.

    >>> shows_labels(0.1), shows_labels(1.0)
    (False, True)
    """
    return lod >= LABEL_LOD


def shows_badges(lod: float) -> bool:
    """Whether link bundles draw their ``xN`` count badge."""
    return lod >= BADGE_LOD


def uses_schematic(scale: float) -> bool:
    """Whether a view at ``scale`` paints the batched schematic instead of its items."""
    return scale < SCHEMATIC_LOD
