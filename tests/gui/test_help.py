"""Help menu: the user guide on F1, the live shortcut list, About."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

import designer.gui.help as help_module


def _help_menu(window):
    menus = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}
    return menus["Help"]


def test_the_help_menu_holds_guide_shortcuts_and_about(window):
    texts = [a.text().replace("&", "") for a in _help_menu(window).actions() if not a.isSeparator()]
    assert texts == ["User Guide", "Keyboard Shortcuts", "About Fabric Designer"]
    assert window.actions_by_name["user_guide"].shortcut().toString() == "F1"


def test_f1_opens_the_user_guide(window, qtbot, monkeypatch):
    opened = []
    monkeypatch.setattr(help_module, "open_url", lambda url: opened.append(url) or True)
    window.activateWindow()
    qtbot.waitActive(window)
    qtbot.keyClick(window.view, Qt.Key.Key_F1)
    assert len(opened) == 1
    path = Path(opened[0].toLocalFile())
    assert path.name == "user-guide.md" and path.is_file()
    assert "Keyboard shortcuts" in path.read_text(encoding="utf-8")


def test_without_a_markdown_viewer_the_guide_shows_in_the_app(window, qtbot, monkeypatch):
    monkeypatch.setattr(help_module, "open_url", lambda url: False)
    assert window.help_menu.open_user_guide() is False
    viewer = window.help_menu.guide_viewer
    qtbot.addWidget(viewer)
    assert viewer.isVisible()
    assert "Keyboard shortcuts" in viewer.browser.toPlainText()
    viewer.close()


def test_without_a_guide_the_user_is_told(window, monkeypatch, dialogs):
    monkeypatch.setattr(help_module, "user_guide_path", lambda: None)
    assert window.help_menu.open_user_guide() is False
    assert "not installed" in dialogs[-1][1]


def test_the_shortcuts_dialog_lists_the_live_bindings(window, qtbot):
    window.actions_by_name["find"].setShortcut("Ctrl+Shift+F")  # what the window binds now
    dialog = window.help_menu.show_shortcuts()
    qtbot.addWidget(dialog)
    table = dialog.table
    rows = {table.item(r, 0).text(): table.item(r, 1).text() for r in range(table.rowCount())}
    assert rows["Find"] == "Ctrl+Shift+F"
    assert rows["Redo"] == "Ctrl+Y, Ctrl+Shift+Z"
    assert rows["User Guide"] == "F1"
    bound = [a for a in window.actions_by_name.values() if not a.shortcut().isEmpty()]
    assert table.rowCount() == len(bound)


def test_about_names_version_and_licence(window, qtbot):
    import designer

    box = window.help_menu.show_about()
    assert box.isVisible() and not box.isModal()
    assert designer.__version__ in box.text() and "Apache-2.0" in box.text()
    box.close()
