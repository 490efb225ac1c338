"""The canvas itself: collapsible groups, group drags, themes, level of detail, recolouring.

Expected values come from the model (which links leave a group, what they sum to), not
from the items under test.
"""

from __future__ import annotations

import zlib
from collections import Counter

import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter
from PySide6.QtWidgets import QApplication, QGraphicsScene

from designer.gui.canvas import collapse
from designer.gui.canvas.items import BundleItem, GroupItem, NodeItem
from designer.gui.canvas.scene import GRID, FabricScene
from designer.gui.canvas.style import (
    DARK,
    LIGHT,
    shows_badges,
    shows_labels,
    uses_schematic,
)
from designer.gui.canvas.theming import ThemeMenu
from designer.model.commands import RemoveLinks
from designer.model.topology import Group, Link, Node


def _crossing(topo, gid: str) -> dict[str, int]:
    """Links leaving group ``gid``: summed count per outside node."""
    inside = set(topo.members(gid))
    out: Counter = Counter()
    for lk in topo.links():
        if (lk.a in inside) != (lk.b in inside):
            out[lk.b if lk.a in inside else lk.a] += lk.count
    return dict(out)


def _bundles_of(scene, gid: str) -> dict[str, int]:
    box = f"g:{gid}"
    return {(b if a == box else a)[2:]: item.count
            for (a, b), item in scene.bundles.items() if box in (a, b)}


def _title_point(window, gid: str) -> QPoint:
    """A viewport point on group ``gid``'s title strip where the frame is the top item."""
    view, group = window.view, window.scene.groups[gid]
    frame = group.frame_rect()
    for i in range(1, 40):
        p = view.mapFromScene(QPointF(frame.left() + frame.width() * i / 40, frame.top() + 5))
        items = view.items(p)
        if items and items[0] is group:
            return p
    raise AssertionError(f"no free spot on {gid}'s title strip")


