"""What the soak test checks and measures: the canvas against the model, two designs
against each other, and the process's threads and memory.

The checks return a list of problems, empty when all agree, so a failure names every
disagreement at once:

- `scene_problems`: every node, link and group item shows the model's value and
  position; each link's line joins its two nodes (offset apart from parallel ones); each
  node lists exactly its links; collapsed groups hide what they hold and aggregated
  bundles stand for the links leaving them; and the scene holds no other item beyond a
  transient overlay or two (a leaked or stale item is a problem too).
- `quick_scene_problems`: the cheap part, one item per model id (run after every step).
- `state_diff`: two `Topology.state()` snapshots (a saved file against the document,
  the design after undoing everything against the one the window opened with).
- `dock_problems`: the scenario dock shows the design's settings.

`resources` measures threads (Python and native), resident memory and the canvas item
wrappers still alive after a garbage collection.
"""

from __future__ import annotations

import gc
import math
import os
import threading
import weakref
from collections import Counter

import shiboken6
from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtWidgets import QApplication

from designer.gui.canvas.items import BundleItem, GroupItem, LinkItem, NodeItem

#: Items of any other type (overlays: a path halo, a link being drawn) allowed in the scene.
MAX_EXTRA_ITEMS = 2


# ---------------------------------------------------------------------- measurements
def settle() -> None:
    """Run pending deferred deletes and events, then collect garbage."""
    for _ in range(2):
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        QApplication.processEvents()
    gc.collect()


def rss_mb() -> float | None:
    """Resident memory of this process in MiB (Linux), or None elsewhere."""
    try:
        with open("/proc/self/statm") as f:
            resident = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return resident * os.sysconf("SC_PAGE_SIZE") / 2**20


#: The name Qt gives its thread pools' threads (the application's and Qt's own): reused,
#: ended after 30 s idle, so how many are alive at a moment depends on timing, not leaks.
POOLED = "Thread (pooled)"


def _thread_names() -> list[str] | None:
    """The kernel threads' names of this process, or None where unknown."""
    try:
        names = []
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/comm") as f:
                names.append(f.read().strip())
        return names
    except OSError:
        return None


def native_threads() -> int | None:
    """Kernel threads of this process (Qt's included) but Qt's pooled ones, or None
    where unknown."""
    names = _thread_names()
    return None if names is None else sum(1 for n in names if n != POOLED)


def pooled_threads() -> int | None:
    """Qt thread-pool threads alive now, or None where unknown."""
    names = _thread_names()
    return None if names is None else names.count(POOLED)


_KINDS = (NodeItem, LinkItem, GroupItem, BundleItem)

#: Wrappers whose items were deleted before the soak began: left by earlier tests in
#: the same process (the crash-handler tests leave some), not the soak's to account for.
_earlier = weakref.WeakSet()


def _all_wrappers() -> list:
    """Every canvas item wrapper alive, after a full collection (the frozen generation
    included: unfrozen, collected and frozen again, so that wrappers frozen and later
    dropped are not counted as alive)."""
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    try:
        gc.collect()
        return [o for o in gc.get_objects() if isinstance(o, _KINDS)]
    finally:
        if frozen:
            gc.freeze()


def set_aside_earlier_items() -> int:
    """Leave out of `live_items` the wrappers of items already deleted now (call when a
    soak begins); how many there are."""
    for o in _all_wrappers():
        if not shiboken6.isValid(o):
            _earlier.add(o)
    return len(_earlier)


def live_items() -> Counter:
    """Python wrappers of canvas items still alive anywhere (in a scene or not), but
    those `set_aside_earlier_items` found."""
    return Counter(type(o).__name__ for o in _all_wrappers() if o not in _earlier)


def resources(window) -> dict[str, float | int | None]:
    """Threads, memory and canvas objects now (call with the solver idle)."""
    settle()
    items = live_items()
    return {
        "python_threads": threading.active_count(),
        "native_threads": native_threads(),
        "pooled_threads": pooled_threads(),
        "rss_mb": rss_mb(),
        "item_wrappers": sum(items.values()),
        "scene_items": len(window.scene.items()),
        "nodes": len(window.document.topology),
        "undo_steps": window.document.undo_stack.count(),
    }


# ---------------------------------------------------------------------- designs
def state_diff(got: dict, want: dict, limit: int = 8) -> list[str]:
    """What differs between two `Topology.state()` snapshots (empty when equal)."""
    out = []
    for key in ("name", "settings", "overrides"):
        if got[key] != want[key]:
            out.append(f"{key}: {got[key]!r} != {want[key]!r}")
    for key in ("groups", "nodes", "links"):
        a = {x.id: x for x in got[key]}
        b = {x.id: x for x in want[key]}
        out += [f"{key}: extra {a[i]}" for i in sorted(a.keys() - b.keys())[:limit]]
        out += [f"{key}: missing {b[i]}" for i in sorted(b.keys() - a.keys())[:limit]]
        out += [f"{key}: {a[i]} != {b[i]}" for i in sorted(a.keys() & b.keys()) if a[i] != b[i]]
    return out[:limit]


