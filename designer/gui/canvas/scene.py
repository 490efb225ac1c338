"""`FabricScene`: graphics items that mirror the open design, both ways.

The scene follows the `Topology`'s ``changed`` event, which carries each edit's item
events in order (one per command however many items it touches, see
`designer.model.events`), and adds, removes or updates items; it never edits items'
models directly.  User gestures on the scene (moving nodes, dragging
a group: `designer.gui.canvas.pointer`) become model commands pushed on the `Document`,
whose events then update the items — one direction of data, as ``../shared/design.md``
describes.

View state lives here too, outside the model and the undo stack: which groups are
collapsed (`collapsed`, see `designer.gui.canvas.collapse`), the theme, and the
`Schematic` far-out views paint.  Work that a burst of model events would repeat (fitting
group frames, re-bundling collapsed links) is deferred to one `refresh` per event-loop
turn.
"""

from __future__ import annotations

from collections import defaultdict

from PySide6.QtCore import QLineF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPainter
from PySide6.QtWidgets import (
    QGraphicsScene,
)

from designer.collector import collector_paused
from designer.gui.canvas import collapse
from designer.gui.canvas.drags import GRID, NodeDrag
from designer.gui.canvas.folding import FoldingMixin
from designer.gui.canvas.groups import fit_frames, paint_titles
from designer.gui.canvas.items import (
    BundleItem,
    GroupItem,
    LinkItem,
    NodeItem,
    link_color,
)
from designer.gui.canvas.pointer import PointerMixin
from designer.gui.canvas.schematic import Schematic
from designer.gui.canvas.style import THEME_MODES, Theme, system_theme, theme_for
from designer.gui.document import Document
from designer.gui.model_events import ModelSlot
from designer.model.errors import DesignError
from designer.model.events import Edit
from designer.model.topology import Group, Link, Node, Topology

PARALLEL_GAP = 7.0
#: Designs with at least this many nodes open with their outermost groups collapsed
#: (about 3,000 GPUs: beyond it an item per node and link takes seconds to make).
OPEN_COLLAPSED_NODES = 8_000
BUILD_PROGRESS_EVERY = 4096  # link items made between two `build_progress` signals
COLLAPSED_STEPS = 4  # `build_progress` steps of a big design opened collapsed


