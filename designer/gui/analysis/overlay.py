"""Solver results on the canvas: utilisation colours, a legend, link tooltips, what-if
failures from the context menu, and the paths of a selected GPU's flows.

Colours come from *cividis*, a colour map designed to read the same with colour-vision
deficiencies; idle links fade to grey, and saturated bottleneck links (>= 99 %) are
drawn in vermillion so they stand out from the map.  Recolouring never changes item
geometry (``LinkItem.set_color``), so it is cheap on large designs.

A link's tooltip lists the flows on it (with the GPUs at the ends of their transfer
there, where the link tells), and selecting a GPU (or a few) outlines the links that
carry its traffic (`PathHalo`); both read the focus result's plan through a `FlowIndex`
built on first use, never for every link of every result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import numpy as np
import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QEvent, QObject, QPoint, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QLinearGradient, QPainter, QPalette
from PySide6.QtWidgets import QMenu, QToolTip, QWidget

from designer.gui.analysis.paths import PathHalo
from designer.gui.analysis.runner import AnalysisResult, SolveRunner
from designer.gui.canvas.items import LinkItem, NodeItem
from designer.gui.canvas.scene import FabricScene
from designer.gui.canvas.view import FabricView
from designer.gui.document import Document
from designer.gui.idle import IdleWork
from designer.model.commands import SetLinkProps, SetNodeProps
from designer.model.errors import DesignError
from designer.solver import FlowIndex, FlowRow

CMAP = pg.colormap.get("cividis")
SATURATED = QColor("#D55E00")
IDLE = QColor(150, 150, 150, 90)
CHUNK = 4000  # links reset to technology colours per turn of the event loop (~10 ms)
SLICE_S = 0.012  # time spent recolouring per turn of the event loop
STRIDE = 256  # links between clock checks
TOOLTIP_FLOWS = 8  # flows named in a link's tooltip before "and N more"
MAX_PATH_GPUS = 8  # selections with more GPUs outline nothing (a whole pod is noise)
MAX_PATH_SELECTION = 256  # larger selections are not searched for GPUs at all
# A lookup table: mapping through the colour map per link is the slow part of a recolour.
_LUT = [CMAP.map(i / 255, mode="qcolor") for i in range(256)]


def util_color(u: float) -> QColor:
    """Colour of a link at utilisation ``u`` (0..1)."""
    if u <= 1e-9:
        return IDLE
    if u >= 0.99:
        return SATURATED
    return _LUT[int(u * 255)]


class Legend(QWidget):
    """A small colour bar in the corner of the canvas, in the application palette's
    colours (so it follows the light and dark themes).  Subclasses show another scale
    by overriding `colour_at`, `END_COLOUR` and `labels`."""

    END_COLOUR = SATURATED
    WIDTH = 230

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setFixedSize(self.WIDTH, 46)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)

    def colour_at(self, t: float) -> QColor:
        """The bar's colour at ``t`` in [0, 1]."""
        return CMAP.map(t * 0.99, mode="qcolor")

    def labels(self) -> tuple[str, str, str, str]:
        """(bar's low end, high end, the swatch after it, the caption)."""
        return "0 %", "99 %", "saturated", "link utilisation (busiest direction)"

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        fill = QColor(palette.color(QPalette.ColorRole.Base))
        fill.setAlpha(225)
        p.setBrush(fill)
        p.setPen(palette.color(QPalette.ColorRole.Mid))
        p.drawRoundedRect(QRectF(0.5, 0.5, self.width() - 1, self.height() - 1), 5, 5)
        bar = QRectF(10, 8, 150, 12)
        grad = QLinearGradient(bar.topLeft(), bar.topRight())
        for i in range(11):
            grad.setColorAt(i / 10, self.colour_at(i / 10))
        p.fillRect(bar, grad)
        p.fillRect(QRectF(bar.right() + 6, bar.top(), 14, 12), self.END_COLOUR)
        p.setPen(palette.color(QPalette.ColorRole.Text))
        font = p.font()
        font.setPointSize(7)
        p.setFont(font)
        low, high, end, caption = self.labels()
        left, right = Qt.AlignmentFlag.AlignLeft, Qt.AlignmentFlag.AlignRight
        p.drawText(QRectF(bar.left(), 22, 50, 14), low, left)
        p.drawText(QRectF(bar.right() - 50, 22, 50, 14), high, right)
        p.drawText(QRectF(bar.right() + 2, 22, 80, 14), end, left)
        p.drawText(QRectF(bar.left(), 32, self.width() - 20, 12), caption, left)


