"""`FoldingMixin`: collapsing groups to boxes and back, for `FabricScene`.

View state, not design: which groups are collapsed lives in ``scene.collapsed``, never in
the model or the undo stack.  Applying it hides the members of collapsed groups (nested
groups included), shows each outermost collapsed group as a box, and replaces the links
that leave a box by one aggregated `BundleItem` per pair of visible ends (the grouping
itself is `designer.gui.canvas.collapse`, which needs no Qt).
"""

from __future__ import annotations

from collections import defaultdict

from designer.gui.canvas import collapse
from designer.gui.canvas.items import BundleItem
from designer.model.topology import Link


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
        """Show group ``group_id`` as one box with aggregated links."""
        self.set_collapsed(self.collapsed | {group_id})

    def expand(self, group_id: str) -> None:
        """Show group ``group_id``'s members again."""
        self.set_collapsed(self.collapsed - {group_id})

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
        self.collapsed = wanted
        if self._dirty_groups:
            self._refresh_groups()
        self._apply_collapse()
        self.collapsed_changed.emit()

    def _set_hidden(self, item, hidden: bool) -> None:
        if item.hidden != hidden:
            item.hidden = hidden
            item.setVisible(not hidden)

    def _apply_collapse(self) -> None:
        """Hide what collapsed groups hold and draw bundles for links that leave them."""
        self._dirty_collapse = False
        topo = self.document.topology
        raw = {gid: item.group for gid, item in self.groups.items()}
        top = collapse.outermost_collapsed(raw, self.collapsed)
        for gid, item in self.groups.items():
            box = top[gid]
            item.set_collapsed(box == gid)
            self._set_hidden(item, box is not None and box != gid)
        node_group = {}
        members: dict[str, list[str]] = defaultdict(list)
        for nid, item in self.nodes.items():
            g = item.node.group
            node_group[nid] = g
            box = top.get(g) if g is not None else None
            self._set_hidden(item, box is not None)
            if box is not None:
                members[box].append(item.node.kind)
        for gid in self.collapsed:
            self.groups[gid].summary = collapse.summary(members.get(gid, ()))

        def gbps_of(lk: Link) -> float:
            return self.links[lk.id].gbps

        found, hidden = collapse.aggregate((li.link for li in self.links.values()), node_group,
                                           top, gbps_of)
        for lid, item in self.links.items():
            self._set_hidden(item, lid in hidden)
        for key in list(self.bundles):
            item = self.bundles.pop(key)
            item.detach()
            self.removeItem(item)
        for key, b in found.items():
            ends = [self.nodes[k[2:]] if k[0] == "n" else self.groups[k[2:]] for k in key]
            colors = {self.links[lid].base_color.rgba() for lid in b.link_ids}
            color = (self.links[b.link_ids[0]].base_color if len(colors) == 1
                     else self.theme.mixed_link)
            techs = ", ".join(f"{n} x {topo.catalog.tech(t).name}" for t, n in
                              b.techs.most_common())
            item = BundleItem(ends[0], ends[1], b.link_ids, b.count, b.gbps, color,
                              self.theme, techs)
            self.addItem(item)
            self.bundles[key] = item
        self._titles = None
        self.schematic.invalidate()
        self.update()

    def reveal(self, node_id: str) -> None:
        """Expand the collapsed groups that hide ``node_id`` (Find does this)."""
        item = self.nodes.get(node_id)
        if item is None or not item.hidden:
            return
        hiding, g = set(), item.node.group
        while g is not None and g in self.groups and g not in hiding:
            hiding.add(g)
            g = self.groups[g].group.parent
        self.set_collapsed(self.collapsed - hiding)
