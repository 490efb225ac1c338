"""What every export format shares: colours, node boxes, group frames, stable orders,
text made safe for the target, and atomic folder writes.

Nothing here imports Qt: the colours are those of the canvas's light theme
(`designer.gui.canvas.style`, checked equal by a test), so a diagram exported to another
tool reads like the canvas.

Orders
------
Every format that lists items lists them by structure, never by the order the design
happens to hold them in: nodes by (group path, kind, name, id), links by their two ends
in that node order and then by (technology, count, id).  Two designs that differ only
in the order their items were added export identically.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from designer.io.atomic import AtomicWriteError, atomic_write_bytes
from designer.model.elements import Group, Link, Node
from designer.model.errors import DesignError
from designer.model.report import natural_key
from designer.model.safe_text import csv_writer
from designer.model.topology import Topology

__all__ = [
    "FAILED_COLOR",
    "GROUP_PAD",
    "KIND_COLORS",
    "NODE_SIZE",
    "TECH_COLORS",
    "Box",
    "ExportFormatError",
    "csv_bytes",
    "group_boxes",
    "group_path",
    "link_color",
    "one_line",
    "sorted_groups",
    "sorted_links",
    "sorted_nodes",
    "utilisation_color",
    "write_folder",
]

NODE_SIZE = 40.0  # the canvas draws a node as a NODE_SIZE square centred on (x, y)
GROUP_PAD = 24.0  # a group frame's margin around its members (and title room on top)
TITLE_ROOM = 18.0

TECH_COLORS: Mapping[str, str] = {
    "nvlink": "#E69F00",
    "infiniband": "#0072B2",
    "roce": "#009E73",
    "tcp": "#56B4E9",
    "efa-srd": "#CC79A7",
    "pcie": "#999999",
}
KIND_COLORS: Mapping[str, str] = {
    "gpu": "#76B900",
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
FAILED_COLOR = "#9E9E9E"
OTHER_COLOR = "#808080"


class ExportFormatError(DesignError):
    """An export that cannot be written: one line naming the file and the reason."""


def link_color(topology: Topology, link: Link) -> str:
    """The canvas colour of ``link``'s technology (grey when failed)."""
    if link.failed:
        return FAILED_COLOR
    tech = topology.catalog.tech(link.tech)
    return TECH_COLORS.get(tech.protocol) or TECH_COLORS.get(tech.family, OTHER_COLOR)


#: The canvas's utilisation colours (`designer.gui.analysis.overlay`): the cividis map,
#: here as 17 stops interpolated linearly (a test holds them to pyqtgraph's map),
#: vermillion from 99 %, translucent grey when idle.
CIVIDIS = (
    "#00204d",
    "#002c69",
    "#05366e",
    "#2d426c",
    "#414d6b",
    "#52596c",
    "#61646f",
    "#6f7073",
    "#7d7c78",
    "#8b8779",
    "#9b9477",
    "#aca174",
    "#bdaf6f",
    "#cebc68",
    "#e0cb5e",
    "#f2da50",
    "#ffea46",
)
SATURATED_COLOR = "#D55E00"
IDLE_COLOR = "#969696"


def utilisation_color(fraction: float) -> str:
    """The canvas's colour for a link at utilisation ``fraction`` (0-1), as ``#RRGGBB``."""
    u = float(fraction)
    if not u > 1e-9:
        return IDLE_COLOR
    if u >= 0.99:
        return SATURATED_COLOR
    x = min(u, 1.0) * (len(CIVIDIS) - 1)
    i = min(int(x), len(CIVIDIS) - 2)
    t = x - i
    a, b = CIVIDIS[i], CIVIDIS[i + 1]
    rgb = [round(int(a[k : k + 2], 16) * (1 - t) + int(b[k : k + 2], 16) * t) for k in (1, 3, 5)]
    return "#{:02X}{:02X}{:02X}".format(*rgb)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def one_line(text: str) -> str:
    """``text`` with control characters (newlines, NUL, escapes) shown as ``\\xNN``:
    for formats whose values live on one line (DOT attributes, simulator text)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


# ------------------------------------------------------------------ stable orders
def group_path(topology: Topology, group_id: str | None) -> tuple:
    """The (kind, name, id) natural keys of ``group_id`` and its ancestors, outermost
    first: a sort key that places a group's members together."""
    path: list[tuple] = []
    seen: set[str] = set()
    while group_id is not None and group_id not in seen and topology.has_group(group_id):
        seen.add(group_id)
        g = topology.group(group_id)
        path.append((natural_key(g.kind), natural_key(g.name), natural_key(g.id)))
        group_id = g.parent
    return tuple(reversed(path))


