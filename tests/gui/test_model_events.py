"""The window follows the design through one ``changed`` per command: a bulk paste,
delete, undo or redo refreshes the canvas and asks for a solve a bounded number of times
whatever its size, the canvas still holds exactly the design's items, and a deleted
window is no longer called by the design it showed."""

from __future__ import annotations

import functools

import pytest
import shiboken6
from PySide6.QtCore import QCoreApplication, QEvent, QObject

from designer.gui.analysis.runner import SolveRunner
from designer.gui.app import create_window
from designer.gui.canvas.scene import FabricScene
from designer.gui.model_events import ModelSlot
from designer.model.commands import PasteSubgraph, RemoveNodes
from designer.model.topology import Node, Topology
from tests.gui.conftest import open_window


@pytest.fixture
def counted(monkeypatch):
    """Calls of the scene's refresh and the runner's schedule, from windows made after."""
    calls = {"refresh": 0, "schedule": 0}

    def counting(cls, name):
        original = getattr(cls, name)

        @functools.wraps(original)  # (the same signature: psygnal passes no argument)
        def wrapper(self, *args):
            calls[name] += 1
            return original(self, *args)

        monkeypatch.setattr(cls, name, wrapper)

    counting(FabricScene, "refresh")
    counting(SolveRunner, "schedule")
    return calls


def _items_match(win) -> None:
    topo = win.document.topology
    assert set(win.scene.nodes) == {n.id for n in topo.nodes()}
    assert set(win.scene.links) == {lk.id for lk in topo.links()}
    assert set(win.scene.groups) == {g.id for g in topo.groups()}


def _settle(qtbot, win) -> None:
    qtbot.waitUntil(lambda: not win.scene.refresh_pending, timeout=5000)


@pytest.mark.parametrize("copies", [1, 8])
def test_bulk_edits_refresh_and_ask_for_a_solve_a_bounded_number_of_times(qtbot, counted, copies):
    win, _ = open_window(qtbot)
    win.analysis.runner.enabled = False  # schedule is still called; no solve starts
    topo = win.document.topology
    stack = win.document.undo_stack
    groups, nodes, links = list(topo.groups()), list(topo.nodes()), list(topo.links())
    _settle(qtbot, win)
    pasted = []
    for step in range(4):
        before = dict(counted)
        if step == 0:
            for i in range(copies):
                cmd = PasteSubgraph(groups, nodes, links, offset=(0.0, 2000.0 * (i + 1)))
                win.document.push(cmd)
                pasted.append(cmd)
        elif step == 1:
            win.document.push(RemoveNodes(n.id for cmd in pasted for n in cmd.nodes))
        elif step == 2:
            stack.undo()
        else:
            stack.redo()
        _settle(qtbot, win)
        _items_match(win)
        edits = copies if step == 0 else 1
        assert counted["schedule"] - before["schedule"] == edits
        assert counted["refresh"] - before["refresh"] <= 2 * edits
    assert len(pasted[0].nodes) == len(nodes) > 50


def test_a_deleted_window_is_no_longer_called_by_its_design(qtbot, counted):
    win, _ = create_window()
    win.show()
    qtbot.waitExposed(win)
    document = win.document
    topo = document.topology
    document.undo_stack.setClean()
    win.close()
    win.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    before = dict(counted)
    with qtbot.captureExceptions() as errors:
        topo.add_node(Node("late", "gpu", "H100", "A GPU after the window"))
        document.push(RemoveNodes([n.id for n in list(topo.nodes())[:20]]))
        document.undo_stack.undo()
        QCoreApplication.processEvents()
    assert [str(e[1]) for e in errors] == []
    assert counted == before
    assert [len(topo.events[name]) for name in topo.events] == [0] * len(topo.events)


def test_a_model_slot_lets_go_when_its_object_is_deleted_though_python_holds_it(qapp):
    """Not the garbage collector's doing: the wrapper is still referenced here."""

    class Follower(QObject):
        def __init__(self, topo):
            super().__init__()
            self.calls = 0
            self.follow = ModelSlot(self, self._on_topology_changed)
            self.follow.watch(topo.events.changed)

        def _on_topology_changed(self, _edit) -> None:
            self.calls += 1

    topo, other = Topology(), Topology()
    follower = Follower(topo)
    topo.add_node(Node("a", "gpu", "H100", "A"))
    follower.follow.watch(other.events.changed)  # follows another design instead
    topo.add_node(Node("b", "gpu", "H100", "B"))
    other.add_node(Node("c", "gpu", "H100", "C"))
    assert follower.calls == 2 and len(topo.events.changed) == 0
    shiboken6.delete(follower)
    other.add_node(Node("d", "gpu", "H100", "D"))
    assert follower.calls == 2 and len(other.events.changed) == 0


def test_editing_a_training_job_does_not_re_solve_the_scenario(qtbot, counted):
    """The jobs are the workload runner's; the scenario's collective does not read
    them, so adding or changing one asks the analysis for nothing (a routing change
    still does)."""
    from designer.model.commands import SetSetting

    win, _ = open_window(qtbot)
    win.analysis.runner.enabled = False  # schedule is still called; no solve starts
    _settle(qtbot, win)
    before = counted["schedule"]
    win.workload.dock.add_job("tiny")
    assert win.document.topology.settings["workloads"]
    assert counted["schedule"] == before
    win.document.push(SetSetting("routing", "ecmp"))
    assert counted["schedule"] == before + 1