def dock_problems(window) -> list[str]:
    """The scenario dock shows the design's settings."""
    settings = window.document.topology.settings
    dock = window.analysis.scenario
    s = settings["scenario"]
    shown = (dock.collective.currentText(), dock.size.currentData(),
             dock.algorithm.currentText(), dock.routing.currentText(),
             dock.dtype.currentText())
    want = (s["collective"], s["bytes"], s["algorithm"], settings["routing"],
            settings["training"]["grad_dtype"])
    return [] if shown == want else [f"scenario dock shows {shown}, settings are {want}"]


# ---------------------------------------------------------------------- the canvas
def quick_scene_problems(window) -> list[str]:
    """The cheap part of `scene_problems`: one item per model id, nothing else (a node
    or link a collapsed box hides may have none yet: items are made when it opens)."""
    topo, scene = window.document.topology, window.scene
    out = []
    lazy = bool(scene.collapsed)
    nodes_ok = all(map(topo.has_node, scene.nodes)) and (
        len(scene.nodes) <= len(topo) if lazy else len(scene.nodes) == len(topo))
    if not nodes_ok:
        out.append(f"node items {len(scene.nodes)} != model nodes {len(topo)}")
    n_links = topo.graph.number_of_edges()
    links_ok = all(map(topo.has_link, scene.links)) and (
        len(scene.links) <= n_links if lazy else len(scene.links) == n_links)
    if not links_ok:
        out.append(f"link items {len(scene.links)} != links {n_links}")
    if not all(map(topo.has_group, scene.groups)) or \
            len(scene.groups) != sum(1 for _ in topo.groups()):
        out.append("group items differ from the model's groups")
    return out


def scene_problems(window, limit: int = 10) -> list[str]:
    """Everything on the canvas that disagrees with the model (empty when all agree);
    see the module docstring."""
    topo, scene = window.document.topology, window.scene
    model = _Model(topo, scene.collapsed)
    out = []
    # What a collapsed box hides may have no item yet (made when the box opens).
    lazy_nodes = {nid for nid in model.nodes if model.hidden(nid)}
    lazy_links = {lid for lid, lk in model.links.items()
                  if lk.a in lazy_nodes or lk.b in lazy_nodes}
    for name, want, items, lazy in (("node", model.nodes, scene.nodes, lazy_nodes),
                                    ("link", model.links, scene.links, lazy_links),
                                    ("group", model.groups, scene.groups, set())):
        extra = sorted(items.keys() - want.keys())[:5]
        missing = sorted(want.keys() - items.keys() - lazy)[:5]
        if extra or missing:
            out.append(f"{name} items: extra {extra}, missing {missing}")
    if out:
        return out
    pos: dict[str, tuple[float, float]] = {}
    out += _node_problems(scene, model, pos)
    out += _link_problems(scene, model, pos)
    out += _fold_problems(scene, model)
    out += _census_problems(scene, model)
    return out[:limit]


class _Model:
    """The design as the checks need it: values by id and what collapsed groups hide."""

    def __init__(self, topo, collapsed: set[str]):
        self.groups = {g.id: g for g in topo.groups()}
        self.nodes = {n.id: n for n in topo.nodes()}
        self.links = {lk.id: lk for lk in topo.links()}
        self.collapsed = set(collapsed)
        # Per group: the outermost collapsed group among itself and its ancestors.
        self.box = {gid: next((a for a in reversed(self.ancestors(gid)) if a in collapsed),
                              None) for gid in self.groups}

    def ancestors(self, gid: str | None) -> list[str]:
        """``gid`` and its parent chain, innermost first."""
        out: list[str] = []
        while gid is not None and gid in self.groups and gid not in out:
            out.append(gid)
            gid = self.groups[gid].parent
        return out

    def hidden(self, nid: str) -> bool:
        group = self.nodes[nid].group
        return group is not None and self.box.get(group) is not None

    def end(self, nid: str) -> str:
        """The visible end of a node's links: its collapsed box (``g:``) or itself."""
        group = self.nodes[nid].group
        box = self.box.get(group) if group is not None else None
        return f"g:{box}" if box is not None else f"n:{nid}"


def _close(a: float, b: float) -> bool:
    """Equal up to rounding.  A multi-node drag moves each item by Qt's own delta and
    the model by the grabbed node's, which can differ in the last bit; ``setPos`` then
    ignores the correction (Qt compares points fuzzily), so exact equality is too strict.
    """
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _node_problems(scene, model: _Model, pos: dict) -> list[str]:
    """Node items: value, position (filled into ``pos``), in the scene, hidden or not,
    and the list of links each keeps."""
    out = []
    attached: dict[str, list[str]] = {nid: [] for nid in model.nodes}
    for lk in model.links.values():
        attached[lk.a].append(lk.id)
        attached[lk.b].append(lk.id)
    for nid, n in model.nodes.items():
        item = scene.nodes.get(nid)
        if item is None:  # hidden in a box never opened (checked by the caller)
            continue
        p = item.pos()
        pos[nid] = px, py = p.x(), p.y()
        hidden = model.hidden(nid)
        if item.node != n:
            out.append(f"node item {nid}: shows {item.node}, model has {n}")
        if not (_close(px, n.x) and _close(py, n.y)):
            out.append(f"node item {nid} at {(px, py)}, model at {(n.x, n.y)}")
        if item.scene() is not scene:
            out.append(f"node item {nid} is not in the scene")
        if item.hidden != hidden or item.isVisible() == hidden:
            out.append(f"node item {nid}: hidden={item.hidden} visible={item.isVisible()}, "
                       f"expected hidden={hidden}")
        have = sorted(li.link_id for li in item.links)
        if have != sorted(lid for lid in attached[nid] if lid in scene.links):
            out.append(f"node item {nid} lists links {have}, model has {attached[nid]}")
    return out