def sorted_groups(topology: Topology) -> list[Group]:
    """Groups, parents before children, siblings by (kind, name, id)."""
    return sorted(topology.groups(), key=lambda g: group_path(topology, g.id))


def sorted_nodes(topology: Topology) -> list[Node]:
    """Nodes by (group path, kind, name, id)."""
    return sorted(
        topology.nodes(),
        key=lambda n: (
            group_path(topology, n.group),
            natural_key(n.kind),
            natural_key(n.name),
            natural_key(n.id),
        ),
    )


def sorted_links(topology: Topology, order: Mapping[str, int] | None = None) -> list[Link]:
    """Links by their ends' places in ``order`` (node id -> rank, `sorted_nodes` by
    default), lower end first, then (technology, count, plane, id)."""
    if order is None:
        order = {n.id: i for i, n in enumerate(sorted_nodes(topology))}

    def key(link: Link) -> tuple:
        ends = sorted((order[link.a], order[link.b]))
        return (*ends, link.tech, link.count, link.plane, natural_key(link.id))

    return sorted(topology.links(), key=key)


def oriented(link: Link, order: Mapping[str, int]) -> tuple[str, str]:
    """``link``'s ends, the one earlier in ``order`` first (so swapping a and b in the
    design changes no export)."""
    return (link.a, link.b) if order[link.a] <= order[link.b] else (link.b, link.a)


# ------------------------------------------------------------------ geometry
@dataclass(frozen=True, slots=True)
class Box:
    """An axis-aligned box in canvas units (y down)."""

    x: float
    y: float
    width: float
    height: float

    def union(self, other: Box) -> Box:
        x0, y0 = min(self.x, other.x), min(self.y, other.y)
        x1 = max(self.x + self.width, other.x + other.width)
        y1 = max(self.y + self.height, other.y + other.height)
        return Box(x0, y0, x1 - x0, y1 - y0)

    def grown(self, pad: float, top: float = 0.0) -> Box:
        return Box(
            self.x - pad, self.y - pad - top, self.width + 2 * pad, self.height + 2 * pad + top
        )


def node_box(node: Node) -> Box:
    """The square the canvas draws ``node`` in, centred on its position."""
    return Box(node.x - NODE_SIZE / 2, node.y - NODE_SIZE / 2, NODE_SIZE, NODE_SIZE)


def group_boxes(topology: Topology) -> dict[str, Box]:
    """Each group's frame: its members' boxes and its sub-groups' frames, grown by
    `GROUP_PAD` (and room for the title).  An empty group gets a small frame at the
    origin so it can still be drawn and re-imported."""
    direct: dict[str, Box] = {}
    for node in topology.nodes():
        if node.group is not None:
            box = node_box(node)
            direct[node.group] = direct[node.group].union(box) if node.group in direct else box
    children: dict[str | None, list[str]] = {}
    for g in topology.groups():
        children.setdefault(g.parent, []).append(g.id)
    out: dict[str, Box] = {}

    def frame(gid: str, depth: int = 0) -> Box:
        if gid in out:
            return out[gid]
        inner = direct.get(gid)
        if depth < 64:
            for child in children.get(gid, ()):
                box = frame(child, depth + 1)
                inner = box if inner is None else inner.union(box)
        if inner is None:
            inner = Box(0.0, 0.0, NODE_SIZE * 2, NODE_SIZE)
        out[gid] = inner.grown(GROUP_PAD, TITLE_ROOM)
        return out[gid]

    for g in topology.groups():
        frame(g.id)
    return out


