"""Tiled layout for big designs: each rack, scalable unit or pod a rectangle, in grids.

Laid out as one row, a 128-server SuperPOD is 80,000 scene units wide and 700 tall: at
"fit" the window shows a line.  Such designs are drawn unit by unit instead, a unit
being any group above the server blocks (rack, scalable unit, pod): a unit is a tile
holding its servers or its child units in a grid, with its own switches (an SU's
leaves, a pod's spines) in tier rows on top of it, and the switches of no unit (core,
or the spines of a pod-less design) in tier rows above everything.  Each grid has the
number of columns whose picture comes closest to a screen's shape (`TARGET_ASPECT`).
`layout.compute_layout` folds a design this way only when one row would be a strip.

Example
-------
>>> from designer.model.templates import build_template
>>> t = build_template("superpod", gpu="B200", sus=4)
>>> xs = [n.x for n in t.nodes()]; ys = [n.y for n in t.nodes()]
>>> (max(xs) - min(xs)) / (max(ys) - min(ys)) < 3
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from designer.model.topology import Group

BLOCK_KINDS = ("node", "tray")  # groups that are one server block (see `layout`)
TARGET_ASPECT = 1.6  # width / height of the picture a grid aims at (a desktop window)
TILE_GAP = 320.0  # between neighbouring tiles


def block_row_offsets(k: int, width: float, gap: float) -> list[float]:
    """x of ``k`` nodes of one row of a server block ``width`` wide (its widest row's
    span), from the block's centre: each node in the middle of one of ``k`` equal
    slots, at least ``gap`` apart.  A full row keeps ``gap`` spacing; a short one
    spreads out (an HGX H100's 4 NVSwitches over its 8 GPUs sit over GPU pairs, 140
    apart, their labels clear of each other).

    >>> block_row_offsets(4, 7 * 70.0, 70.0)
    [-210.0, -70.0, 70.0, 210.0]
    >>> block_row_offsets(1, 490.0, 70.0)
    [0.0]
    """
    slot = max(gap, (width + gap) / k)
    return [(i - (k - 1) / 2) * slot for i in range(k)]


@dataclass
class _Tile:
    """Positions relative to the tile's top-left corner, and its size."""

    pos: dict[str, tuple[float, float]] = field(default_factory=dict)
    width: float = 0.0
    height: float = 0.0


def unit_of(gid: str | None, groups: Mapping[str, Group], memo: dict) -> str | None:
    """The nearest group at or above group ``gid`` that is not a server block (a rack,
    a scalable unit, a pod...)."""
    if gid in memo:
        return memo[gid]
    seen, g, found = set(), gid, None
    while g is not None and g in groups and g not in seen:
        seen.add(g)
        if groups[g].kind not in BLOCK_KINDS:
            found = g
            break
        g = groups[g].parent
    memo[gid] = found
    return found