class FabricScene(FoldingMixin, PointerMixin, QGraphicsScene):
    """Items for every node, link bundle and group of ``document.topology``.

    Attributes
    ----------
    nodes, links, groups : dict
        `NodeItem`, `LinkItem` and `GroupItem` by model id.
    bundles : dict
        `BundleItem` by pair of visible ends, while groups are collapsed.
    collapsed : set of str
        Ids of collapsed groups (change with `collapse`, `expand`, `set_collapsed`).
    schematic : Schematic
        What views paint when zoomed far out.

    Signals
    -------
    message(str)
        A one-line message for the status bar (a refused edit, say).
    theme_changed(object)
        The canvas theme changed (the new `Theme`).
    collapsed_changed()
        Groups were collapsed or expanded.
    build_progress(int, int)
        While a big design's items are made (``done``, ``total``): every
        `BUILD_PROGRESS_EVERY` links, or each of the `COLLAPSED_STEPS` steps of a design
        opened collapsed (frames, bundling, items, bundle items): for a progress bar,
        which must repaint itself (the event loop does not run meanwhile).
    """

    message = Signal(str)
    theme_changed = Signal(object)
    collapsed_changed = Signal()
    build_progress = Signal(int, int)

    def __init__(self, document: Document, theme: Theme | None = None, parent=None):
        super().__init__(parent)
        self.document = document
        self.theme_mode = "system" if theme is None else ("dark" if theme.dark else "light")
        self.theme = theme or system_theme()
        self._show_grid = True
        self.nodes: dict[str, NodeItem] = {}
        self.links: dict[str, LinkItem] = {}
        self.groups: dict[str, GroupItem] = {}
        self.bundles: dict[tuple[str, str], BundleItem] = {}
        self.collapsed: set[str] = set()
        #: Designs with this many nodes or more open collapsed (`collapse.initial_collapse`).
        self.open_collapsed_above = OPEN_COLLAPSED_NODES
        #: The collapsed groups the design opened with: zooming in on one opens it.
        self.auto_collapsed: set[str] = set()
        self._link_values = None  # (ids, values, colour_of, positions): set_link_values
        self._bundle_index = None
        self._bundle_keys = None  # link ids of the rows the bundles were made from
        self.overlays: set = set()  # temporary items far-out views must still draw
        self.schematic = Schematic(self)
        self._design_rect = QRectF()
        self._topology: Topology | None = None
        self._follow = ModelSlot(self, self._on_topology_changed)
        self._drag: NodeDrag | None = None
        self._titles: list | None = None  # (frame, name) of expanded groups, outer first
        self._dirty_groups = False
        self._dirty_collapse = False
        self._repaint_pending = False
        self._selection_dropped = False  # selected items removed silently (see _remove_item)
        # A recolour in slices (the analysis overlay) holds repaints until its last slice:
        # each repaint of a far-out view rebuilds the schematic's link batches.
        self.recolour_held = False
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(0)
        self._refresh_timer.timeout.connect(self.refresh)
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        self.selectionChanged.connect(self._on_self_selection_changed)
        document.topology_replaced.connect(self._on_document_topology_replaced)
        app = QGuiApplication.instance()
        if app is not None:
            app.styleHints().colorSchemeChanged.connect(self._on_style_hints_color_scheme_changed)
        self._attach(document.topology)

    # ------------------------------------------------------------ model -> items
    def _attach(self, topo: Topology) -> None:
        self._follow.watch(None)
        with collector_paused():  # an item and its wrapper per node and link
            self._build_items(topo)
        self._follow.watch(topo.events.changed)

    def _build_items(self, topo: Topology) -> None:
        self._topology = topo
        self.clear()
        self.overlays.clear()
        for d in (self.nodes, self.links, self.groups, self.bundles):
            d.clear()
        self._link_values = None
        self._bundle_index = None
        for group in topo.groups():
            self._add_group_item(group)
        raw = {gid: item.group for gid, item in self.groups.items()}
        self.collapsed = collapse.initial_collapse(raw, len(topo), self.open_collapsed_above)
        self.auto_collapsed = set(self.collapsed)
        self._dirty_groups = True
        if self.collapsed:
            # A big design: its SUs (or pods) as boxes, with items only for what shows.
            self.build_progress.emit(0, COLLAPSED_STEPS)
            self._refresh_groups()
            self.build_progress.emit(1, COLLAPSED_STEPS)
            self._apply_collapse(report=True)
        else:
            for node in topo.nodes():
                self._add_node_item(node)
            self._add_link_items(list(topo.links()))
        self.refresh()

    def _add_link_items(self, links: list[Link]) -> None:
        """Items for ``links`` (every link between two nodes with items: a pair's
        parallel bundles are spread together), reporting `build_progress`."""
        # Offsets for parallel bundles in one pass (re-spreading per added link is O(n^2)).
        pairs: dict[frozenset, list[Link]] = defaultdict(list)
        for link in links:
            pairs[frozenset((link.a, link.b))].append(link)
        offsets = {}
        for same in pairs.values():
            if len(same) > 1:
                offsets.update(self._parallel_offsets(same[0].a, same))
        report = len(links) >= BUILD_PROGRESS_EVERY  # (a big design: seconds of work)
        for i, link in enumerate(links, start=1):
            self._add_link_item(link, offsets.get(link.id, 0.0), spread=False)
            if report and i % BUILD_PROGRESS_EVERY == 0:
                self.build_progress.emit(i, len(links))
        if report and len(links) % BUILD_PROGRESS_EVERY:
            self.build_progress.emit(len(links), len(links))

    def _on_topology_changed(self, edit: Edit) -> None:
        """Mirror one edit of the design, event by event in the order they happened
        (the item slots defer the bulk work to one `refresh`)."""
        slots = self._item_slots
        for name, args in edit:
            slot = slots.get(name)
            if slot is not None:  # (settings changes have no item)
                slot(*args)

    @property
    def _item_slots(self) -> dict:
        return {
            "node_added": self._on_node_added,
            "node_removed": self._on_node_removed,
            "node_changed": self._on_node_changed,
            "node_moved": self._on_node_moved,
            "link_added": self._on_link_added,
            "link_removed": self._on_link_removed,
            "link_changed": self._on_link_changed,
            "group_added": self._on_group_added,
            "group_removed": self._on_group_removed,
            "group_changed": self._on_group_changed,
        }

    def _on_document_topology_replaced(self, topo: Topology) -> None:
        self._attach(topo)
        self.collapsed_changed.emit()

    def _add_node_item(self, node: Node) -> NodeItem:
        item = NodeItem(node, self.theme)
        self.addItem(item)
        self.nodes[node.id] = item
        return item

    def _add_group_item(self, group: Group) -> GroupItem:
        item = GroupItem(group, self.theme)
        self.addItem(item)
        self.groups[group.id] = item
        return item

    def _tech_look(self, link: Link) -> tuple:
        tech = self.document.topology.catalog.tech(link.tech)
        return link_color(tech.protocol, tech.family), tech.gbps * link.count

    def _add_link_item(self, link: Link, offset: float = 0.0, spread: bool = True) -> LinkItem:
        color, gbps = self._tech_look(link)
        item = LinkItem(link, self.nodes[link.a], self.nodes[link.b], color, gbps, self.theme,
                        offset)
        self.addItem(item)
        self.links[link.id] = item
        if spread:
            self._spread_parallel(link.a, link.b)
        return item

    @staticmethod
    def _parallel_offsets(a: str, same: list) -> dict[str, float]:
        same = sorted(same, key=lambda li: li.id)
        out = {}
        for i, li in enumerate(same):
            sign = 1 if li.a == a else -1  # offsets are relative to each link's a->b
            out[li.id] = sign * (i - (len(same) - 1) / 2) * PARALLEL_GAP
        return out

    def _spread_parallel(self, a: str, b: str) -> None:
        """Offset parallel bundles between ``a`` and ``b`` so each stays visible."""
        same = [li for li in self.nodes[a].links if {li.link.a, li.link.b} == {a, b}]
        offsets = self._parallel_offsets(a, [li.link for li in same])
        for li in same:
            if li.offset != offsets[li.link_id]:
                li.offset = offsets[li.link_id]
                li.update_path()

    def _changed(self, groups: bool = True, collapse_too: bool = False,
                 links_only: bool = False, link_item=None) -> None:
        """Note a model change; the deferred `refresh` does the bulk work once.
        ``links_only``: only links changed, the schematic keeps its nodes and frames;
        ``link_item``: only that link changed, the schematic moves just it."""
        self._titles = None
        self._dirty_groups |= groups
        self._dirty_collapse |= collapse_too and bool(self.collapsed)
        if link_item is not None and not self.collapsed:
            self.schematic.recolour(link_item)
        else:
            self.schematic.invalidate(links_only=links_only and not self.collapsed)
        self._refresh_timer.start()

    def _on_node_added(self, node: Node) -> None:
        if not (self.collapsed and self._box_of(node.group) is not None):
            self._add_node_item(node)  # (inside a box: made when the box opens)
        self._changed(collapse_too=True)

    def _remove_item(self, item) -> None:
        """Remove ``item``; a selected one without announcing it: Qt emits
        selectionChanged for every selected item removed and every listener rescans the
        selection, quadratic when undo removes a large selected paste.  `refresh`
        announces the change once."""
        if item.isSelected():
            blocked = self.blockSignals(True)
            try:
                self.removeItem(item)
            finally:
                self.blockSignals(blocked)
            self._selection_dropped = True
            self._refresh_timer.start()
        else:
            self.removeItem(item)

    def _on_node_removed(self, node: Node) -> None:
        item = self.nodes.pop(node.id, None)
        if item is not None:
            self._remove_item(item)
        self._changed(collapse_too=True)

    def _on_node_changed(self, old: Node, new: Node) -> None:
        item = self.nodes.get(new.id)
        if item is not None:  # (none while a collapsed box hides it)
            item.set_node(new)
        self._changed(collapse_too=old.group != new.group)

    def _on_node_moved(self, node: Node) -> None:
        item = self.nodes.get(node.id)
        if item is not None:
            item.set_node(node)
        self._changed()

    def _on_link_added(self, link: Link) -> None:
        a, b = self.nodes.get(link.a), self.nodes.get(link.b)
        if a is not None and b is not None:  # (else hidden in a box: made when it opens)
            item = self._add_link_item(link)
            if a.hidden or b.hidden:
                self._set_hidden(item, True)
        self._changed(groups=False, collapse_too=True)

    def _on_link_removed(self, link: Link) -> None:
        item = self.links.pop(link.id, None)
        if item is not None:
            item.detach()
            self._remove_item(item)
            if link.a in self.nodes and link.b in self.nodes:
                self._spread_parallel(link.a, link.b)
        self._changed(groups=False, collapse_too=True)

    def _on_link_changed(self, old: Link, new: Link) -> None:
        # Bundles sum counts and rates by technology: only those re-bundle (a what-if
        # failure of a link inside a collapsed pod changes nothing on the canvas).
        rebundle = (old.count, old.tech) != (new.count, new.tech)
        item = self.links.get(new.id)
        if item is None:  # hidden in a collapsed box that was never opened
            if rebundle:
                self._changed(groups=False, collapse_too=True, links_only=True)
            return
        color, gbps = self._tech_look(new)
        item.set_link(new, color, gbps)
        self._changed(groups=False, collapse_too=rebundle, link_item=item)

    def _on_group_added(self, group: Group) -> None:
        self._add_group_item(group)
        self._changed(collapse_too=True)

    def _on_group_removed(self, group: Group) -> None:
        item = self.groups.pop(group.id, None)
        if item is not None:
            self._remove_item(item)
        if group.id in self.collapsed:
            self.collapsed.discard(group.id)
            self._dirty_collapse = True
        self._changed(collapse_too=True)

    def _on_group_changed(self, old: Group, new: Group) -> None:
        self.groups[new.id].group = new
        self.groups[new.id].update()
        self._changed(collapse_too=old.parent != new.parent)

    # ------------------------------------------------------------ deferred refresh
    @property
    def refresh_pending(self) -> bool:
        """Whether deferred work (frames, bundles, scene rect) waits for the event loop."""
        return self._refresh_timer.isActive()

    def refresh(self) -> None:
        """Do the deferred work now: fit group frames, re-bundle collapsed links, update
        the scene rect.  Runs by itself after model events; tests may call it directly."""
        self._refresh_timer.stop()
        self._titles = None
        if self._dirty_groups:
            self._refresh_groups()
        if self._dirty_collapse:
            self._apply_collapse()
        if self._repaint_pending:
            self._repaint_pending = False
            self.update()
        if self._selection_dropped:
            self._selection_dropped = False
            self.selectionChanged.emit()

    def _refresh_groups(self) -> None:
        """Fit every group's frame around its members and its sub-groups' frames."""
        self._dirty_groups = False
        self._design_rect = fit_frames(self.groups, self.document.topology.node_data().items())
        self._update_scene_rect()
        self.schematic.invalidate()

    def design_rect(self) -> QRectF:
        """The area the design occupies: nodes with their labels and group frames."""
        if self._dirty_groups:
            self._refresh_groups()
        return QRectF(self._design_rect)

    def _update_scene_rect(self) -> None:
        rect = self._design_rect
        # Room to pan past the edges, and to zoom around a point near one.
        margin = max(1500.0, max(rect.width(), rect.height())) if rect.isValid() else 0
        rect = rect.adjusted(-margin, -margin, margin, margin)
        self.setSceneRect(rect.united(QRectF(-500, -400, 1000, 800)))

    @property
    def view_scale(self) -> float:
        """The main canvas view's scale (group grab strips are sized for it)."""
        for view in self.views():
            if getattr(view, "is_canvas", False):
                return view.transform().m11()
        return 1.0

    # ------------------------------------------------------------ theme
    def set_theme(self, theme: Theme) -> None:
        """Repaint everything in ``theme``'s colours."""
        if theme == self.theme:
            return
        self.theme = theme
        for items in (self.nodes, self.links, self.groups, self.bundles):
            for item in items.values():
                item.theme = theme
        self.schematic.invalidate()
        self.update()
        for view in self.views():
            view.resetCachedContent()
        self.theme_changed.emit(theme)

    def set_theme_mode(self, mode: str) -> None:
        """Follow the system's colour scheme (``"system"``) or force ``"light"`` or
        ``"dark"``; the rest of the application is asked to follow where the platform
        allows it."""
        if mode not in THEME_MODES:
            raise DesignError(f"theme: unknown mode {mode!r} (use {', '.join(THEME_MODES)})")
        self.theme_mode = mode
        app = QGuiApplication.instance()
        if app is not None:
            hints = app.styleHints()
            if mode == "system":
                hints.unsetColorScheme()
            else:
                hints.setColorScheme(Qt.ColorScheme.Dark if mode == "dark"
                                     else Qt.ColorScheme.Light)
        self.set_theme(theme_for(mode))

    def _on_style_hints_color_scheme_changed(self, _scheme) -> None:
        if self.theme_mode == "system":
            self.set_theme(system_theme())

    # ------------------------------------------------------------ recolouring
    def links_recoloured(self, item=None) -> None:
        """Link colours changed (not geometry): one repaint soon, and the schematic moves
        ``item`` to its new batch (every link's batch is rebuilt when no item is named).
        No repaint while a sliced recolour holds them (`recolour_held`)."""
        if item is None:
            self.schematic.invalidate(links_only=True)
        else:
            self.schematic.recolour(item)
        if not self.recolour_held:
            self.request_repaint()

    def request_repaint(self) -> None:
        """One repaint of the scene soon (after the deferred refresh)."""
        if not self._repaint_pending:
            self._repaint_pending = True
            self._refresh_timer.start()

    def set_link_colors(self, colors: dict[str, QColor | None]) -> None:
        """Recolour many links at once (``None`` restores the technology colour).  Links
        hidden in a collapsed group that was never opened have no item and are skipped
        (`set_link_values` colours their bundles)."""
        for lid, color in colors.items():
            item = self.links.get(lid)
            if item is not None:
                item.color = color if color is not None else item.base_color
        self.links_recoloured()

    def _on_self_selection_changed(self) -> None:
        self.schematic.invalidate()

    # ------------------------------------------------------------ background, titles
    @property
    def show_grid(self) -> bool:
        """Whether the background shows the snapping grid."""
        return self._show_grid

    @show_grid.setter
    def show_grid(self, on: bool) -> None:
        if on != self._show_grid:
            self._show_grid = on
            for view in self.views():  # views cache the background
                view.resetCachedContent()
            self.update()

    def drawForeground(self, painter: QPainter, rect: QRectF) -> None:
        """Group titles above everything (far-out views draw them with the schematic)."""
        if self._titles is None or self._drag is not None:  # frames move while dragged
            self._titles = [(g.frame_rect().translated(g.pos()), g.group.name)
                            for g in sorted(self.groups.values(), key=lambda g: g.depth)
                            if not (g.collapsed or g.hidden)]
        paint_titles(painter, self._titles, rect, self.theme)

    def drawBackground(self, painter: QPainter, rect: QRectF) -> None:
        painter.fillRect(rect, self.theme.background)
        if not self._show_grid:
            return
        scale = painter.worldTransform().m11()
        if scale * GRID < 6:  # grid lines would merge into a grey wash
            return
        painter.setPen(self.theme.grid)
        smooth = painter.testRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)  # crisp and fast
        left = int(rect.left() // GRID) * GRID
        top = int(rect.top() // GRID) * GRID
        lines = []
        x = left
        while x < rect.right():
            lines.append(QLineF(x, rect.top(), x, rect.bottom()))
            x += GRID
        y = top
        while y < rect.bottom():
            lines.append(QLineF(rect.left(), y, rect.right(), y))
            y += GRID
        painter.drawLines(lines)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, smooth)