def _line_ends(item: LinkItem, pos: dict) -> tuple[float, float, float, float]:
    """Where a link item's line should run: between its nodes, shifted by its offset."""
    (ax, ay), (bx, by) = pos[item.a.node_id], pos[item.b.node_id]
    if item.offset:
        dx, dy = bx - ax, by - ay
        length = math.hypot(dx, dy) or 1.0
        sx, sy = -dy / length * item.offset, dx / length * item.offset
        ax, ay, bx, by = ax + sx, ay + sy, bx + sx, by + sy
    return ax, ay, bx, by


def _link_problems(scene, model: _Model, pos: dict) -> list[str]:
    """Link items: value, ends, line geometry, hidden or not; parallel ones apart."""
    out = []
    pairs: dict[frozenset, list[LinkItem]] = {}
    for lid, lk in model.links.items():
        item = scene.links.get(lid)
        if item is None:  # an end hidden in a box never opened
            continue
        pairs.setdefault(frozenset((lk.a, lk.b)), []).append(item)
        if item.link != lk:
            out.append(f"link item {lid}: shows {item.link}, model has {lk}")
        if item.a is not scene.nodes[lk.a] or item.b is not scene.nodes[lk.b]:
            out.append(f"link item {lid} is attached to {item.a.node_id}-{item.b.node_id}")
        if item.scene() is not scene:
            out.append(f"link item {lid} is not in the scene")
        want = _line_ends(item, pos)
        line = item.line
        have = (line.x1(), line.y1(), line.x2(), line.y2())
        if any(abs(h - w) > 1e-6 for h, w in zip(have, want, strict=True)):
            out.append(f"link item {lid}: line {have} does not join its ends {want}")
        hidden = model.hidden(lk.a) or model.hidden(lk.b)
        if item.hidden != hidden or item.isVisible() == hidden:
            out.append(f"link item {lid}: hidden={item.hidden}, expected {hidden}")
    for pair, items in pairs.items():
        first = min(pair)  # offsets in one frame: as seen from the smaller id
        signed = sorted((i.offset if i.link.a == first else -i.offset) for i in items)
        if len(items) == 1 and signed != [0.0]:
            out.append(f"single link {items[0].link_id} is offset by {signed[0]}")
        if len(set(signed)) != len(signed):
            out.append(f"parallel links {sorted(i.link_id for i in items)} overlap: {signed}")
    return out


def _fold_problems(scene, model: _Model) -> list[str]:
    """Group items boxed or hidden as the collapsed set says, and one aggregated bundle
    per pair of visible ends where links leave a box."""
    out = []
    if not model.collapsed <= model.groups.keys():
        out.append(f"collapsed groups not in the design: "
                   f"{sorted(model.collapsed - model.groups.keys())}")
    for gid, g in model.groups.items():
        item = scene.groups[gid]
        above = model.box.get(g.parent) if g.parent is not None else None
        boxed, hidden = model.box[gid] == gid, above is not None
        if item.group != g:
            out.append(f"group item {gid}: shows {item.group}, model has {g}")
        if item.collapsed != boxed or item.hidden != hidden:
            out.append(f"group item {gid}: collapsed={item.collapsed} hidden={item.hidden}, "
                       f"expected {boxed} {hidden}")
    want: dict[tuple[str, ...], list[str]] = {}
    for lid, lk in model.links.items():
        ends = sorted((model.end(lk.a), model.end(lk.b)))
        if ends[0] != ends[1] and (ends[0][0] == "g" or ends[1][0] == "g"):
            want.setdefault(tuple(ends), []).append(lid)
    have = {key: sorted(b.link_ids) for key, b in scene.bundles.items()}
    if have != {k: sorted(v) for k, v in want.items()}:
        out.append(f"bundles {sorted(have)} != expected {sorted(want)}")
    return out


def _census_problems(scene, model: _Model) -> list[str]:
    """Nothing in the scene beyond the mirrored items (and a transient overlay or two)."""
    census = Counter(type(i).__name__ for i in scene.items())
    expected = {"NodeItem": len(scene.nodes), "LinkItem": len(scene.links),
                "GroupItem": len(model.groups), "BundleItem": len(scene.bundles)}
    extra = {k: n for k, n in census.items() if k not in expected and n > MAX_EXTRA_ITEMS}
    if any(census[k] != n for k, n in expected.items()) or extra:
        return [f"scene holds {dict(census)}, expected {expected}"]
    return []
