"""A Ctrl+drag of a node that is not selected moves it, and the selection, in the model.

Qt leaves a Ctrl+pressed node's selection alone until the release (a click toggles it
then), but moves the node with the selection while the mouse drags it.  The canvas's
drag followed the selection only: the dragged node stayed where the mouse left it while
the model kept it where it was, its links did not follow, and there was nothing to undo.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPointF, Qt

from designer.gui.canvas.scene import GRID
from tests.gui.soak_checks import scene_problems
from tests.gui.test_drag_interrupted import LEFT, _send

CTRL = Qt.KeyboardModifier.ControlModifier


def _ctrl_drag(view, start: QPointF, delta: QPointF) -> None:
    _send(view, QEvent.Type.MouseButtonPress, start, LEFT, LEFT, CTRL)
    for i in range(1, 5):
        _send(view, QEvent.Type.MouseMove, start + delta * (i / 4), Qt.MouseButton.NoButton,
              LEFT, CTRL)
    _send(view, QEvent.Type.MouseButtonRelease, start + delta, LEFT, Qt.MouseButton.NoButton,
          CTRL)


def test_ctrl_dragging_an_unselected_node_moves_it_and_the_selection(window):
    scene, topo, view = window.scene, window.document.topology, window.view
    chosen, dragged = "n01-gpu0", "n01-gpu5"
    before = {nid: (topo.node(nid).x, topo.node(nid).y) for nid in (chosen, dragged)}
    scene.clearSelection()
    scene.nodes[chosen].setSelected(True)
    view.centerOn(scene.nodes[dragged])
    _ctrl_drag(view, scene.nodes[dragged].pos(), QPointF(3 * GRID, 2 * GRID))
    assert scene_problems(window) == []
    # Both moved in the model, by one displacement (the one that puts the dragged node
    # on the grid), about the mouse's.
    moves = {(topo.node(nid).x - x, topo.node(nid).y - y) for nid, (x, y) in before.items()}
    assert len(moves) == 1
    (dx, dy), = moves
    assert abs(dx - 3 * GRID) <= GRID and abs(dy - 2 * GRID) <= GRID
    stack = window.document.undo_stack
    assert stack.count() == 1
    stack.undo()
    assert {nid: (topo.node(nid).x, topo.node(nid).y) for nid in before} == before
    assert scene_problems(window) == []


def test_ctrl_dragging_with_nothing_selected_moves_the_node(window):
    scene, topo, view = window.scene, window.document.topology, window.view
    dragged = "n02-gpu3"
    x, y = topo.node(dragged).x, topo.node(dragged).y
    scene.clearSelection()
    view.centerOn(scene.nodes[dragged])
    _ctrl_drag(view, scene.nodes[dragged].pos(), QPointF(-2 * GRID, GRID))
    assert scene_problems(window) == []
    dx, dy = topo.node(dragged).x - x, topo.node(dragged).y - y
    assert abs(dx + 2 * GRID) <= GRID and abs(dy - GRID) <= GRID
