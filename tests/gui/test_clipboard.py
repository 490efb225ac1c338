"""Copy, cut, paste and duplicate of sub-graphs, with their internal links only."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QMimeData
from PySide6.QtWidgets import QApplication

from designer.gui.canvas.geometry import NODE_BOUNDS
from designer.gui.edit import SUBGRAPH_MIME

# GPU 0 and 1 of server 1 with two of its NVSwitches: 4 internal NVLink bundles, plus
# external links (to NVSwitches 2-3 and the NICs' PCIe) that must not come along.
PICK = ["n01-gpu0", "n01-gpu1", "n01-nvs0", "n01-nvs1"]


@pytest.fixture
def clipboard():
    board = QApplication.clipboard()
    board.clear()
    yield board
    board.clear()


def _internal(topo, ids):
    return [lk for lk in topo.links() if lk.a in ids and lk.b in ids]


def test_copy_puts_the_subgraph_with_only_internal_links_on_the_clipboard(window, clipboard):
    topo = window.document.topology
    window.scene.select_ids(PICK)
    window.actions_by_name["copy"].trigger()
    mime = clipboard.mimeData()
    assert mime.hasFormat(SUBGRAPH_MIME)
    payload = json.loads(bytes(mime.data(SUBGRAPH_MIME)).decode())
    assert sorted(n["id"] for n in payload["nodes"]) == sorted(PICK)
    internal = _internal(topo, set(PICK))
    assert len(internal) == 4
    assert sorted(lk["id"] for lk in payload["links"]) == sorted(lk.id for lk in internal)
    assert "4 node(s), 4 link(s)" in mime.text()
    assert window.document.undo_stack.count() == 0  # copying changes nothing


def test_paste_adds_fresh_copies_that_become_the_selection(window, clipboard):
    topo, scene = window.document.topology, window.scene
    before_nodes = {n.id for n in topo.nodes()}
    before_links = {lk.id for lk in topo.links()}
    originals = [topo.node(n) for n in PICK]
    scene.select_ids(PICK)
    window.actions_by_name["copy"].trigger()
    window.actions_by_name["paste"].trigger()
    new_nodes = [n for n in topo.nodes() if n.id not in before_nodes]
    new_links = [lk for lk in topo.links() if lk.id not in before_links]
    assert len(new_nodes) == 4 and len(new_links) == 4
    # Fresh ids, same devices, shifted so the copy does not hide the original.
    assert not ({n.id for n in new_nodes} & before_nodes)
    assert sorted((n.kind, n.model) for n in new_nodes) == sorted(
        (n.kind, n.model) for n in originals)
    assert not ({(n.x, n.y) for n in new_nodes} & {(n.x, n.y) for n in originals})
    new_ids = {n.id for n in new_nodes}
    for link in new_links:
        assert link.a in new_ids and link.b in new_ids  # wired among the copies only

    # The same wiring as the originals: bundles and counts between the same places in
    # the copied shape (each end's position relative to the copy's first corner).
    def wiring(links):
        ends = {lk.a for lk in links} | {lk.b for lk in links}
        x0 = min(topo.node(n).x for n in ends)
        y0 = min(topo.node(n).y for n in ends)

        def place(n):
            return topo.node(n).x - x0, topo.node(n).y - y0

        return sorted((tuple(sorted((place(lk.a), place(lk.b)))), lk.tech, lk.count)
                      for lk in links)

    assert wiring(new_links) == wiring(_internal(topo, set(PICK)))
    assert set(scene.selected_node_ids()) == new_ids
    assert set(scene.selected_link_ids()) == {lk.id for lk in new_links}
    assert all(n.id in scene.nodes for n in new_nodes)
    assert window.document.undo_stack.count() == 1


def test_pasting_twice_gives_two_distinct_copies_at_different_places(window, clipboard):
    topo = window.document.topology
    window.scene.select_ids(PICK)
    window.actions_by_name["copy"].trigger()
    window.actions_by_name["paste"].trigger()
    first = set(window.scene.selected_node_ids())
    window.actions_by_name["paste"].trigger()
    second = set(window.scene.selected_node_ids())
    assert len(first) == len(second) == 4 and not (first & second)
    spots = {(topo.node(n).x, topo.node(n).y) for n in first | second | set(PICK)}
    assert len(spots) == 12
    assert window.document.undo_stack.count() == 2


def test_undo_removes_a_paste_and_redo_restores_the_same_ids(window, clipboard):
    topo, stack = window.document.topology, window.document.undo_stack
    before = topo.state()
    window.scene.select_ids(PICK)
    window.actions_by_name["copy"].trigger()
    window.actions_by_name["paste"].trigger()
    pasted = set(window.scene.selected_node_ids())
    stack.undo()
    assert topo.state() == before
    assert not (pasted & set(window.scene.nodes))
    stack.redo()
    assert pasted <= {n.id for n in topo.nodes()} and pasted <= set(window.scene.nodes)


def test_cut_removes_the_selection_and_undo_brings_it_back(window, clipboard):
    topo, stack = window.document.topology, window.document.undo_stack
    before = topo.state()
    touching = {lk.id for lk in topo.links() if {lk.a, lk.b} & set(PICK)}
    window.scene.select_ids(PICK)
    window.actions_by_name["cut"].trigger()
    assert not any(topo.has_node(n) for n in PICK)
    assert not any(topo.has_link(lk) for lk in touching)
    assert clipboard.mimeData().hasFormat(SUBGRAPH_MIME)
    assert stack.count() == 1
    stack.undo()
    assert topo.state() == before
    # What was cut can still be pasted, as copies.
    window.actions_by_name["paste"].trigger()
    assert len(window.scene.selected_node_ids()) == 4
    assert not (set(window.scene.selected_node_ids()) & set(PICK))


def test_duplicate_copies_in_place_without_touching_the_clipboard(window, clipboard):
    topo = window.document.topology
    marker = QMimeData()
    marker.setText("keep me")
    clipboard.setMimeData(marker)
    before = {n.id for n in topo.nodes()}
    window.scene.select_ids(PICK)
    window.actions_by_name["duplicate"].trigger()
    copies = set(window.scene.selected_node_ids())
    assert len(copies) == 4 and not (copies & before)
    assert len(_internal(topo, copies)) == 4
    assert clipboard.text() == "keep me"
    assert window.document.undo_stack.count() == 1
    window.document.undo_stack.undo()
    assert {n.id for n in topo.nodes()} == before


def test_copy_of_a_whole_server_brings_its_group(window, clipboard):
    """Selecting every member of a server node copies the server's frame too."""
    topo = window.document.topology
    members = topo.members("n02")
    groups_before = {g.id for g in topo.groups()}
    window.scene.select_ids(members)
    window.actions_by_name["copy"].trigger()
    window.actions_by_name["paste"].trigger()
    new_groups = [g for g in topo.groups() if g.id not in groups_before]
    assert [g.kind for g in new_groups] == ["node"]
    pasted = window.scene.selected_node_ids()
    assert len(pasted) == len(members)
    assert {topo.node(n).group for n in pasted} == {new_groups[0].id}
    assert new_groups[0].id in window.scene.groups


