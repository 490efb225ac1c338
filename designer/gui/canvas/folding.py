"""`FoldingMixin`: collapsing groups to boxes and back, for `FabricScene`.

View state, not design: which groups are collapsed lives in ``scene.collapsed``, never in
the model or the undo stack.  Applying it hides the members of collapsed groups (nested
groups included), shows each outermost collapsed group as a box, and replaces the links
that leave a box by one aggregated `BundleItem` per pair of visible ends (the grouping
itself is `designer.gui.canvas.collapse`, which needs no Qt).

Items are made lazily: a big design opens collapsed (`collapse.initial_collapse`) and
the members of a box that was never opened have no node or link items at all; opening
it makes them.  Colours by value (`set_link_values`: utilisation after a solve) reach
the bundles too, each showing its busiest link, so a collapsed pod keeps its colours.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping

import numpy as np
from PySide6.QtGui import QColor

from designer.gui.canvas import collapse
from designer.gui.canvas.items import BundleItem, link_color


class FoldingMixin:
    """Collapse/expand for a scene with ``nodes``, ``links``, ``groups``, ``bundles``,
    ``collapsed`` and ``collapsed_changed`` (see `FabricScene`)."""

    def _box_of(self, group: str | None) -> str | None:
        """The outermost collapsed group hiding a node of ``group`` (None if visible)."""
        top = None
        seen = set()
        while group is not None and group in self.groups and group not in seen:
            seen.add(group)
            if group in self.collapsed:
                top = group
            group = self.groups[group].group.parent
        return top

    def collapse(self, group_id: str) -> None:
        """Show group ``group_id`` as one box with aggregated links (the user's choice:
        zooming in no longer opens it, see `auto_collapsed`)."""
        self.auto_collapsed.discard(group_id)
        self.set_collapsed(self.collapsed | {group_id})

    def expand(self, group_id: str) -> None:
        """Show group ``group_id``'s members again."""
        self.set_collapsed(self.collapsed - {group_id})

    def open_boxes_in(self, visible, share_of, min_share: float) -> list[str]:
        """Open the boxes the design was opened collapsed with (`auto_collapsed`) that
        fill at least ``min_share`` of a view zoomed in on them: ``visible`` is the
        view's scene rect, ``share_of(rect)`` the share of the view a scene rect covers.
        Returns the ids opened."""
        opened = []
        for gid in sorted(self.auto_collapsed & self.collapsed):
            item = self.groups[gid]
            box = item.box_rect().translated(item.pos())
            if box.intersects(visible) and share_of(box) >= min_share:
                opened.append(gid)
        if opened:
            self.set_collapsed(self.collapsed - set(opened))
        return opened

    def toggle_collapsed(self, group_id: str) -> None:
        if group_id in self.collapsed:
            self.expand(group_id)
        else:
            self.collapse(group_id)

    def collapse_kind(self, kind: str) -> None:
        """Collapse every group of ``kind`` (``node``, ``rack``, ``su``...)."""
        self.set_collapsed(self.collapsed | {g for g, i in self.groups.items()
                                             if i.group.kind == kind})

    def expand_all(self) -> None:
        self.set_collapsed(set())

    def set_collapsed(self, group_ids) -> None:
        """Make exactly ``group_ids`` the collapsed groups (unknown ids are ignored)."""
        wanted = {g for g in group_ids if g in self.groups}
        if wanted == self.collapsed:
            return
        self.auto_collapsed &= wanted  # an opened box is the user's to close again
        self.collapsed = wanted
        if self._dirty_groups:
            self._refresh_groups()
        self._apply_collapse()
        self.collapsed_changed.emit()

    def _set_hidden(self, item, hidden: bool) -> None:
        if item.hidden != hidden:
            item.hidden = hidden
            item.setVisible(not hidden)

    def _apply_collapse(self, report: bool = False) -> None:
        """Hide what collapsed groups hold, make items for what is visible and has none
        yet (the members of a group opened for the first time), and draw bundles for
        links that leave a box.  Works on the design's columns (`collapse.fold`).
        ``report``: emit ``build_progress`` after each step (steps 2 to 4 of 4)."""
        self._dirty_collapse = False
        topo = self.document.topology
        cols = topo.columns()
        raw = {gid: item.group for gid, item in self.groups.items()}
        top = collapse.outermost_collapsed(raw, self.collapsed)
        for gid, item in self.groups.items():
            box = top[gid]
            item.set_collapsed(box == gid)
            self._set_hidden(item, box is not None and box != gid)
        box_ids = sorted(self.collapsed)
        code = {gid: i for i, gid in enumerate(box_ids)}
        group_box = {gid: code[box] for gid, box in top.items() if box is not None}
        data = topo.node_data()  # (not the graph: its edges may not be written yet)
        node_box = np.fromiter((group_box.get(data[nid]["group"], -1) for nid in cols.node_ids),
                               np.int64, len(cols.node_ids))
        keys = self._key_array(cols)
        tech_gbps = np.array([topo.catalog.tech(t).gbps for t in cols.tech_names] or [0.0])
        found, hidden = collapse.fold(cols.node_ids, node_box, box_ids, cols.a_idx,
                                      cols.b_idx, keys, cols.counts, cols.tech_of,
                                      cols.tech_names, tech_gbps)
        if report:
            self.build_progress.emit(2, 4)
        self._materialise(topo, cols, node_box, hidden)
        if report:
            self.build_progress.emit(3, 4)
        # The bundles' rows index these columns' links until the next re-bundling (a
        # solve's colours may arrive after an edit and before the deferred refresh).
        self._bundle_keys = keys
        kinds = [cols.kind_names[k] for k in cols.kind_of[node_box >= 0].tolist()]
        boxes_of = node_box[node_box >= 0].tolist()
        members: dict[int, list[str]] = defaultdict(list)
        for b, kind in zip(boxes_of, kinds, strict=True):
            members[b].append(kind)
        for i, gid in enumerate(box_ids):
            self.groups[gid].summary = collapse.summary(members.get(i, ()))
        for item in self.nodes.values():
            self._set_hidden(item, group_box.get(item.node.group, -1) >= 0)
        pos = cols.link_pos
        for lid, item in self.links.items():
            row = pos.get(lid)
            self._set_hidden(item, row is not None and bool(hidden[row]))
        self._replace_bundles(topo, found)
        if report:
            self.build_progress.emit(4, 4)
        self._titles = None
        self.schematic.invalidate()
        self.update()

    @staticmethod
    def _key_array(cols) -> np.ndarray:
        keys = np.empty(len(cols.keys), dtype=object)
        keys[:] = cols.keys
        return keys

    def _materialise(self, topo, cols, node_box: np.ndarray, hidden: np.ndarray) -> None:
        """Items for the visible nodes and links that have none (big designs open with
        their groups collapsed and no items for what those hide)."""
        nodes = self.nodes
        for nid, box in zip(cols.node_ids, node_box.tolist(), strict=True):
            if box < 0 and nid not in nodes:
                self._add_node_item(topo.node(nid))
        links, keys = self.links, cols.keys
        new = [topo.link(keys[r]) for r in np.flatnonzero(~hidden).tolist()
               if keys[r] not in links]
        if new:
            self._add_link_items(new)
            if self._link_values is not None:
                self._colour_items([links[lk.id] for lk in new])

    def _replace_bundles(self, topo, found: dict) -> None:
        """Make ``found`` the bundles; one that did not change keeps its item (an edit
        of a big collapsed design re-bundles thousands of them)."""
        old = self.bundles
        self.bundles = {}
        looks: dict[str, tuple] = {}
        for key, b in found.items():
            for t in b.techs:
                if t not in looks:
                    tech = topo.catalog.tech(t)
                    looks[t] = (link_color(tech.protocol, tech.family), tech.name)
            colors = {looks[t][0].rgba() for t in b.techs}
            color = (looks[next(iter(b.techs))][0] if len(colors) == 1
                     else self.theme.mixed_link)
            techs = ", ".join(f"{n} x {looks[t][1]}" for t, n in b.techs.most_common())
            ends = [self.nodes[k[2:]] if k[0] == "n" else self.groups[k[2:]] for k in key]
            item = old.pop(key, None)
            same = item is not None and (item.a, item.b) == tuple(ends) and (
                (item.count, item.gbps, item.summary, item.base_color.rgba())
                == (b.count, b.gbps, techs, color.rgba()))
            if same:
                item.link_ids, item.rows = b.link_ids, b.rows
            else:
                if item is not None:
                    item.detach()
                    self.removeItem(item)
                item = BundleItem(ends[0], ends[1], b.link_ids, b.count, b.gbps, color,
                                  self.theme, techs)
                item.rows = b.rows
                self.addItem(item)
            self.bundles[key] = item
        for item in old.values():
            item.detach()
            self.removeItem(item)
        self._bundle_index = None
        self._colour_bundles()

    # ------------------------------------------------------------ values on bundles
    def set_link_values(self, ids, values, colour_of: Callable[[float], QColor],
                        positions: Callable[[], Mapping[str, int]] | None = None) -> None:
        """Colour by a value per link (utilisation, say): ``values[i]`` belongs to link
        ``ids[i]``; ``colour_of(value)`` is its colour.  An aggregated bundle of a
        collapsed group takes the colour of the largest value among its links (the
        busiest link shows through the box), and the items made later for a group's
        links when it opens take theirs.  Link items already on the canvas keep the
        colour their caller gives them (`LinkItem.set_color`): this does not walk them.
        ``positions()`` maps an id to its index (built here when not given).
        """
        values = np.asarray(values, dtype=float)
        if positions is None:
            index = {lid: i for i, lid in enumerate(ids)}
            positions = lambda: index  # noqa: E731
        self._link_values = (ids, values, colour_of, positions)
        self._colour_bundles()

    def clear_link_values(self) -> None:
        """Back to technology colours on bundles (`set_link_values` no longer holds)."""
        if self._link_values is not None:
            self._link_values = None
            self._colour_bundles()

    def _colour_items(self, items: list) -> None:
        """Colour newly made link items from the values of `set_link_values`."""
        _ids, values, colour_of, positions = self._link_values
        index = positions()
        for item in items:
            i = index.get(item.link_id)
            item.color = colour_of(float(values[i])) if i is not None else item.base_color
            item._rekey()

    def _colour_bundles(self) -> None:
        bundles = list(self.bundles.values())
        if self._link_values is None:
            for item in bundles:
                if item.color is not item.base_color:
                    item.set_color(None)
            return
        if not bundles:
            return
        _ids, values, colour_of, positions = self._link_values
        index = positions()
        if self._bundle_index is None or self._bundle_index[0] is not index:
            # Rows of the bundles' links in the values, concatenated (-1: no value).
            rows = np.concatenate([b.rows for b in bundles])
            keys = self._bundle_keys
            at = np.fromiter((index.get(k, -1) for k in keys[rows].tolist()), np.int64,
                             len(rows))
            starts = np.cumsum([0] + [len(b.rows) for b in bundles[:-1]])
            self._bundle_index = (index, at, starts)
        _, at, starts = self._bundle_index
        if len(at) and len(values):
            picked = np.where(at >= 0, values[np.clip(at, 0, len(values) - 1)], -np.inf)
            top = np.maximum.reduceat(picked, starts).tolist()
        else:
            top = [-np.inf] * len(bundles)
        for item, v in zip(bundles, top, strict=True):
            c = colour_of(v) if v > -np.inf else item.base_color
            if item.color is not c:
                item.set_color(c)

    def reveal(self, node_id: str) -> None:
        """Expand the collapsed groups that hide ``node_id`` (Find does this)."""
        item = self.nodes.get(node_id)
        topo = self.document.topology
        if item is None and not topo.has_node(node_id):
            return
        if item is not None and not item.hidden:
            return
        hiding, g = set(), (item.node if item is not None else topo.node(node_id)).group
        while g is not None and g in self.groups and g not in hiding:
            hiding.add(g)
            g = self.groups[g].group.parent
        self.set_collapsed(self.collapsed - hiding)
