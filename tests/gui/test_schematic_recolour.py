"""The schematic moves recoloured links between its batches: the same batches as a
rebuild, without re-sorting every link."""

from PySide6.QtGui import QColor


def batches(schematic):
    return sorted((rgba, step, failed, sorted((ln.x1(), ln.y1(), ln.x2(), ln.y2())
                                              for ln in lines))
                  for rgba, step, failed, lines in schematic._link_batches())


def test_recolouring_links_updates_the_batches_like_a_rebuild(window):
    scene = window.scene
    schematic = scene.schematic
    schematic._build_links()
    ids = sorted(scene.links)
    red, blue = QColor(200, 30, 30), QColor(30, 30, 200)
    for k, lid in enumerate(ids[:40]):
        scene.links[lid].set_color(red if k % 2 else blue)
    scene.links[ids[0]].set_color(None)  # back to its technology colour
    assert schematic._moved and not schematic._links_dirty  # incremental, not a rebuild
    schematic._apply_moves()
    incremental = batches(schematic)
    schematic._build_links()
    assert incremental == batches(schematic)
    assert any(rgba == red.rgba() for rgba, *_ in incremental)


def test_a_changed_link_moves_alone_and_matches_a_rebuild(window):
    from designer.model.commands import SetLinkProps

    scene = window.scene
    schematic = scene.schematic
    schematic._build_links()
    lid = sorted(scene.links)[3]
    count = window.document.topology.link(lid).count
    window.document.push(SetLinkProps([lid], failed=True, count=count + 1))
    assert not schematic._links_dirty and scene.links[lid] in schematic._moved
    schematic._apply_moves()
    incremental = batches(schematic)
    schematic._build_links()
    assert incremental == batches(schematic)
    assert any(failed for _, _, failed, _ in incremental)


def test_far_out_a_recolour_reaches_the_screen_through_the_cached_picture(window, qtbot):
    """Far out the view blits a cached picture of the schematic; a recolour draws a new
    one (in slices when big) and the screen shows the new colour once it is complete."""
    from designer.gui.canvas.style import uses_schematic
    from designer.gui.canvas.view import FabricView

    view: FabricView = window.view
    scene = window.scene
    view.resetTransform()
    view.scale(0.12, 0.12)
    assert uses_schematic(view.scale_factor)
    lid = max(scene.links, key=lambda k: scene.links[k].line.length())
    item = scene.links[lid]
    view.centerOn(item.line.center())
    at = view.mapFromScene(item.line.center())
    before = view.viewport().grab().toImage().pixelColor(at)
    item.set_color(QColor(230, 20, 180))
    view.viewport().repaint()
    qtbot.waitUntil(lambda: not view._picture.pending, timeout=5000)
    after = view.viewport().grab().toImage().pixelColor(at)
    assert after != before
    assert after.red() > after.green() + 60 and after.blue() > after.green() + 40  # magenta-ish
