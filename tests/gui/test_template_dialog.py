"""The New from Template dialog: one entry per template, typed parameter forms with the
defaults, building on Create, errors shown in the dialog."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QCheckBox, QComboBox, QDialog, QDoubleSpinBox, QLineEdit, QSpinBox

from designer.gui.template_dialog import TemplateDialog, make_field
from designer.model.templates import TEMPLATES, Param, build_template


@pytest.fixture
def dialog(qtbot):
    d = TemplateDialog()
    qtbot.addWidget(d)
    return d


def test_lists_every_template_in_order(dialog):
    names = [dialog.list.item(i).text() for i in range(dialog.list.count())]
    assert names == list(TEMPLATES)
    assert dialog.template_name() == names[0]


def test_each_page_shows_the_templates_help(dialog):
    for name, template in TEMPLATES.items():
        dialog.set_template(name)
        page = dialog.pages.currentWidget()
        texts = " ".join(label.text() for label in page.findChildren(type(dialog.error)))
        assert template.help[1:] in texts
        for p in template.params:
            assert p.help in texts


def test_forms_are_typed_and_filled_with_the_defaults(dialog):
    for name, template in TEMPLATES.items():
        dialog.set_template(name)
        assert dialog.params() == {p.name: p.default for p in template.params}
        for p in template.params:
            field = dialog.field(p.name)
            if p.choices is not None:
                assert isinstance(field, QComboBox)
                assert [field.itemData(i) for i in range(field.count())] == list(p.choices)
            elif isinstance(p.default, bool):
                assert isinstance(field, QCheckBox)
            elif isinstance(p.default, int):
                assert isinstance(field, QSpinBox)
                assert field.minimum() <= p.default <= field.maximum()
            elif isinstance(p.default, float):
                assert isinstance(field, QDoubleSpinBox)
            else:
                assert isinstance(field, QLineEdit)
            assert type(dialog.params()[p.name]) is type(p.default)


def test_a_free_string_parameter_gets_a_line_edit(qtbot):
    field = make_field(Param("label", "rack A", "a free text"))
    qtbot.addWidget(field)
    assert isinstance(field, QLineEdit) and field.text() == "rack A"


def test_integer_ranges_follow_the_help_text(dialog):
    dialog.set_template("hgx")
    gpus = dialog.field("gpus")
    assert (gpus.minimum(), gpus.maximum()) == (1, 8)
    dialog.set_template("nvl72")
    gpus = dialog.field("gpus")
    assert (gpus.minimum(), gpus.maximum(), gpus.singleStep()) == (4, 72, 4)
    dialog.set_template("fat-tree")
    assert dialog.field("k").singleStep() == 2
    dialog.set_template("rail-cluster")
    assert dialog.field("nics_per_node").minimum() == 0  # 0 means one per GPU
    assert dialog.field("nodes").minimum() == 1


def test_switching_templates_keeps_what_was_typed(dialog):
    dialog.set_template("torus3d")
    dialog.set_param("x", 3)
    dialog.set_template("hgx")
    dialog.set_template("torus3d")
    assert dialog.params()["x"] == 3


def test_create_builds_the_chosen_design(dialog):
    dialog.set_template("superpod")
    dialog.set_param("sus", 1)
    dialog.set_param("storage", True)
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted
    built = dialog.topology()
    assert built.state() == build_template("superpod", sus=1, storage=True).state()
    assert sum(1 for _ in built.nodes("storage")) > 0
    assert QGuiApplication.overrideCursor() is None  # the busy cursor is gone


def test_a_build_error_is_shown_and_the_dialog_stays_open(dialog, qtbot):
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.set_template("leaf-spine")
    dialog.set_param("leaves", 200)  # a 64-port spine cannot take 200 leaves
    dialog.accept()
    assert dialog.isVisible()
    assert dialog.topology() is None
    assert dialog.error.isVisible()
    assert "spine needs 200 ports" in dialog.error.text()
    assert "\n" not in dialog.error.text()
    assert QGuiApplication.overrideCursor() is None

    dialog.set_param("leaves", 4)
    dialog.accept()
    assert not dialog.isVisible()
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert dialog.topology().state() == build_template("leaf-spine").state()


def test_cancel_builds_nothing(dialog):
    dialog.reject()
    assert dialog.result() == QDialog.DialogCode.Rejected
    assert dialog.topology() is None
