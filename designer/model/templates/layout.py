"""Layered auto-layout: switch tiers on top, server blocks in a row, other planes below.

Rows, top to bottom:

1. compute-fabric switch tiers: core, spine, leaf (a plain ``switch`` sits as many tiers
   above the servers as it is hops away from them), then NVLink switch trays and
   NVSwitches that belong to no single server;
2. server blocks, left to right in the order the design lists them (a template lists
   servers in rail order), each block a small stack: NVSwitches, NICs, GPUs, host, then
   the NICs of other planes.  A block is a group of kind ``node`` or ``tray``; ungrouped
   GPUs, NICs and hosts joined by PCIe form one block;
3. per other plane (storage, front-end, management): its leaves, spines, cores, then its
   endpoints (storage servers).

When that one row of server blocks would be a strip (wider than `STRIP_ASPECT` times
its height, as a 128-server SuperPOD is), it is folded instead: each rack, scalable
unit or pod becomes a tile in a grid, its own switches on top of it (`tiles`).

Within a tier row, each switch goes to the mean x of the neighbours already placed
(below it for the top tiers, above it for the lower planes), then the row is spread so
neighbours sit at least `H_GAP` apart while moving as little as possible (isotonic
regression, "pool adjacent violators").  No two nodes ever share a position.

Example
-------
>>> from designer.model.templates import build_template
>>> pos = layered_layout(build_template("hgx"))
>>> pos["n01-nvs0"][1] < pos["n01-nic0"][1] < pos["n01-gpu0"][1] < pos["n01-host"][1]
True
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

from designer.model.catalog import PLANES, Catalog
from designer.model.templates.tiles import block_row_offsets, tiled_layout, unit_of
from designer.model.topology import Group, Link, Node, Topology

H_GAP = 70.0  # centre spacing of neighbours in a row (icons are ~40 units wide)
ROW_GAP = 80.0  # between the rows of a server block
TIER_GAP = 160.0  # between switch tiers, and between tiers and the servers
BLOCK_GAP = 140.0  # between the facing edge nodes of two neighbouring server blocks
STRIP_ASPECT = 8.0  # a one-row layout wider than this times its height is folded (tiles)
FOLD_BLOCKS = 8  # ... if it has more server blocks than this

BLOCK_GROUP_KINDS = ("node", "tray")
TIER_LEVEL = {"nvlink-switch-tray": 0, "nvswitch": 0, "leaf": 1, "spine": 2, "core": 3}
SWITCH_KINDS = ("leaf", "spine", "core", "switch")
LOOSE_KINDS = ("gpu", "nic", "host")  # joined into blocks through PCIe
_BLOCK_ROW = {"nvswitch": 0, "nvlink-switch-tray": 0, "nic": 1, "gpu": 2, "host": 3}
_OTHER_ROW = 4  # NICs of other planes, storage and anything else inside a server
_ENDPOINT_LEVEL = 99  # storage servers: last row of their plane


def layered_layout(
    topology: Topology, *, wrap: int | None = None
) -> dict[str, tuple[float, float]]:
    """Positions for every node of ``topology``, by tier (see the module docstring).

    Parameters
    ----------
    topology : Topology
        Any design: a template's, or an imported graph with no groups at all.
    wrap : int, optional
        Lay server blocks out in rows of this many (a grid) instead of one row.

    Returns
    -------
    dict
        ``{node_id: (x, y)}`` in scene units, y growing downwards.
    """
    return compute_layout(
        list(topology.nodes()),
        {g.id: g for g in topology.groups()},
        list(topology.links()),
        topology.catalog,
        wrap=wrap,
    )


def _spread_row(desired: Sequence[float], gap: float) -> list[float]:
    """Positions as close as possible (least squares) to sorted ``desired`` values,
    keeping the order and at least ``gap`` between neighbours."""
    pools: list[list[float]] = []  # [sum of (desired - i*gap), count]
    for i, d in enumerate(desired):
        pools.append([d - i * gap, 1.0])
        while len(pools) > 1 and pools[-2][0] / pools[-2][1] > pools[-1][0] / pools[-1][1]:
            s, c = pools.pop()
            pools[-1][0] += s
            pools[-1][1] += c
    out: list[float] = []
    for s, c in pools:
        base = s / c
        for _ in range(int(c)):
            out.append(base + len(out) * gap)
    return out


def _strip_aspect(blocks: dict, band_height: float, tier_rows: int) -> float:
    """Width / height of the blocks laid out in one row, with ``tier_rows`` rows of
    switches above and below them."""
    width = sum((max(len(ids) for ids in rows.values()) - 1) * H_GAP + BLOCK_GAP
                for rows in blocks.values()) - BLOCK_GAP
    return width / (band_height + tier_rows * TIER_GAP + ROW_GAP)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        # A server group is always the root, and two server groups never merge.
        if ra.startswith("g:") and rb.startswith("g:"):
            return
        if ra.startswith("g:"):
            self.parent[rb] = ra
        else:
            self.parent[ra] = rb


def compute_layout(
    nodes: Sequence[Node],
    groups: Mapping[str, Group],
    links: Sequence[Link],
    catalog: Catalog | None = None,
    *,
    wrap: int | None = None,
) -> dict[str, tuple[float, float]]:
    """The layout of `layered_layout` for loose parts (templates lay out before they build).

    ``catalog`` names each link's family (PCIe links join ungrouped GPUs, NICs and hosts
    into server blocks); without it no such joining happens.
    """
    order = {n.id: i for i, n in enumerate(nodes)}
    adj: dict[str, list[str]] = {n.id: [] for n in nodes}
    techs = catalog.techs if catalog is not None else {}
    pcie: list[tuple[str, str]] = []
    for lk in links:
        if lk.a in adj and lk.b in adj:
            adj[lk.a].append(lk.b)
            adj[lk.b].append(lk.a)
            tech = techs.get(lk.tech)
            if tech is not None and tech.family == "pcie":
                pcie.append((lk.a, lk.b))

    # ---- server blocks: the nearest node/tray group, else PCIe-joined loose endpoints
    server_of: dict[str | None, str | None] = {None: None}

    def server_group(gid: str | None) -> str | None:
        if gid in server_of:
            return server_of[gid]
        seen, g, found = set(), gid, None
        while g is not None and g in groups and g not in seen:
            seen.add(g)
            if groups[g].kind in BLOCK_GROUP_KINDS:
                found = g
                break
            g = groups[g].parent
        server_of[gid] = found
        return found

    block_of: dict[str, str] = {}
    for n in nodes:
        g = server_group(n.group)
        if g is not None:
            block_of[n.id] = "g:" + g
    by_id = {n.id: n for n in nodes}
    loose = {n.id for n in nodes if n.id not in block_of and n.kind in LOOSE_KINDS}
    if loose:
        uf = _UnionFind()
        for nid in loose:
            uf.find(nid)
        for a, b in pcie:
            ka = block_of.get(a, a if a in loose else None)
            kb = block_of.get(b, b if b in loose else None)
            if ka is not None and kb is not None:
                uf.union(ka, kb)
        for nid in loose:
            block_of[nid] = uf.find(nid)
    for n in nodes:  # an NVSwitch serving one block only is part of it
        if n.kind == "nvswitch" and n.id not in block_of:
            owners = {block_of[m] for m in adj[n.id] if m in block_of}
            if len(owners) == 1:
                block_of[n.id] = owners.pop()

    # ---- rows of everything outside the blocks
    dist: dict[str, int] | None = None

    def hops(nid: str) -> int:
        nonlocal dist
        if dist is None:
            dist = {m: 0 for m in block_of}
            queue = deque(block_of)
            while queue:
                m = queue.popleft()
                for k in adj[m]:
                    if k not in dist:
                        dist[k] = dist[m] + 1
                        queue.append(k)
        return max(1, dist.get(nid, 1))

    top: dict[int, list[str]] = {}
    below: dict[tuple[int, int], list[str]] = {}
    for n in nodes:
        if n.id in block_of:
            continue
        level = TIER_LEVEL.get(n.kind)
        if n.kind == "switch":
            level = hops(n.id)
        elif level is None:  # storage servers and the like: last row of their plane
            level = _ENDPOINT_LEVEL
        if n.plane == "compute" and level != _ENDPOINT_LEVEL:
            top.setdefault(level, []).append(n.id)
        else:
            plane = PLANES.index(n.plane) if n.plane in PLANES else len(PLANES)
            below.setdefault((plane, level), []).append(n.id)

    # ---- place the blocks
    blocks: dict[str, dict[int, list[str]]] = {}
    for n in nodes:
        key = block_of.get(n.id)
        if key is None:
            continue
        if n.kind == "nic" and n.plane != "compute":
            row = _OTHER_ROW
        else:
            row = _BLOCK_ROW.get(n.kind, _OTHER_ROW)
        blocks.setdefault(key, {}).setdefault(row, []).append(n.id)
    rows_used = sorted({r for rows in blocks.values() for r in rows})
    row_y = {r: i * ROW_GAP for i, r in enumerate(rows_used)}
    band_height = (len(rows_used) - 1) * ROW_GAP if rows_used else 0.0

    def place_row(ids: list[str], y: float, pos: dict, centre_x: float = 0.0) -> None:
        desired = []
        for nid in ids:
            xs = [pos[m][0] for m in adj[nid] if m in pos]
            desired.append((sum(xs) / len(xs) if xs else centre_x, order[nid], nid))
        desired.sort()
        xs = _spread_row([d for d, _, _ in desired], H_GAP)
        for (_, _, nid), x in zip(desired, xs, strict=True):
            pos[nid] = (x, y)

    memo: dict = {}
    block_unit = {key: unit_of(key[2:], groups, memo) if key.startswith("g:") else None
                  for key in blocks}
    if (wrap is None and len(blocks) > FOLD_BLOCKS
            and _strip_aspect(blocks, band_height, len(top) + len(below)) > STRIP_ASPECT):
        # One row would be a strip too thin to read: fold it, a tile per scalable unit
        # or pod (`tiles`).
        switch_rows: dict[str | None, dict[int, list[str]]] = {}
        for level, ids in top.items():
            for nid in ids:
                unit = unit_of(by_id[nid].group, groups, memo)
                switch_rows.setdefault(unit, {}).setdefault(level, []).append(nid)
        pos = tiled_layout(blocks, block_unit, switch_rows, groups, row_y, band_height,
                           place_row, (H_GAP, BLOCK_GAP, TIER_GAP))
        bottom = max((pos[n][1] for rows in blocks.values() for ids in rows.values()
                      for n in ids), default=0.0)
        centre_x = sum(x for x, _ in pos.values()) / len(pos) if pos else 0.0
    else:
        pos: dict[str, tuple[float, float]] = {}
        per_band = wrap if wrap and wrap > 0 else max(1, len(blocks))
        cursor, band, in_band = 0.0, 0, 0
        for rows in blocks.values():
            if in_band == per_band:
                cursor, band, in_band = 0.0, band + 1, 0
            width = (max(len(ids) for ids in rows.values()) - 1) * H_GAP
            centre = cursor + width / 2
            y0 = band * (band_height + TIER_GAP)
            for r, ids in rows.items():
                for nid, dx in zip(ids, block_row_offsets(len(ids), width, H_GAP), strict=True):
                    pos[nid] = (centre + dx, y0 + row_y[r])
            cursor += width + BLOCK_GAP
            in_band += 1
        bottom = band * (band_height + TIER_GAP) + band_height if blocks else 0.0
        centre_x = sum(x for x, _ in pos.values()) / len(pos) if pos else 0.0
        # The tier rows, nearest to the servers first.
        for k, level in enumerate(sorted(top)):
            place_row(top[level], -(k + 1) * TIER_GAP, pos, centre_x)

    # ---- other planes below everything
    y = bottom
    for key in sorted(below):
        y += TIER_GAP
        place_row(below[key], y, pos, centre_x)
    return {nid: (round(x, 2), round(yy, 2)) for nid, (x, yy) in pos.items() if nid in by_id}