def test_paste_with_a_foreign_clipboard_says_so(window, clipboard):
    clipboard.setText("just text")
    before = window.document.topology.state()
    window.actions_by_name["paste"].trigger()
    assert window.document.topology.state() == before
    assert "clipboard" in window.statusBar().currentMessage().lower()


def test_copy_with_nothing_selected_says_so(window, clipboard):
    window.scene.clearSelection()
    window.actions_by_name["copy"].trigger()
    assert "Nothing selected" in window.statusBar().currentMessage()
    mime = clipboard.mimeData()
    assert mime is None or not mime.hasFormat(SUBGRAPH_MIME)


def test_paste_between_two_windows(window, clipboard, qtbot):
    from tests.gui.conftest import close_window, open_window

    window.scene.select_ids(PICK)
    window.actions_by_name["copy"].trigger()
    other, _ = open_window(qtbot)
    try:
        other.files.new_design()
        other.actions_by_name["paste"].trigger()
        topo = other.document.topology
        assert len(topo) == 4 and topo.graph.number_of_edges() == 4
    finally:
        close_window(other)


def test_the_process_exits_cleanly_after_a_copy(tmp_path):
    # The clipboard owns the copied QMimeData; without clearing it while Python still
    # runs, Qt deletes it from a C++ exit handler and the process dies with SIGSEGV.
    import os
    import subprocess
    import sys

    script = (
        "from designer.gui.app import application, create_window\n"
        "app = application()\n"
        "window, _ = create_window()\n"
        "window.scene.select_ids(['n01-gpu0', 'n01-gpu1'])\n"
        "assert window.edit.copy()\n"
        "window.document.undo_stack.setClean()\n"
        "window.close()\n"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])


