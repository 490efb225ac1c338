"""File > Export's save dialog: an existing export folder typed as the name is chosen,
not opened (the user could never pick it otherwise); a file name still works."""

from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit

# The real dialog: the suite's autouse `dialogs` fixture stands a cancelling one in for
# `designer.gui.export_dialog.ask_export_target` during tests.
from designer.gui.export_dialog import ask_export_target


def _type_into_dialog(text: str, seen: list) -> None:
    dialog = QApplication.activeModalWidget()
    if not isinstance(dialog, QFileDialog):
        QTimer.singleShot(20, lambda: _type_into_dialog(text, seen))
        return
    seen.append(dialog)
    edit = dialog.findChild(QLineEdit, "fileNameEdit")
    edit.setFocus()
    edit.selectAll()  # typed over, as a user does (clear() confuses the dialog's completer)
    QTest.keyClicks(edit, text)
    QApplication.processEvents()
    QTest.keyClick(edit, Qt.Key.Key_Return)
    # A dialog still open (it entered the folder instead of choosing it): cancel it.
    QTimer.singleShot(500, lambda: dialog.isVisible() and dialog.reject())


def test_typing_an_existing_export_folder_chooses_it(qtbot, tmp_path):
    (tmp_path / "old.netbox").mkdir()
    seen: list = []
    QTimer.singleShot(0, lambda: _type_into_dialog("old.netbox", seen))
    chosen, _ = ask_export_target(
        None,
        "Export",
        str(tmp_path / "d.svg"),
        "NetBox import folder (*.netbox)",
        "NetBox import folder (*.netbox)",
    )
    assert seen and Path(chosen) == tmp_path / "old.netbox"


def test_typing_a_new_file_name_chooses_it(qtbot, tmp_path):
    seen: list = []
    QTimer.singleShot(0, lambda: _type_into_dialog("new.drawio", seen))
    chosen, _ = ask_export_target(
        None,
        "Export",
        str(tmp_path / "d.svg"),
        "draw.io diagram (*.drawio)",
        "draw.io diagram (*.drawio)",
    )
    assert seen and Path(chosen) == tmp_path / "new.drawio"
