"""A new design starts as a user expects: at a readable zoom, unmodified, under its own
name (recovery copies too), and the design's name can be changed from the File menu,
undoably, saved with the design, the title following it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QMessageBox

from designer.gui.crash import CONTINUE, CrashHandler
from designer.gui.design_properties import DesignPropertiesDialog
from designer.io.fabric_json import load, save
from designer.model.commands import MoveNodes
from designer.model.templates import build_template

Button = QMessageBox.StandardButton


@pytest.fixture(autouse=True)
def _own_data_folder(data_folder):
    """Every test here gets a fresh data folder (tests/gui/conftest.py)."""
    return data_folder


@pytest.fixture
def asked(monkeypatch):
    """Every unsaved-changes question is answered Discard and recorded."""
    questions: list[str] = []

    def question(_parent, _title, text, *_args, **_kw):
        questions.append(text)
        return Button.Discard

    monkeypatch.setattr(QMessageBox, "question", question)
    return questions


def _edit(document) -> None:
    node = next(iter(document.topology.nodes()))
    document.push(MoveNodes({node.id: (node.x + 40, node.y)}))


# ------------------------------------------------------------------ File > New
def test_file_new_starts_at_full_size_around_the_origin(window, qtbot, asked, tmp_path):
    """After a big design (fitted far out), New shows the empty canvas at 100 %, so the
    first device dropped is drawn at its real size, where it was dropped."""
    path = tmp_path / "pod.fabric.json"
    save(build_template("superpod", sus=2), path)
    assert window.files.open_file(path)
    assert window.view.scale_factor < 0.5  # fitted: far out
    assert window.files.new_design()
    view = window.view
    assert view.scale_factor == pytest.approx(1.0)
    centre = view.mapToScene(view.viewport().rect().center())
    assert abs(centre.x()) < 2 and abs(centre.y()) < 2
    assert view.viewport().rect().contains(view.mapFromScene(QPointF(0, 0)))


# ------------------------------------------------------------------ unmodified
def test_a_design_from_a_template_is_not_modified_until_edited(window, qtbot, asked,
                                                             create_from_template):
    create_from_template("hgx")
    assert window.files.new_from_template()
    assert not window.document.is_modified
    assert not window.isWindowModified()
    assert window.files.maybe_save() and asked == []  # nothing to ask about
    _edit(window.document)
    assert window.document.is_modified and window.isWindowModified()


def test_file_new_is_not_modified(window, asked):
    assert window.files.new_design()
    assert not window.document.is_modified and not window.isWindowModified()


def test_after_discard_an_error_report_does_not_claim_the_changes_were_saved(
    window, qtbot, monkeypatch, asked, create_from_template
):
    """Discard, then Create: what the user discarded is gone and the new design has no
    changes, so a later error report must not say unsaved changes went to a copy."""
    _edit(window.document)
    create_from_template("hgx")
    assert window.files.new_from_template()
    assert len(asked) == 1  # the Discard
    reports = []

    def answer(dialog):
        reports.append(dialog.report)
        return CONTINUE

    with CrashHandler(window, show_dialog=answer) as handler:
        try:
            raise RuntimeError("an internal error")
        except RuntimeError as exc:
            handler.handle(type(exc), exc, exc.__traceback__)
    assert len(reports) == 1
    note = reports[0].design_note
    assert "recovery copy" not in note and reports[0].recovery is None
    assert not window.files.autosaver.path.exists()


# ------------------------------------------------------------------ recovery names
def test_recovery_copies_are_named_after_the_design_they_hold(window, qtbot, monkeypatch, asked,
                                                             create_from_template):
    saver = window.files.autosaver
    _edit(window.document)
    assert saver.autosave_now(wait=True)
    first = saver.path
    assert first.name.startswith("Example")
    create_from_template("nvl72")
    assert window.files.new_from_template()
    _edit(window.document)
    assert saver.autosave_now(wait=True)
    name = window.document.topology.name
    slug = name.split()[0]
    assert saver.path.name.startswith(slug), (saver.path, name)
    assert not first.exists() and saver.path.is_file()
    assert [p.name for p in saver.folder.glob("*.fabric.json")] == [saver.path.name]


# ------------------------------------------------------------------ the design's name
def _rename_through_the_menu(window, monkeypatch, text: str | None) -> list[str]:
    """File > Design Properties…, typing ``text`` (None: Cancel); what was offered."""
    offered: list[str] = []

    def type_and_close(dialog):
        offered.append(dialog.name_field.text())
        if text is None:
            return DesignPropertiesDialog.DialogCode.Rejected
        dialog.name_field.setText(text)
        return DesignPropertiesDialog.DialogCode.Accepted

    monkeypatch.setattr(DesignPropertiesDialog, "exec", type_and_close)
    action = next(a for a in window.file_menu.actions() if a.text().startswith("Design"))
    action.trigger()
    return offered


def test_the_name_field_shows_the_whole_name(qtbot):
    topology = build_template("superpod")
    dialog = DesignPropertiesDialog(topology)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    field = dialog.name_field
    assert field.text() == topology.name
    assert field.width() > field.fontMetrics().horizontalAdvance(topology.name) + 8


def test_the_design_can_be_renamed_from_the_file_menu(window, monkeypatch, asked, tmp_path):
    doc = window.document
    old = doc.topology.name
    assert _rename_through_the_menu(window, monkeypatch, "Pod A") == [old]
    assert doc.topology.name == "Pod A"
    assert window.windowTitle().startswith("Pod A")
    assert doc.is_modified and window.isWindowModified()
    doc.undo_stack.undo()
    assert doc.topology.name == old and old in window.windowTitle()
    assert not doc.is_modified
    doc.undo_stack.redo()
    assert doc.topology.name == "Pod A"

    path = tmp_path / "a.fabric.json"
    assert window.files.save_as(path)
    assert load(path).name == "Pod A"
    # A saved design's title names the file, and the design when the two differ.
    assert window.windowTitle().startswith("a.fabric.json")
    assert "Pod A" in window.windowTitle()
    _rename_through_the_menu(window, monkeypatch, "Pod B")
    assert "Pod B" in window.windowTitle() and "Pod A" not in window.windowTitle()


def test_renaming_to_the_same_or_a_blank_name_changes_nothing(window, monkeypatch, asked):
    doc = window.document
    old = doc.topology.name
    _rename_through_the_menu(window, monkeypatch, None)  # Cancel
    _rename_through_the_menu(window, monkeypatch, old)
    _rename_through_the_menu(window, monkeypatch, "   ")
    assert doc.topology.name == old
    assert doc.undo_stack.count() == 0 and not doc.is_modified


def test_a_renamed_design_autosaves_under_its_new_name(window, monkeypatch, asked):
    saver = window.files.autosaver
    _rename_through_the_menu(window, monkeypatch, "Renamed pod")
    assert saver.autosave_now(wait=True)
    assert load(saver.path).name == "Renamed pod"
    assert saver.path.name.startswith("Renamed-pod")


def test_the_name_is_kept_when_nothing_else_changed_since_the_last_copy(window, monkeypatch, asked):
    """A rename after an autosave is a change the next copy must hold."""
    saver = window.files.autosaver
    _edit(window.document)
    assert saver.autosave_now(wait=True)
    _rename_through_the_menu(window, monkeypatch, "Later name")
    assert saver.autosave_now(wait=True)
    assert load(saver.path).name == "Later name"


def test_the_busbw_curve_label_follows_a_rename_and_a_new_design(window, asked):
    """The bus-bandwidth panel names "this design": renaming an unsaved design, undoing
    the rename and replacing the design each update it."""
    busbw = window.analysis.busbw
    window.files.new_design()
    window.document.rename("Rack study")
    assert busbw.design_name == "Rack study"
    window.document.undo_stack.undo()
    assert busbw.design_name == window.document.title
    window.document.replace(build_template("hgx"))
    assert busbw.design_name == window.document.title == build_template("hgx").name
