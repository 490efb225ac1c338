"""Big designs on the canvas (issue 34): they open with their outermost groups collapsed
and no items for what those hide, aggregated bundles carry the utilisation colour of the
busiest link they stand for, and a double-click opens a box with its members' items.

A design counts as big from ``scene.open_collapsed_above`` nodes (8,000 in the app);
the tests lower it so a 4-SU SuperPOD (about 2,800 nodes) counts, and keep the solves
quick.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

from designer.gui.analysis.overlay import util_color
from designer.gui.canvas.view import MAX_SCALE
from designer.model.templates import build_template
from tests.gui.test_live import solved


def _open_big(window, **params):
    """Open a SuperPOD in ``window`` as a big design."""
    window.scene.open_collapsed_above = 1000
    topo = build_template("superpod", **params)
    window.document.replace(topo)
    window.scene.refresh()
    return topo


def _double_click(view, at: QPoint) -> None:
    vp = view.viewport()
    for kind in (
        QEvent.Type.MouseButtonPress,
        QEvent.Type.MouseButtonRelease,
        QEvent.Type.MouseButtonDblClick,
        QEvent.Type.MouseButtonRelease,
    ):
        event = QMouseEvent(
            kind,
            QPointF(at),
            QPointF(vp.mapToGlobal(at)),
            Qt.MouseButton.LeftButton,
            Qt.MouseButton.NoButton
            if kind == QEvent.Type.MouseButtonRelease
            else Qt.MouseButton.LeftButton,
            Qt.KeyboardModifier.NoModifier,
        )
        QApplication.sendEvent(vp, event)


def test_a_big_design_opens_collapsed_with_no_items_inside_the_boxes(window):
    topo = _open_big(window, sus=4)
    scene = window.scene
    outermost = {g.id for g in topo.groups() if g.parent is None}
    assert len(outermost) == 4
    assert scene.collapsed == outermost
    hidden = {nid for gid in outermost for nid in topo.members(gid)}
    assert hidden and not hidden & set(scene.nodes)
    assert set(scene.nodes) == {n.id for n in topo.nodes()} - hidden
    # Every link leaving a box is drawn by one bundle per pair of visible ends.
    bundled = [lid for b in scene.bundles.values() for lid in b.link_ids]
    assert len(bundled) == len(set(bundled))
    leaving = {lk.id for lk in topo.links() if (lk.a in hidden) != (lk.b in hidden)}
    assert set(bundled) == leaving
    assert not any(lid in scene.links for lid in leaving)


def test_a_small_design_opens_expanded(window):
    topo = build_template("superpod", sus=4)
    window.document.replace(topo)  # (below the app's threshold)
    assert window.scene.collapsed == set()
    assert len(window.scene.nodes) == len(topo)


def test_a_collapsed_bundle_carries_the_utilisation_colour(window, qtbot):
    scene = window.scene
    scene.collapse("rack01")
    solved(qtbot, window)
    util = window.analysis.overlay.utilisation
    assert scene.bundles
    for bundle in scene.bundles.values():
        busiest = max(util[lid] for lid in bundle.link_ids)
        assert bundle.color is util_color(busiest), bundle.link_ids
    assert any(b.color is not b.base_color for b in scene.bundles.values())
    # Collapsing after the result colours the new bundles too.
    scene.collapse("rack02")
    for bundle in scene.bundles.values():
        assert bundle.color is util_color(max(util[lid] for lid in bundle.link_ids))


def test_a_big_designs_bundles_are_coloured_by_utilisation(window, qtbot):
    _open_big(window, sus=4)
    solved(qtbot, window)
    util = window.analysis.overlay.utilisation
    bundles = window.scene.bundles.values()
    assert bundles
    for bundle in bundles:
        assert bundle.color is util_color(max(util[lid] for lid in bundle.link_ids))


def test_double_click_opens_a_box_and_makes_its_members(window, qtbot):
    topo = _open_big(window, sus=4)
    scene, view = window.scene, window.view
    solved(qtbot, window)
    box = sorted(scene.collapsed)[0]
    view.fit()
    _double_click(view, view.mapFromScene(scene.groups[box].box_rect().center()))
    assert box not in scene.collapsed
    members = topo.members(box)
    assert all(scene.nodes[nid].isVisible() for nid in members)
    inside = [lk.id for lk in topo.links() if lk.a in members and lk.b in members]
    assert inside and all(scene.links[lid].isVisible() for lid in inside)
    # The new items show the current result's colours straight away.
    util = window.analysis.overlay.utilisation
    assert all(scene.links[lid].color is util_color(util[lid]) for lid in inside)


def test_find_reveals_a_node_that_has_no_item_yet(window):
    topo = _open_big(window, sus=4)
    scene = window.scene
    gpu = next(n.id for n in topo.nodes("gpu"))
    assert gpu not in scene.nodes
    window.view.center_on_node(gpu)
    assert scene.nodes[gpu].isVisible()


def test_edits_inside_a_closed_box_update_its_bundles(window):
    topo = _open_big(window, sus=4)
    scene = window.scene
    from designer.model.commands import SetLinkProps

    bundle = next(b for b in scene.bundles.values() if b.link_ids)
    link = topo.link(bundle.link_ids[0])
    before = bundle.count
    window.document.push(SetLinkProps([link.id], count=link.count + 3))
    scene.refresh()
    key = next(k for k, b in scene.bundles.items() if link.id in b.link_ids)
    assert scene.bundles[key].count == before + 3


def test_zooming_in_on_a_box_opens_it_but_not_one_the_user_closed(window):
    _open_big(window, sus=4)
    scene, view = window.scene, window.view
    first, second = sorted(scene.collapsed)[:2]
    view.fit()
    assert view.open_zoomed_boxes() == []  # at full view every box is small
    box = scene.groups[first].box_rect()
    # Centre on the box at the scale where it just covers the viewport, whatever size
    # and shape the viewport has on the machine running the test, then a wheel step in.
    vp = view.viewport().rect()
    cover = 1.05 * max(vp.width() / box.width(), vp.height() / box.height())
    assert cover * 1.1 < MAX_SCALE
    view.resetTransform()
    view.scale(cover, cover)
    view.centerOn(box.center())
    view.zoom(1.1)
    view._on_settle_timeout()  # (what SETTLE_MS after the last wheel step does)
    assert first not in scene.collapsed
    assert scene.nodes[scene.document.topology.members(first)[0]].isVisible()
    scene.collapse(first)  # closed by hand: zooming on it again leaves it closed
    view.fitInView(scene.groups[first].box_rect())
    assert view.open_zoomed_boxes() == []
    assert second in scene.collapsed


def test_select_all_selects_the_boxes_of_a_big_design(window):
    topo = _open_big(window, sus=4)
    scene = window.scene
    window.edit.select_all()
    assert all(scene.groups[g].isSelected() for g in scene.collapsed)
    assert scene.selected_node_ids() == sorted(n.id for n in topo.nodes())