# ------------------------------------------------------------------ folders
def write_folder(path: str | os.PathLike[str], files: Mapping[str, bytes]) -> None:
    """Write ``files`` (relative name -> content) as the folder ``path``, all or nothing.

    The files go to a temporary folder beside ``path`` first, and only when every one is
    written does it take ``path``'s place, so a failed export leaves no half-written
    folder.  An existing folder is replaced only when it holds nothing but files of the
    same names (an earlier export of the same kind); anything else there is refused
    rather than deleted.

    Raises
    ------
    AtomicWriteError
        The folder cannot be written (an `OSError` whose message names it).
    ExportFormatError
        ``path`` is a file, or a folder holding other files.
    """
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise ExportFormatError(f"{target}: exists and is not a folder")
    if target.is_dir():
        present = {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()}
        foreign = sorted(present - set(files))
        if foreign:
            raise ExportFormatError(
                f"{target}: the folder holds other files ({foreign[0]}…); "
                "export to a new or empty folder"
            )
    temp = target.with_name(f".{target.name}.tmp-{secrets.token_hex(4)}")
    try:
        temp.mkdir()
        for name, data in sorted(files.items()):
            dest = temp / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(dest, data)
        if target.is_dir():
            old = target.with_name(f".{target.name}.old-{secrets.token_hex(4)}")
            os.replace(target, old)
            os.replace(temp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(temp, target)
    except OSError as err:
        with contextlib.suppress(OSError):
            shutil.rmtree(temp)
        if isinstance(err, AtomicWriteError):
            raise
        raise AtomicWriteError(target, err, existed=target.exists()) from err
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(temp)
        raise


_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")


def csv_bytes(rows: list[list]) -> bytes:
    """``rows`` as UTF-8 CSV through the house writer (`safe_text.csv_writer`: a cell
    beginning with = + - @, a tab or a CR is prefixed with ``'``); NUL and lone
    surrogates, which no CSV reader takes, become U+FFFD."""
    out = io.StringIO()
    writer = csv_writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow([_NOT_TEXT.sub("\ufffd", c) if isinstance(c, str) else c for c in row])
    return out.getvalue().encode("utf-8")


def unique_names(topology: Topology) -> dict[str, str]:
    """Node id -> a name no other node has, for formats that identify devices by name
    (DOT, NetBox, the cabling plan).  A name two nodes share is qualified by their
    groups' names, innermost first, until it is unique (``Node 5/GPU 0``); what is
    still shared then gets `` (2)``, `` (3)`` in structural order."""
    nodes = sorted_nodes(topology)
    chains: dict[str, list[str]] = {}
    for n in nodes:
        chain, group, seen = [], n.group, set()
        while group is not None and group not in seen and topology.has_group(group):
            seen.add(group)
            g = topology.group(group)
            chain.append(g.name)
            group = g.parent
        chains[n.id] = chain
    names = {n.id: n.name for n in nodes}
    for depth in range(1, 1 + max((len(c) for c in chains.values()), default=0)):
        counts: dict[str, int] = {}
        for name in names.values():
            counts[name] = counts.get(name, 0) + 1
        clashing = [n for n in nodes if counts[names[n.id]] > 1]
        if not clashing:
            break
        for n in clashing:
            if depth <= len(chains[n.id]):
                names[n.id] = "/".join([*reversed(chains[n.id][:depth]), n.name])
    out: dict[str, str] = {}
    taken: set[str] = set()
    for n in nodes:
        name, k = names[n.id], 1
        while name in taken:
            k += 1
            name = f"{names[n.id]} ({k})"
        taken.add(name)
        out[n.id] = name
    return out