class PerLink(Mapping):
    """A read-only ``{link id: value}`` view of a per-link array (values as floats).

    ``positions`` gives the id -> position mapping when first needed (a tooltip):
    `Snapshot.link_positions`, shared between snapshots while no link is added or
    removed (building a dict of 100,000 ids holds the GUI thread for tens of ms)."""

    __slots__ = ("_index", "_positions", "ids", "values")

    def __init__(self, ids: tuple[str, ...], values: np.ndarray,
                 positions: Callable[[], Mapping[str, int]]):
        self.ids, self.values = ids, values
        self._positions, self._index = positions, None

    def positions(self) -> Mapping[str, int]:
        """``{link id: position in ids}``."""
        if self._index is None:
            self._index = self._positions()
        return self._index


    def __getitem__(self, link_id: str) -> float:
        return float(self.values[self.positions()[link_id]])

    def __iter__(self):
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, link_id: object) -> bool:
        return link_id in self.positions()


class AnalysisOverlay(QObject):
    """Connects a `SolveRunner` to the canvas.

    Signals
    -------
    message(str)
    """

    message = Signal(str)

    def __init__(self, document: Document, scene: FabricScene, view: FabricView,
                 runner: SolveRunner, parent: QObject | None = None):
        super().__init__(parent)
        self.document = document
        self.scene = scene
        self.view = view
        self.runner = runner
        self.by_utilisation = True
        self.utilisation: Mapping[str, float] = {}
        self.load: Mapping[str, float] = {}
        self.capacity: Mapping[str, float] = {}
        # Per-link (utilisation, load, capacity) the links show instead of the
        # scenario's (the jobs' simulation, `show_instead`); None: the scenario's.
        self.instead: tuple[Mapping[str, float], ...] | None = None
        self._instead_current: Callable[[], bool] = lambda: False
        self.result: AnalysisResult | None = None  # the focus result on the canvas
        # Another colouring that holds the links for now (a failure study's slowdowns):
        # `apply` calls it instead of painting utilisation; None gives them back.
        self.colour_override: Callable[[], None] | None = None
        self.path_gpus: list[str] = []             # GPUs whose flows are outlined
        self.path_links: set[str] = set()          # ... on these links
        self._index: FlowIndex | None = None
        self._halo: PathHalo | None = None
        self._pass = 0
        self.legend = Legend(view.viewport())
        self.legend.hide()
        self._place_legend()
        view.view_changed.connect(self._place_legend)
        view.viewport().installEventFilter(self)
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.customContextMenuRequested.connect(self._on_view_context_menu)
        runner.focus_ready.connect(self._on_runner_result_ready)
        runner.failed.connect(self._on_runner_failed)
        scene.selectionChanged.connect(self._on_scene_selection_changed)
        scene.changed.connect(self._on_scene_changed)
        document.topology_replaced.connect(self._on_document_topology_replaced)

    # ------------------------------------------------------------ colours
    def set_mode(self, by_utilisation: bool) -> None:
        """Colour links by utilisation (True) or by technology (False)."""
        self.by_utilisation = by_utilisation
        self.legend.setVisible(by_utilisation)
        self.apply()

    def show_instead(self, values: tuple[Mapping[str, float], ...] | None,
                     current: Callable[[], bool] | None = None) -> None:
        """Colour the links by ``values`` (utilisation, load and capacity per link: the
        jobs' simulation) instead of the scenario's result, which is kept and comes
        back with None; ``current()`` says whether they still describe the design."""
        self.instead = values
        self._instead_current = current or (lambda: False)
        self.apply()

    def shown(self) -> tuple[tuple[Mapping[str, float], ...], bool] | None:
        """What the links show now: ``((utilisation, load, capacity), current)``,
        ``current`` telling whether the figures describe the design as it is (no edit
        their solve or simulation reads came since); None without figures."""
        if self.instead is not None:
            return self.instead, self._instead_current()
        if self.result is None:
            return None
        current = self.runner.describes(self.result.generation)
        return (self.utilisation, self.load, self.capacity), current

    def _on_runner_result_ready(self, result: AnalysisResult) -> None:
        self.result = result
        self._index = None
        util = result.focus.arc_util
        load = result.focus.arc_load_GBps
        snap = result.snapshot
        ids = snap.link_ids
        index = snap.link_positions  # kept between snapshots: cheap
        # Arrays behind a read-only mapping by link id: three 100,000-entry dicts per
        # result would hold the GUI thread for ~100 ms on a 16k-GPU design.
        self.utilisation = PerLink(ids, np.maximum(util[0::2], util[1::2]), index)
        self.load = PerLink(ids, np.maximum(load[0::2], load[1::2]), index)
        self.capacity = PerLink(ids, snap.arc_cap[0::2], index)
        self.apply()
        self._update_paths()

    def _on_runner_failed(self, _generation: int, _text: str) -> None:
        self.utilisation, self.load = {}, {}
        self.result = self._index = None
        self.apply()
        self._update_paths()

    def _on_document_topology_replaced(self, _topo) -> None:
        self.result = self._index = None
        self.instead = None  # another design's links
        self._halo = None  # the scene cleared its items, ours too
        self.path_gpus, self.path_links = [], set()

    def apply(self) -> None:
        """Recolour every link from the last result.

        Large designs are recoloured in slices of `CHUNK` links per turn of the event
        loop, so a 100,000-link fabric never freezes the window while it updates; a
        newer result restarts the pass.
        """
        if self.colour_override is not None:
            self._pass += 1  # a utilisation pass under way stops
            self.legend.setVisible(False)
            self.colour_override()
            return
        util = self.instead[0] if self.instead is not None else self.utilisation
        colour = self.by_utilisation and bool(util)
        self.legend.setVisible(colour)
        links = self.scene.links
        self._pass += 1
        token = self._pass
        # Aggregated bundles of collapsed groups (whose links may have no items) take
        # the busiest member's colour from the scene, in one vectorised step.
        if colour and isinstance(util, PerLink):
            self.scene.set_link_values(util.ids, util.values, util_color, util.positions)
        elif colour:
            self.scene.set_link_values(list(util), list(util.values()), util_color)
        else:
            self.scene.clear_link_values()
        if colour and isinstance(util, PerLink) and len(links) * 4 < len(util.ids):
            # Few link items (a big design open with its pods collapsed): walk them, not
            # the result's 100,000 links.
            values, index = util.values, util.positions()
            items = list(links.items())
            last = len(items) - 1

            def paint(start: int, _deadline: float) -> int:
                for lid, item in items[start:start + CHUNK]:
                    i = index.get(lid)
                    c = util_color(float(values[i])) if i is not None else IDLE
                    if item.color is not c:
                        item.set_color(c)
                return start + CHUNK
        elif colour and isinstance(util, PerLink):
            # Walk the result's links in order (no per-result dict), then idle-grey the
            # canvas links the result does not have (failed ones, say).  Only links whose
            # colour changes are touched (colours are shared objects): after an edit most
            # of a big fabric keeps its colour, and set_color is the costly part.
            ids, values = util.ids, util.values
            n = len(ids)
            last = n + len(links)  # the pass is over once past this

            rest: list[str] = []  # the canvas's link ids, walked after the result's

            def paint(start: int, deadline: float) -> int:
                """Recolour from ``start`` until ``deadline``; where to go on (past ``n``:
                idle-greying the canvas links the result lacks, ``n + 1 + i`` being
                ``rest[i]``)."""
                if start >= n:
                    if start == n:
                        # Ids only: 100,000 (id, item) tuples would wake the cyclic
                        # garbage collector for a full pass (~100 ms).
                        rest[:] = list(links)
                    at, known = start - n, util.positions()
                    while at < len(rest):
                        for lid in rest[at:at + STRIDE]:
                            if lid not in known:
                                item = links.get(lid)
                                if item is not None:
                                    item.set_color(IDLE)
                        at += STRIDE
                        if time.perf_counter() > deadline:
                            break
                    return n + at if at < len(rest) else last + 1
                while start < n:
                    stop = min(start + STRIDE, n)
                    for lid, u in zip(ids[start:stop], values[start:stop].tolist(),
                                      strict=True):
                        item = links.get(lid)
                        if item is not None:
                            c = util_color(u)
                            if item.color is not c:
                                item.set_color(c)
                    start = stop
                    if time.perf_counter() > deadline:
                        break
                return start
        else:
            items = list(links.values())
            last = len(items) - 1

            def paint(start: int, _deadline: float) -> int:
                for item in items[start:start + CHUNK]:
                    item.set_color(IDLE if colour else None)
                return start + CHUNK

        at = [0]

        def step(deadline: float) -> bool:
            """One slice of the pass; True when it is over (done or superseded)."""
            if token != self._pass or not shiboken6.isValid(self.scene):
                return True  # superseded by a newer result, or the window is gone
            self.scene.recolour_held = True  # one repaint at the end, not one per slice
            try:
                at[0] = paint(at[0], deadline)
            finally:
                self.scene.recolour_held = False
            if at[0] <= last:
                return False
            # Repaint the canvas now: on a real display nothing else may ask for it.
            self.scene.request_repaint()
            self.view.viewport().update()
            return True

        # The first slice now (a small design is done at once), the rest in the
        # background work of coming turns, shared fairly with the other such work.
        if not step(time.perf_counter() + SLICE_S):
            IdleWork.instance().add((self, "recolour"), step)

    def _place_legend(self) -> None:
        vp = self.view.viewport()
        self.legend.move(10, max(vp.height() - self.legend.height() - 10, 0))

    def eventFilter(self, watched, event) -> bool:
        # Link tooltips are built when asked for, not for every link on every result.
        if event.type() == QEvent.Type.ToolTip:
            item = next((i for i in self.view.items(event.pos()) if isinstance(i, LinkItem)),
                        None)
            if item is not None and not any(isinstance(i, NodeItem)
                                            for i in self.view.items(event.pos())):
                u = self.utilisation.get(item.link_id) if self.utilisation else None
                QToolTip.showText(event.globalPos(), self._tooltip(item, u), self.view)
                return True
        return super().eventFilter(watched, event)

    def _tooltip(self, item: LinkItem, u: float | None) -> str:
        topo = self.document.topology
        lk = item.link
        tech = topo.catalog.tech(lk.tech)
        head = (f"{lk.id}: {topo.node(lk.a).name} — {topo.node(lk.b).name}\n"
                f"{lk.count} x {tech.name} ({lk.count * tech.GBps:,.1f} GB/s per direction)")
        if lk.failed:
            return head + "\nFAILED (what-if)"
        if topo.node(lk.a).failed or topo.node(lk.b).failed:
            return head + "\nan end FAILED (what-if)"
        if u is None:
            return head + "\nno traffic in this scenario" if self.utilisation else head
        load = self.load.get(lk.id, 0.0)
        cap = self.capacity.get(lk.id, 0.0)
        text = head + f"\nload {load:,.1f} of {cap:,.1f} GB/s achievable ({u * 100:.0f}%)"
        return text + self._flows_text(lk.id)

    def link_flows(self, link_id: str,
                   limit: int | None = TOOLTIP_FLOWS) -> tuple[list[FlowRow], int]:
        """The focus result's flows on ``link_id`` (either direction): the first
        ``limit`` rows and how many there are (see `FlowIndex.link_flows`)."""
        index = self._flow_index()
        if index is None:
            return [], 0
        k = self.result.snapshot.link_positions().get(link_id)
        return ([], 0) if k is None else index.link_flows(k, limit)

    def _flows_text(self, link_id: str) -> str:
        rows, total = self.link_flows(link_id)
        if not total:
            return ""
        ids = self.result.snapshot.node_ids
        lines = [f"{'flow' if total == 1 else 'flows'} on it:"]
        for r in rows:
            if r.src >= 0 and r.dst >= 0:
                ends = f" ({ids[r.src]} → {ids[r.dst]})"
            elif r.src >= 0:
                ends = f" (from {ids[r.src]})"
            elif r.dst >= 0:
                ends = f" (to {ids[r.dst]})"
            else:
                ends = ""
            lines.append(f"  {r.label}{ends}")
        if total > len(rows):
            lines.append(f"  and {total - len(rows)} more")
        return "\n" + "\n".join(lines)

    def _flow_index(self) -> FlowIndex | None:
        r = self.result
        if r is None or r.focus.plan is None:
            return None
        if self._index is None:
            self._index = FlowIndex(r.snapshot, r.focus.plan)
        return self._index

    # ------------------------------------------------------------ paths of a GPU
    def _on_scene_selection_changed(self) -> None:
        nodes = self.scene.selected_node_ids()
        self.runner.set_selection(nodes)
        self._update_paths(nodes)

    def _update_paths(self, nodes: list[str] | None = None) -> None:
        """Outline the links that carry the selected GPUs' traffic in the focus result
        (`FlowIndex.gpu_arcs`; at most `MAX_PATH_GPUS` GPUs); clear it otherwise."""
        if nodes is None:
            nodes = self.scene.selected_node_ids()
        topo = self.document.topology
        gpus = [n for n in nodes if topo.has_node(n) and topo.node(n).kind == "gpu"] \
            if len(nodes) <= MAX_PATH_SELECTION else []
        # The flow index only when there is a GPU to outline: built per result, it
        # expands every endpoint route of the plan (~20 ms at 16,384 GPUs).
        index = self._flow_index() if 0 < len(gpus) <= MAX_PATH_GPUS else None
        links: set[str] = set()
        if index is not None:
            snap = self.result.snapshot
            at = [_find(snap.node_ids, g) for g in gpus]  # a failed GPU is not in it
            arcs = index.gpu_arcs([i for i in at if i >= 0])
            links = {snap.link_ids[a] for a in (arcs // 2).tolist()}
        else:
            gpus = []
        changed = (gpus, links) != (self.path_gpus, self.path_links)
        self.path_gpus, self.path_links = gpus, links
        self._show_paths()
        if changed and gpus:
            whose = f"{gpus[0]}'s" if len(gpus) == 1 else f"the {len(gpus)} selected GPUs'"
            focus = self.result.focus
            self.message.emit(f"Outlined: the {len(links)} link{'s' if len(links) != 1 else ''}"
                              f" that carry {whose} {focus.algorithm} {focus.collective} "
                              "traffic")

    def _show_paths(self) -> None:
        """Put the outline on the items that draw ``path_links``: the link items, or
        the aggregated bundles of collapsed groups that hide them."""
        if not self.path_links and (self._halo is None or not shiboken6.isValid(self._halo)):
            return
        halo = self._halo_item()
        items = [self.scene.links[lid] for lid in self.path_links if lid in self.scene.links]
        shown = [i for i in items if not i.hidden]
        if len(shown) < len(items):
            hidden = {i.link_id for i in items if i.hidden}
            shown += [b for b in self.scene.bundles.values() if hidden & set(b.link_ids)]
        halo.set_items(shown)
        self.view.viewport().update()

    def _halo_item(self) -> PathHalo:
        if self._halo is None or not shiboken6.isValid(self._halo):
            self._halo = PathHalo()
            self.scene.addItem(self._halo)
            self.scene.overlays.add(self._halo)  # far-out views paint it too
        return self._halo

    def _on_scene_changed(self, _regions) -> None:
        if self._halo is not None and shiboken6.isValid(self._halo) and self._halo.items:
            self._halo.sync()  # nodes moved: the outline follows

    # ------------------------------------------------------------ what-if
    def _on_view_context_menu(self, pos: QPoint) -> None:
        item = next((i for i in self.view.items(pos) if isinstance(i, NodeItem | LinkItem)),
                    None)
        # Deleted once closed, and its actions hold ids, not the item: a menu kept as the
        # view's child kept the item and, through it, a replaced design's canvas alive.
        menu = QMenu(self.view)
        menu.aboutToHide.connect(menu.deleteLater)
        if isinstance(item, NodeItem):
            node_id, failed = item.node_id, item.node.failed
            act = menu.addAction(f"{'Restore' if failed else 'Fail'} {item.node.name} (what-if)")
            act.triggered.connect(lambda: self.set_failed(node_ids=[node_id], failed=not failed))
        elif isinstance(item, LinkItem):
            link_id, failed = item.link_id, item.link.failed
            act = menu.addAction(f"{'Restore' if failed else 'Fail'} link {link_id} (what-if)")
            act.triggered.connect(lambda: self.set_failed(link_ids=[link_id], failed=not failed))
        if item is not None:
            menu.addSeparator()
        self.view.add_group_actions(menu, pos)  # Collapse / Expand the group there
        if menu.isEmpty():
            menu.deleteLater()
        else:
            menu.popup(self.view.viewport().mapToGlobal(pos))

    def set_failed(self, node_ids=(), link_ids=(), failed: bool = True) -> None:
        """Fail or restore devices and links (undoable); the solve reroutes around them."""
        try:
            if node_ids:
                self.document.push(SetNodeProps(node_ids, failed=failed))
            if link_ids:
                self.document.push(SetLinkProps(link_ids, failed=failed))
        except DesignError as exc:
            self.message.emit(str(exc))


def gpu_path_arcs(result: AnalysisResult, gpu_id: str) -> np.ndarray | None:
    """Arcs that carry ``gpu_id``'s traffic in the focus result's plan (see
    `FlowIndex.gpu_arcs`); None without a plan or such a GPU."""
    snap, plan = result.snapshot, result.focus.plan
    node = _find(snap.node_ids, gpu_id)
    if plan is None or node < 0:
        return None
    return FlowIndex(snap, plan).gpu_arcs([node])


def _find(ids: tuple[str, ...], node_id: str) -> int:
    try:
        return ids.index(node_id)
    except ValueError:
        return -1
