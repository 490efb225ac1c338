"""The main window as ``fabric-designer`` opens it: example design, docks, menus, title."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication, QMenu

from designer.gui.app import create_window, open_when_shown
from designer.gui.canvas.items import GroupItem, LinkItem, NodeItem
from designer.io.fabric_json import save
from designer.model.commands import MoveNodes, RemoveNodes
from designer.model.templates import build_template
from designer.model.topology import Topology
from tests.gui.conftest import close_window, open_window

S = QKeySequence.StandardKey


def _menu_actions(menu: QMenu):
    for action in menu.actions():
        if action.menu() is not None:
            yield from _menu_actions(action.menu())
        elif not action.isSeparator():
            yield action


def test_opens_with_the_example_design_on_the_canvas(window):
    topo = window.document.topology
    kinds = Counter(n.kind for n in topo.nodes())
    assert kinds["gpu"] == 32  # 4 HGX H100 nodes x 8
    assert kinds["leaf"] >= 8 and kinds["spine"] >= 1 and kinds["storage"] >= 1
    scene = window.scene
    # Every node and link bundle of the model has exactly one item, of the right kind.
    assert set(scene.nodes) == {n.id for n in topo.nodes()}
    assert set(scene.links) == {lk.id for lk in topo.links()}
    assert sum(isinstance(i, NodeItem) for i in scene.items()) == len(topo)
    assert sum(isinstance(i, LinkItem) for i in scene.items()) == topo.graph.number_of_edges()
    assert sum(1 for i in scene.nodes.values() if i.node.kind == "gpu") == 32
    # Server nodes are drawn as containers around their GPUs.
    assert sum(isinstance(i, GroupItem) for i in scene.items()) == len(list(topo.groups()))
    # Items sit where the model puts them.
    for node in topo.nodes():
        pos = scene.nodes[node.id].pos()
        assert (pos.x(), pos.y()) == (node.x, node.y)
    assert window.document.is_modified is False


def test_fit_shows_every_node_inside_the_viewport(window):
    view = window.view
    visible = view.mapToScene(view.viewport().rect()).boundingRect()
    for item in window.scene.nodes.values():
        assert visible.contains(item.sceneBoundingRect()), item.node_id


def test_palette_is_docked_left_and_inspector_right(window):
    area = window.dockWidgetArea
    assert area(window.palette) == Qt.DockWidgetArea.LeftDockWidgetArea
    assert area(window.inspector) == Qt.DockWidgetArea.RightDockWidgetArea
    assert window.centralWidget() is window.view
    assert window.palette.isVisible() and window.inspector.isVisible()
    # The palette offers the parts of the example (GPUs, leaves, spines).
    kinds = {kind for kind, _model in window.palette.entries()}
    assert {"gpu", "nvswitch", "leaf", "spine", "storage"} <= kinds
    assert window.palette.geometry().right() < window.view.geometry().left() + 1
    assert window.inspector.geometry().left() >= window.view.geometry().right()


def test_status_bar_summarises_the_selection(window):
    label = window.selection_label
    topo = window.document.topology
    assert label.text() == f"{len(topo)} nodes, {topo.graph.number_of_edges()} links"
    gpus = [n.id for n in topo.nodes("gpu")][:3]
    leaf = next(topo.nodes("leaf")).id
    link = next(iter(window.scene.links))
    window.scene.select_ids([*gpus, leaf], [link])
    assert label.text() == "4 node(s) (3 GPU), 1 link(s) selected"
    window.scene.clearSelection()
    assert label.text().startswith(f"{len(topo)} nodes")


def test_status_bar_counts_follow_edits_and_undo(window):
    """Deleting a spine (a command, not a selection change) updates the counts; so
    does undoing it."""
    label = window.selection_label
    topo = window.document.topology
    before = label.text()
    spine = next(topo.nodes("spine")).id
    n_links = len(topo.links_of(spine))
    window.document.push(RemoveNodes([spine]))
    assert label.text() == f"{len(topo)} nodes, {topo.graph.number_of_edges()} links"
    assert label.text() != before and n_links > 0
    window.document.undo_stack.undo()
    assert label.text() == before


STANDARD = {
    "new": ("File", S.New),
    "open": ("File", S.Open),
    "save": ("File", S.Save),
    "save_as": ("File", S.SaveAs),
    "undo": ("Edit", S.Undo),
    "redo": ("Edit", S.Redo),
    "cut": ("Edit", S.Cut),
    "copy": ("Edit", S.Copy),
    "paste": ("Edit", S.Paste),
    "delete": ("Edit", S.Delete),
    "select_all": ("Edit", S.SelectAll),
    "find": ("Edit", S.Find),
    "zoom_in": ("View", S.ZoomIn),
    "zoom_out": ("View", S.ZoomOut),
}


@pytest.mark.parametrize("name", sorted(STANDARD))
def test_menus_hold_the_standard_actions_with_platform_shortcuts(window, name):
    menu_title, key = STANDARD[name]
    menus = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}
    action = window.actions_by_name[name]
    assert action in list(_menu_actions(menus[menu_title]))
    assert not action.shortcut().isEmpty()
    # The platform's primary binding for that standard key (Ctrl+S, Ctrl+Z...).
    assert action.shortcut() == QKeySequence.keyBindings(key)[0]


def test_familiar_shortcuts(window):
    a = window.actions_by_name
    expected = {
        "new": "Ctrl+N",
        "open": "Ctrl+O",
        "save": "Ctrl+S",
        "save_as": "Ctrl+Shift+S",
        "undo": "Ctrl+Z",
        "cut": "Ctrl+X",
        "copy": "Ctrl+C",
        "paste": "Ctrl+V",
        "delete": "Del",
        "select_all": "Ctrl+A",
        "find": "Ctrl+F",
        "zoom_fit": "Ctrl+0",
        "zoom_in": "Ctrl++",
        "zoom_out": "Ctrl+-",
    }
    got = {name: a[name].shortcut().toString() for name in expected}
    assert got == expected
    view_menu = {x.text().replace("&", ""): x.menu() for x in window.menuBar().actions()}["View"]
    assert a["zoom_fit"] in list(_menu_actions(view_menu))


def test_alternate_shortcuts_users_expect(window):
    redo = window.actions_by_name["redo"].shortcuts()
    zoom_in = window.actions_by_name["zoom_in"].shortcuts()
    assert QKeySequence("Ctrl+Shift+Z") in redo
    assert QKeySequence("Ctrl+=") in zoom_in  # the view's docstring promises it


def test_title_marks_unsaved_changes_until_undone(window, qtbot):
    doc = window.document
    assert not window.isWindowModified()
    assert "[*]" in window.windowTitle()  # where Qt shows the "*" of unsaved changes
    assert "Fabric Designer" in window.windowTitle()
    assert doc.topology.name in window.windowTitle()
    window.scene.select_ids([next(doc.topology.nodes("gpu")).id])
    qtbot.keyClick(window.view, Qt.Key.Key_Right)
    assert window.isWindowModified()
    assert doc.undo_stack.count() == 1
    window.actions_by_name["undo"].trigger()
    assert not window.isWindowModified()
    window.actions_by_name["redo"].trigger()
    assert window.isWindowModified()


def test_keyboard_shortcuts_reach_the_actions(window, qtbot):
    """Real key presses on the canvas trigger the window's actions."""
    window.activateWindow()
    qtbot.waitActive(window)
    view, topo = window.view, window.document.topology
    total = len(topo)
    qtbot.keyClick(view, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    assert len(window.scene.selected_node_ids()) == total
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    assert len(topo) == 0
    qtbot.keyClick(view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert len(topo) == total
    scale = view.scale_factor
    qtbot.keyClick(view, Qt.Key.Key_Plus, Qt.KeyboardModifier.ControlModifier)
    assert view.scale_factor == pytest.approx(scale * 1.2)


def test_create_window_opens_a_file(qtbot, tmp_path):
    topo = Topology(name="two gpus")
    design = build_template("example")
    for node in list(design.nodes("gpu"))[:2]:
        topo.add_node(replace(node, group=None))
    path = tmp_path / "small.fabric.json"
    save(topo, path)
    win, error = open_window(qtbot, path)
    try:
        assert error is None
        assert set(win.scene.nodes) == {n.id for n in topo.nodes()}
        assert win.document.path == path
        assert "small.fabric.json" in win.windowTitle()
        assert not win.isWindowModified()
    finally:
        close_window(win)


def test_a_file_given_at_start_opens_once_the_window_shows(qtbot, tmp_path, monkeypatch):
    # fabric-designer FILE: the window first (on the example), then the file, saying so.
    path = tmp_path / "pod.fabric.json"
    save(build_template("superpod", gpu="H100", sus=1), path)
    win, _ = open_window(qtbot)
    try:
        seen = {}
        real_open = win.document.open

        def spy(p, **kwargs):
            seen["status"] = win.statusBar().currentMessage()
            cursor = QApplication.overrideCursor()
            seen["cursor"] = cursor.shape() if cursor is not None else None
            seen["visible"] = win.isVisible()
            real_open(p, **kwargs)

        monkeypatch.setattr(win.document, "open", spy)
        open_when_shown(win, path)
        assert win.document.path is None  # not yet: after the window is up
        qtbot.waitUntil(lambda: win.document.path == path, timeout=10_000)
        assert seen == {"status": "Opening pod.fabric.json…",
                        "cursor": Qt.CursorShape.WaitCursor, "visible": True}
        assert QApplication.overrideCursor() is None
        assert "pod.fabric.json" in win.windowTitle()
    finally:
        close_window(win)


def test_a_bad_file_given_at_start_leaves_the_example_and_no_busy_cursor(
        qtbot, tmp_path, monkeypatch):
    path = tmp_path / "bad.fabric.json"
    path.write_text("{ not json")
    win, _ = open_window(qtbot)
    try:
        shown = []
        monkeypatch.setattr(win.files, "_error", lambda title, text: shown.append(text))
        nodes = set(win.scene.nodes)
        open_when_shown(win, path)
        qtbot.waitUntil(lambda: bool(shown), timeout=10_000)
        assert "bad.fabric.json" in shown[0]
        assert set(win.scene.nodes) == nodes and win.document.path is None
        assert QApplication.overrideCursor() is None
    finally:
        close_window(win)


@pytest.mark.parametrize(
    "content", ["{ not json", json.dumps({"nodes": 3})], ids=["syntax", "shape"]
)
def test_a_bad_file_falls_back_to_the_example_with_an_error(qtbot, tmp_path, content):
    path = tmp_path / "broken.fabric.json"
    path.write_text(content)
    win, error = open_window(qtbot, path)
    try:
        assert isinstance(error, str) and error
        assert "broken.fabric.json" in error  # the message names the culprit
        assert "\n" not in error.strip()
        assert sum(1 for n in win.document.topology.nodes("gpu")) == 32
        assert win.document.path is None
        assert len(win.scene.nodes) == len(win.document.topology)
    finally:
        close_window(win)


def test_a_missing_file_falls_back_with_an_error(qtbot, tmp_path):
    win, error = open_window(qtbot, tmp_path / "nope.fabric.json")
    try:
        assert error and "nope.fabric.json" in error
        assert sum(1 for n in win.document.topology.nodes("gpu")) == 32
        assert len(win.scene.nodes) == len(win.document.topology)
    finally:
        close_window(win)


def test_closing_an_unmodified_window_needs_no_prompt(window, dialogs):
    assert window.close()
    assert dialogs == []


def test_closing_a_modified_window_asks_and_cancel_keeps_it_open(window, dialogs):
    window.scene.select_ids(["spine-0"])
    window.actions_by_name["delete"].trigger()
    assert not window.close()  # the dialogs fixture answers Cancel
    assert [kind for kind, _text in dialogs] == ["question"]
    assert window.isVisible() and not window.document.topology.has_node("spine-0")


def _unregistered_window(qtbot):
    """A window pytest-qt does not close for us (these tests delete it themselves)."""
    win, _ = create_window()
    win.show()
    qtbot.waitExposed(win)
    return win


def _delete_now(win) -> None:
    win.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def test_deleting_the_window_with_a_selection_raises_nothing(qtbot):
    win = _unregistered_window(qtbot)
    win.scene.select_ids([next(iter(win.scene.nodes))])
    win.document.undo_stack.setClean()
    win.close()  # the selection stays, as when a user quits
    with qtbot.captureExceptions() as errors:
        _delete_now(win)
    assert [str(e[1]) for e in errors] == []


def test_deleting_the_window_without_a_selection_raises_nothing(qtbot):
    win = _unregistered_window(qtbot)
    win.close()
    with qtbot.captureExceptions() as errors:
        _delete_now(win)
    assert [str(e[1]) for e in errors] == []


def test_the_document_outliving_its_window_raises_nothing(qtbot):
    """On quit the Document (no Qt parent) can be destroyed after the window."""
    win = _unregistered_window(qtbot)
    document = win.document
    node = next(document.topology.nodes())
    document.push(MoveNodes({node.id: (node.x + 20, node.y)}))
    win.document.undo_stack.setClean()
    win.close()
    with qtbot.captureExceptions() as errors:
        _delete_now(win)
        document.undo_stack.clear()  # what the stack's destructor does
    assert [str(e[1]) for e in errors] == []


@pytest.mark.parametrize(("argv", "expected"), [([], None), (["d.fabric.json"], "d.fabric.json")])
def test_the_command_without_a_subcommand_starts_the_gui(monkeypatch, argv, expected):
    """``fabric-designer [FILE]`` and ``python -m designer [FILE]`` land in ``app.run``."""
    from designer import cli

    started = []
    monkeypatch.setattr("designer.gui.app.run", lambda file=None: started.append(file) or 0)
    assert cli.main(argv) == 0
    assert started == [expected]


def test_run_with_a_bad_file_warns_once_and_shows_the_example(
    qtbot, tmp_path, monkeypatch, dialogs
):
    from designer.gui import app as app_module

    bad = tmp_path / "bad.fabric.json"
    bad.write_text("{")
    shown = []

    def fake_exec(*_args):
        # The file opens once the loop runs (`open_when_shown`): let it, until it warns.
        qtbot.waitUntil(lambda: bool(dialogs), timeout=10_000)
        (win,) = [
            w
            for w in QApplication.topLevelWidgets()
            if w.isVisible()
            and w.objectName() == "main_window"
            and w.document.path is None
            and w not in shown
        ]
        shown.append(win)
        return 0

    monkeypatch.setattr(QApplication, "exec", fake_exec)
    assert app_module.run(str(bad)) == 0
    assert [kind for kind, _ in dialogs] == ["warning"]
    assert "bad.fabric.json" in dialogs[0][1]
    (win,) = shown
    assert sum(1 for _ in win.document.topology.nodes("gpu")) == 32
    close_window(win)


def test_no_display_is_one_clear_line_not_a_qt_abort(monkeypatch, capsys):
    from designer.gui import app as app_module

    monkeypatch.setattr(app_module.sys, "platform", "linux")
    for var in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(var, raising=False)
    assert app_module.run(None) == 1
    err = capsys.readouterr().err
    assert err.startswith("fabric-designer: error: no display") and err.count("\n") == 1


def test_a_missing_x11_library_is_one_clear_line_not_a_qt_abort(monkeypatch, capsys):
    # Qt's xcb plugin needs libxcb-icccm and friends besides libxcb-cursor; without one
    # Qt prints several lines and aborts.  The app loads the plugin first and names the
    # library the dynamic linker could not find.
    from designer.gui import app as app_module

    monkeypatch.setattr(app_module.sys, "platform", "linux")
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("DISPLAY", ":99")
    loaded = []

    def cdll(path, *args, **kwargs):
        loaded.append(path)
        raise OSError("libxcb-icccm.so.4: cannot open shared object file: No such file or "
                      "directory")

    monkeypatch.setattr(app_module.ctypes, "CDLL", cdll)
    monkeypatch.setattr(app_module.Path, "is_file", lambda self: True)
    assert app_module.run(None) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fabric-designer: error: Qt cannot open")
    assert "libxcb-icccm.so.4 is missing" in err and "apt-get install" in err
    assert loaded and loaded[0].endswith("platforms/libqxcb.so")
    # The plugin loads: nothing to say.
    monkeypatch.setattr(app_module.ctypes, "CDLL", lambda path, *a, **k: None)
    assert app_module.missing_display_library() is None