def _double_click(view, at: QPoint) -> None:
    vp = view.viewport()
    for kind in (QEvent.Type.MouseButtonPress, QEvent.Type.MouseButtonRelease,
                 QEvent.Type.MouseButtonDblClick, QEvent.Type.MouseButtonRelease):
        event = QMouseEvent(kind, QPointF(at), QPointF(vp.mapToGlobal(at)),
                            Qt.MouseButton.LeftButton,
                            Qt.MouseButton.NoButton if kind == QEvent.Type.MouseButtonRelease
                            else Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(vp, event)


# ------------------------------------------------------------------ collapse / expand
def test_collapsing_a_server_hides_its_members_and_bundles_its_links(window):
    scene, topo = window.scene, window.document.topology
    members = topo.members("n01")
    scene.collapse("n01")
    assert scene.collapsed == {"n01"}
    assert scene.groups["n01"].collapsed and scene.groups["n01"].isVisible()
    assert not any(scene.nodes[m].isVisible() for m in members)
    assert all(scene.nodes[n].isVisible() for n in scene.nodes if n not in members)
    # One bundle per outside neighbour, with the summed count of the links it stands for.
    expected = _crossing(topo, "n01")
    assert len(expected) > 5 and _bundles_of(scene, "n01") == expected
    bundled = {lid for b in scene.bundles.values() for lid in b.link_ids}
    for lid, item in scene.links.items():
        lk = item.link
        touches = lk.a in members or lk.b in members
        assert item.isVisible() is not touches
        assert (lid in bundled) == ((lk.a in members) != (lk.b in members))
    # The box says what it holds.
    kinds = Counter(topo.node(m).kind for m in members)
    assert f"{kinds['gpu']} GPU" in scene.groups["n01"].summary

    scene.expand("n01")
    assert scene.collapsed == set() and not scene.bundles
    assert not scene.groups["n01"].collapsed
    assert all(i.isVisible() for i in scene.nodes.values())
    assert all(i.isVisible() for i in scene.links.values())


def test_collapsing_a_rack_hides_its_servers_and_sums_their_links(window):
    scene, topo = window.scene, window.document.topology
    scene.collapse("n02")
    scene.collapse("rack01")  # the outermost collapsed group stands for everything inside
    for gid in ("n01", "n02", "n03", "n04"):
        assert not scene.groups[gid].isVisible()
    assert scene.groups["rack01"].collapsed
    expected = _crossing(topo, "rack01")
    assert _bundles_of(scene, "rack01") == expected
    # Every rail leaf takes one link from each of the four servers: the bundle sums them.
    assert expected["leaf-r0-0"] == 4
    assert scene.bundles[("g:rack01", "n:leaf-r0-0")].count == 4
    assert not _bundles_of(scene, "n02")
    scene.expand("rack01")  # the inner collapse is remembered
    assert scene.groups["n02"].collapsed and scene.groups["n02"].isVisible()
    assert _bundles_of(scene, "n02") == _crossing(topo, "n02")


def test_a_bundle_wide_enough_for_its_bandwidth_and_one_colour_per_technology(window):
    scene, topo = window.scene, window.document.topology
    scene.collapse("rack01")
    item = scene.bundles[("g:rack01", "n:leaf-r0-0")]
    links = [scene.links[lid] for lid in item.link_ids]
    assert item.gbps == pytest.approx(sum(li.gbps for li in links))
    assert item.width >= max(li.width for li in links)
    assert item.color == links[0].base_color
    assert {topo.link(lid).tech for lid in item.link_ids} == {links[0].link.tech}


def test_collapse_is_view_state_not_an_edit(window):
    document = window.document
    before = document.topology.state()
    window.scene.collapse_kind("node")
    assert window.scene.collapsed == {"n01", "n02", "n03", "n04"}
    assert document.undo_stack.count() == 0 and not document.is_modified
    assert document.topology.state() == before
    window.scene.expand_all()
    assert window.scene.collapsed == set()


def test_model_edits_while_collapsed_update_the_bundles(window):
    scene, topo = window.scene, window.document.topology
    scene.collapse("rack01")
    bundle = scene.bundles[("g:rack01", "n:leaf-r3-0")]
    victim = bundle.link_ids[0]
    count, gone = bundle.count, topo.link(victim).count
    window.document.push(RemoveLinks([victim]))
    scene.refresh()
    assert scene.bundles[("g:rack01", "n:leaf-r3-0")].count == count - gone
    window.document.undo_stack.undo()
    scene.refresh()
    assert scene.bundles[("g:rack01", "n:leaf-r3-0")].count == count
    assert not scene.links[victim].isVisible()


def test_double_click_collapses_a_frame_and_expands_the_box(window):
    view, scene = window.view, window.scene
    _double_click(view, _title_point(window, "n03"))
    assert scene.collapsed == {"n03"}
    box = scene.groups["n03"].box_rect()
    _double_click(view, view.mapFromScene(box.center()))
    assert scene.collapsed == set()
    assert window.document.undo_stack.count() == 0


def test_a_selected_box_stands_for_its_members(window):
    scene, topo = window.scene, window.document.topology
    scene.collapse("n04")
    scene.select_ids(["n04-gpu3"])  # a hidden node selects its box
    assert scene.groups["n04"].isSelected()
    assert set(scene.selected_node_ids()) == set(topo.members("n04"))
    scene.select_ids([n.id for n in topo.nodes()])  # Select All keeps everything
    assert set(scene.selected_node_ids()) == {n.id for n in topo.nodes()}


def test_find_reveals_a_node_hidden_in_a_collapsed_group(window):
    scene = window.scene
    scene.collapse("rack01")
    window.view.center_on_node("n02-gpu5")
    assert "rack01" not in scene.collapsed
    assert scene.nodes["n02-gpu5"].isVisible()


# ------------------------------------------------------------------ group drags
def test_dragging_a_group_frame_moves_its_members_in_one_undo_step(window, mouse):
    topo, stack = window.document.topology, window.document.undo_stack
    members = topo.members("n02")
    before = {m: (topo.node(m).x, topo.node(m).y) for m in members}
    outside = {n.id: (n.x, n.y) for n in topo.nodes() if n.id not in members}
    at = _title_point(window, "n02")
    scale = window.view.scale_factor
    mouse.drag(at, at + QPoint(round(200 * scale), round(60 * scale)), steps=6)
    assert stack.count() == 1
    dx = topo.node(members[0]).x - before[members[0]][0]
    dy = topo.node(members[0]).y - before[members[0]][1]
    assert abs(dx - 200) <= GRID and abs(dy - 60) <= GRID and (dx, dy) != (0, 0)
    for m in members:  # all moved together, shape kept, items where the model says
        assert (topo.node(m).x, topo.node(m).y) == (before[m][0] + dx, before[m][1] + dy)
        assert window.scene.nodes[m].pos() == QPointF(topo.node(m).x, topo.node(m).y)
    assert {n.id: (n.x, n.y) for n in topo.nodes() if n.id not in members} == outside
    # The frame followed.
    assert window.scene.groups["n02"].frame_rect().contains(window.scene.nodes[members[0]].pos())
    stack.undo()
    assert {m: (topo.node(m).x, topo.node(m).y) for m in members} == before


def test_dragging_a_collapsed_box_moves_its_hidden_members(window, mouse):
    scene, topo = window.scene, window.document.topology
    scene.collapse("n01")
    members = topo.members("n01")
    before = {m: (topo.node(m).x, topo.node(m).y) for m in members}
    centre = scene.groups["n01"].box_rect().center()
    scale = window.view.scale_factor
    start = mouse.at(centre)
    mouse.drag(start, start + QPoint(0, round(120 * scale)), steps=4)
    assert window.document.undo_stack.count() == 1
    dy = topo.node(members[0]).y - before[members[0]][1]
    assert abs(dy - 120) <= GRID
    assert all(topo.node(m).y == before[m][1] + dy for m in members)
    assert scene.groups["n01"].box_rect().center().y() == pytest.approx(centre.y() + dy)
    assert scene.groups["n01"].isSelected()


# ------------------------------------------------------------------ themes
def _background(view) -> QColor:
    image = view.viewport().grab().toImage()
    counts = Counter(image.pixel(x, y) for x in range(0, image.width(), 7)
                     for y in range(0, image.height(), 7))
    return QColor.fromRgb(counts.most_common(1)[0][0])


def test_theme_switch_repaints_the_canvas(window, qtbot):
    scene, view = window.scene, window.view
    scene.show_grid = False
    with qtbot.waitSignal(scene.theme_changed):
        scene.set_theme_mode("dark")
    assert scene.theme is DARK and scene.nodes["n01-gpu0"].theme is DARK
    assert _background(view).name() == DARK.background.name()
    menu = window.view_menu.findChild(type(window.view_menu), "theme_menu")
    menu.actions_by_mode["dark"].trigger()
    assert scene.theme is DARK and scene.theme_mode == "dark"
    # The choice is remembered: the next window opens dark.
    second = ThemeMenu(FabricScene(window.document, theme=LIGHT))
    assert second.scene.theme is DARK and second.actions_by_mode["dark"].isChecked()
    menu.actions_by_mode["light"].trigger()
    assert scene.theme is LIGHT and scene.theme_mode == "light"
    assert _background(view).name() == LIGHT.background.name()
    menu.actions_by_mode["system"].trigger()  # leave the shared settings as they were


def test_system_mode_follows_the_colour_scheme(window, monkeypatch):
    import designer.gui.canvas.scene as scene_module

    scene = window.scene
    scene.set_theme_mode("system")
    monkeypatch.setattr(scene_module, "system_theme", lambda: DARK)
    QApplication.instance().styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    assert scene.theme is DARK
    scene.set_theme_mode("light")  # an explicit choice ignores the system
    QApplication.instance().styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    assert scene.theme is LIGHT


# ------------------------------------------------------------------ level of detail
def _render_node(scale: float) -> QImage:
    scene = QGraphicsScene()
    scene.addItem(NodeItem(Node("g", "gpu", "H100", "GPU 0 label"), LIGHT))
    side = round(120 * scale)
    image = QImage(side, side, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    scene.render(painter, QRectF(0, 0, side, side), QRectF(-60, -60, 120, 120))
    painter.end()
    return image


def _inked(image: QImage, top: float, bottom: float) -> int:
    """Non-white pixels between fractions ``top`` and ``bottom`` of the height."""
    h, w = image.height(), image.width()
    return sum(1 for y in range(int(top * h), int(bottom * h)) for x in range(w)
               if QColor(image.pixel(x, y)).lightness() < 200)


def test_labels_are_drawn_only_when_zoomed_in(window):
    assert shows_labels(1.0) and not shows_labels(0.3)
    assert shows_badges(1.0) and not shows_badges(0.3)
    # The label band lies below the icon (scene y 21..35 of a node at the origin).
    near, far = _render_node(1.0), _render_node(0.35)
    assert _inked(near, 81 / 120, 95 / 120) > 20
    assert _inked(far, 81 / 120, 95 / 120) == 0
    assert _inked(far, 42 / 120, 78 / 120) > 10  # the icon itself is still there


def test_far_out_the_view_paints_the_schematic(window, monkeypatch):
    view, scene = window.view, window.scene
    calls = []
    steps = scene.schematic.paint_steps

    def counted(*a, **k):
        calls.append(1)
        return steps(*a, **k)

    monkeypatch.setattr(scene.schematic, "paint_steps", counted)
    view.resetTransform()  # 1:1, items paint themselves
    view.viewport().grab()
    assert calls == []
    view.scale(0.1, 0.1)
    assert uses_schematic(view.scale_factor)
    node = scene.nodes["n01-gpu3"]
    view.centerOn(node)
    image = view.viewport().grab().toImage()
    assert calls
    at = view.mapFromScene(node.pos())
    assert QColor(image.pixel(at)).name() == node.color().name()


def test_aggregate_sums_counts_and_bandwidth_per_pair_of_visible_ends():
    groups = {"rack": Group("rack", "rack", "R"), "n1": Group("n1", "node", "N1", "rack"),
              "n2": Group("n2", "node", "N2", "rack")}
    node_group = {"a": "n1", "b": "n1", "c": "n2", "leaf": None, "spine": None}
    links = [Link("l1", "a", "leaf", "t", 2), Link("l2", "b", "leaf", "t", 3),
             Link("l3", "c", "leaf", "u", 4), Link("l4", "a", "c", "t", 5),
             Link("l5", "leaf", "spine", "t", 6), Link("l6", "a", "b", "t", 7)]
    top = collapse.outermost_collapsed(groups, {"n1"})
    bundles, hidden = collapse.aggregate(links, node_group, top, lambda lk: 10.0 * lk.count)
    assert {k: (b.count, b.gbps) for k, b in bundles.items()} == {
        ("g:n1", "n:leaf"): (5, 50.0), ("g:n1", "n:c"): (5, 50.0)}
    assert hidden == {"l1", "l2", "l4", "l6"}  # l6 is inside the box
    top = collapse.outermost_collapsed(groups, {"n1", "rack"})
    bundles, hidden = collapse.aggregate(links, node_group, top, lambda lk: 10.0 * lk.count)
    assert {k: b.count for k, b in bundles.items()} == {("g:rack", "n:leaf"): 9}
    assert bundles[("g:rack", "n:leaf")].techs == Counter({"u": 4, "t": 5})


def test_values_colour_bundles_of_links_removed_before_the_deferred_refresh(window):
    """A solve's colours can arrive after links were removed but before the scene
    re-bundled: each bundle still takes the largest value among its own links."""
    scene, topo = window.scene, window.document.topology
    scene.collapse("n01")
    members = set(topo.members("n01"))
    colour = lambda v: QColor(int(v) % 256, int(v) // 256 % 256, 7)  # noqa: E731

    def paint():
        ids = sorted(lk.id for lk in topo.links())
        values = [float(zlib.crc32(lid.encode()) % 50_000 + 1) for lid in ids]
        scene.set_link_values(ids, values, colour)
        value = dict(zip(ids, values, strict=True))
        for b in scene.bundles.values():
            assert b.color == colour(max(value[lid] for lid in b.link_ids)), b.link_ids

    paint()
    # Remove most links outside the box: the bundles' rows in the design's columns move.
    away = [lk.id for lk in topo.links() if lk.a not in members and lk.b not in members]
    window.document.push(RemoveLinks(away[: len(away) * 3 // 4]))
    assert scene.refresh_pending and scene.bundles
    paint()  # before the refresh
    scene.refresh()
    paint()


# ------------------------------------------------------------------ recolouring
def test_recolouring_a_link_changes_its_colour_not_its_geometry(window, qtbot):
    scene = window.scene
    item = next(iter(scene.links.values()))
    rect = item.boundingRect()  # the live analysis may have tinted it already
    version = scene.schematic.version
    item.set_color(QColor("#D55E00"))
    assert item.color.name() == "#d55e00" and item.boundingRect() == rect
    assert scene.schematic.version > version  # far-out views redraw their link batches
    item.set_color(None)
    assert item.color == item.base_color != QColor("#D55E00")
    scene.set_link_colors({item.link_id: QColor("#000000")})
    assert item.color.name() == "#000000"


def test_bundles_are_not_design_links(window):
    window.scene.collapse("n01")
    assert all(isinstance(b, BundleItem) for b in window.scene.bundles.values())
    assert sum(isinstance(i, GroupItem) for i in window.scene.items()) == len(window.scene.groups)


def test_link_badges_sit_clear_of_the_nodes_on_an_hgx_board(window):
    # On an HGX H100 board each GPU has a bundle of 4-5 NVLinks to each NVSwitch, and
    # the NICs' row sits halfway between the switches and the GPUs: badges at the
    # middle of a line, or at the few spots tried before, landed on the NICs.
    from designer.gui.canvas.items import LinkItem
    from designer.model.templates import build_template

    window.document.replace(build_template("hgx", gpu="H100"))
    scene = window.scene
    boxes = [i.sceneBoundingRect() for i in scene.nodes.values()]
    bundles = [i for i in scene.items() if isinstance(i, LinkItem) and i.count > 1]
    assert len(bundles) == 32
    for line in bundles:
        c = line._badge_center()
        w = line._badge_width()
        box = QRectF(c.x() - w / 2, c.y() - 7, w, 14)
        assert not any(box.intersects(b) for b in boxes), line.link_id