# ---------------------------------------------------------------------- where copies land
def _footprint(topo, node_id):
    node = topo.node(node_id)
    return NODE_BOUNDS.translated(node.x, node.y)


def _clashes(topo, new_ids, old_ids):
    """Pairs of a new and an old node whose footprints (icon and label) overlap."""
    return [(a, b) for a in new_ids for b in old_ids
            if _footprint(topo, a).intersects(_footprint(topo, b))]


def _frames_over_outsiders(window):
    """(group, node) pairs where a group's frame covers a node that is not in it."""
    topo, scene = window.document.topology, window.scene
    scene.refresh()  # frames fitted now, not on the next turn of the event loop
    pairs = set()
    for group in topo.groups():
        frame = scene.groups[group.id].frame_rect()
        members = set(topo.members(group.id))
        pairs |= {(group.id, n.id) for n in topo.nodes()
                  if n.id not in members and frame.intersects(_footprint(topo, n.id))}
    return pairs


def _sibling_names_unique(topo):
    by_group = {}
    for node in topo.nodes():
        by_group.setdefault(node.group, []).append(node.name)
    return all(len(names) == len(set(names)) for names in by_group.values())


@pytest.mark.parametrize("how", ["paste", "duplicate"])
def test_copies_land_clear_of_every_node_with_names_unique_in_their_group(
        window, clipboard, how):
    topo, scene = window.document.topology, window.scene
    before = {n.id for n in topo.nodes()}
    covered = _frames_over_outsiders(window)
    scene.select_ids(PICK)
    if how == "paste":
        window.actions_by_name["copy"].trigger()
    for _ in range(3):  # repeated: each copy clear of the earlier ones too
        window.actions_by_name[how].trigger()
        copies = set(scene.selected_node_ids())
        assert len(copies) == len(PICK)
        assert not _clashes(topo, copies, {n.id for n in topo.nodes()} - copies)
        assert _sibling_names_unique(topo)
        # The server's frame grows to hold the copies, over nothing outside it (the
        # rack is full: its frame may grow over its neighbours).
        assert {(g, n) for g, n in _frames_over_outsiders(window) if g == "n01"} <= covered
    assert len(topo) == len(before) + 3 * len(PICK)
    assert window.document.undo_stack.count() == 3  # one step each


def test_a_pasted_server_lands_beside_the_others_under_a_name_of_its_own(window, clipboard):
    topo, scene = window.document.topology, window.scene
    members = topo.members("n02")
    scene.select_ids(members)
    window.actions_by_name["copy"].trigger()
    covered = _frames_over_outsiders(window)
    frames = {g.id: scene.groups[g.id].frame_rect() for g in topo.groups()}
    old_nodes = {n.id for n in topo.nodes()}
    pasted_groups = []
    for _ in range(2):
        groups_before = {g.id for g in topo.groups()}
        window.actions_by_name["paste"].trigger()
        (new,) = [g.id for g in topo.groups() if g.id not in groups_before]
        pasted_groups.append(new)
        copies = set(scene.selected_node_ids())
        assert not _clashes(topo, copies, old_nodes)
        old_nodes |= copies
        scene.refresh()
        frame = scene.groups[new].frame_rect()
        # Clear of every other server's frame (the rack around them all grows to hold it).
        for gid, other in frames.items():
            if topo.group(gid).kind == "node":
                assert not frame.intersects(other), gid
        frames[new] = frame
        # The rack's frame grows to hold the copy, over nothing outside the rack.
        assert _frames_over_outsiders(window) <= covered
    names = [g.name for g in topo.groups()]
    assert len(names) == len(set(names))
    assert window.document.undo_stack.count() == 2


def test_paste_where_the_originals_are_free_keeps_their_places(window, clipboard, qtbot):
    from tests.gui.conftest import close_window, open_window

    topo = window.document.topology
    window.scene.select_ids(PICK)
    window.actions_by_name["copy"].trigger()
    places = sorted((topo.node(n).name, topo.node(n).x, topo.node(n).y) for n in PICK)
    other, _ = open_window(qtbot)
    try:
        other.files.new_design()
        other.actions_by_name["paste"].trigger()
        pasted = sorted((n.name, n.x, n.y) for n in other.document.topology.nodes())
        assert pasted == places
    finally:
        close_window(other)