def tiled_layout(
    blocks: Mapping[str, Mapping[int, list[str]]],
    block_unit: Mapping[str, str | None],
    switch_rows: Mapping[str | None, Mapping[int, list[str]]],
    groups: Mapping[str, Group],
    row_y: Mapping[int, float],
    band_height: float,
    place_row: Callable[[list[str], float, dict], None],
    gaps: tuple[float, float, float],
) -> dict[str, tuple[float, float]]:
    """Positions of the blocks and the compute-tier switches, unit by unit.

    Parameters
    ----------
    blocks : mapping
        Server block key -> {row -> node ids}, in the design's order.
    block_unit : mapping
        The unit group of each block (None: none).
    switch_rows : mapping
        Unit (None: the whole design) -> {tier level -> switch ids} of the switches it
        owns, nearest tier first when sorted by level.
    groups : mapping
        The design's groups by id (for the units' nesting).
    row_y : mapping
        The y of each row inside a server block.
    band_height : float
        Height of a server block.
    place_row : callable
        ``place_row(ids, y, pos)`` places a tier row at height ``y`` over what ``pos``
        already holds (each switch near the mean x of its placed neighbours).
    gaps : (h_gap, block_gap, tier_gap)
        Spacing of nodes in a row, between blocks, and between tier rows.

    Returns
    -------
    dict
        ``{node_id: (x, y)}``; the top tier row of the design is at the smallest y.
    """
    h_gap, block_gap, tier_gap = gaps
    memo: dict = {}
    parent: dict[str | None, str | None] = {}
    children: dict[str | None, list[str]] = {}
    own_blocks: dict[str | None, list[str]] = {}

    def attach(unit: str | None) -> None:
        while unit is not None and unit not in parent:
            up = unit_of(groups[unit].parent, groups, memo)
            parent[unit] = up
            children.setdefault(up, []).append(unit)
            unit = up

    for key in blocks:
        unit = block_unit.get(key)
        attach(unit)
        own_blocks.setdefault(unit, []).append(key)
    for unit in switch_rows:
        if unit is not None and unit in groups:
            attach(unit)

    def block_tile(key: str) -> _Tile:
        rows = blocks[key]
        width = (max(len(ids) for ids in rows.values()) - 1) * h_gap
        tile = _Tile(width=width, height=band_height)
        for r, ids in rows.items():
            for nid, dx in zip(ids, block_row_offsets(len(ids), width, h_gap), strict=True):
                tile.pos[nid] = (width / 2 + dx, row_y[r])
        return tile

    def lay(unit: str | None) -> _Tile:
        items = [lay(u) for u in children.get(unit, [])]
        gap = TILE_GAP if items else block_gap
        items += [block_tile(k) for k in own_blocks.get(unit, [])]
        levels = sorted(switch_rows.get(unit, {}))
        tiers = len(levels) * tier_gap
        pos = _grid(items, gap, tiers)
        tile = _Tile(pos=pos)
        for k, level in enumerate(levels):
            place_row(switch_rows[unit][level], -(k + 1) * tier_gap, tile.pos)
        _normalise(tile)
        return tile

    top = lay(None)
    return top.pos


def _grid(items: Sequence[_Tile], gap: float, tiers: float) -> dict[str, tuple[float, float]]:
    """Items in rows (left to right, top to bottom), as many columns as brings the
    picture, ``tiers`` of switch rows included, closest to `TARGET_ASPECT`."""
    if not items:
        return {}
    best = None
    for cols in range(1, len(items) + 1):
        width, height, _ = _shelves(items, cols, gap)
        score = abs(math.log(max(width, 1.0) / max(height + tiers, 1.0) / TARGET_ASPECT))
        if best is None or score < best[0] - 1e-9:
            best = (score, cols)
    _, _, origins = _shelves(items, best[1], gap)
    pos: dict[str, tuple[float, float]] = {}
    for item, (ox, oy) in zip(items, origins, strict=True):
        for nid, (x, y) in item.pos.items():
            pos[nid] = (ox + x, oy + y)
    return pos


def _shelves(items: Sequence[_Tile], cols: int, gap: float):
    """Size of ``items`` packed ``cols`` to a row, and each item's top-left corner."""
    origins, width, y = [], 0.0, 0.0
    for at in range(0, len(items), cols):
        row = items[at:at + cols]
        x = 0.0
        for item in row:
            origins.append((x, y))
            x += item.width + gap
        width = max(width, x - gap)
        y += max(item.height for item in row) + gap
    return width, y - gap, origins


def _normalise(tile: _Tile) -> None:
    """Shift ``tile.pos`` so its top-left corner is (0, 0); set its size."""
    if not tile.pos:
        return
    xs = [x for x, _ in tile.pos.values()]
    ys = [y for _, y in tile.pos.values()]
    x0, y0 = min(xs), min(ys)
    tile.pos = {nid: (x - x0, y - y0) for nid, (x, y) in tile.pos.items()}
    tile.width, tile.height = max(xs) - x0, max(ys) - y0
