"""The Workloads dock: jobs added from a preset, edited field by field with the errors
shown as the user types, duplicated and deleted, every change one undo step and saved
with the design.

The dock runs here on a `Document` of one HGX server (8 GPUs), without a runner: these
gestures need no simulation (tests/gui/test_workload_live.py has the live part).
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from designer.gui.document import Document
from designer.gui.workload.dock import COL, WorkloadDock, parallel_text
from designer.io.fabric_json import load, save
from designer.model.templates import build_template
from designer.workload.files import design_jobs


@pytest.fixture
def dock(qtbot):
    doc = Document(build_template("hgx"))
    dock = WorkloadDock(doc)
    qtbot.addWidget(dock)
    dock.resize(420, 700)
    dock.show()
    return dock


def _add_from_menu(dock: WorkloadDock, preset: str) -> None:
    """Pick ``preset`` in the Add job button's menu, as the user does."""
    menu = dock.add_button.menu()
    (action,) = [a for a in menu.actions() if a.text().split(" ")[0] == preset]
    action.trigger()


def _retype(qtbot, field, text: str) -> None:
    field.setFocus()
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Backspace)
    qtbot.keyClicks(field, text)


def test_a_job_added_from_a_preset_is_listed_undoable_and_saved(dock, tmp_path):
    doc = dock.document
    _add_from_menu(dock, "tiny")
    assert dock.table.rowCount() == 1
    cells = {h: dock.table.item(0, c).text() for h, c in COL.items()}
    assert cells == {
        "Job": "tiny",
        "Preset": "tiny",
        "GPUs": "8",
        "Parallelism": "TP2 PP2 DP2",
        "Iteration": "",
        "Slowdown": "",
    }
    assert [j["name"] for j in doc.topology.settings["workloads"]] == ["tiny"]
    assert dock.editor.isEnabled() and dock.editor.widgets[("", "name")].text() == "tiny"

    _add_from_menu(dock, "tiny-moe")  # a second job: a name and colour of its own
    names = [j.name for j in dock.jobs]
    assert names == ["tiny", "tiny-moe"]
    assert dock.jobs[0].colour != dock.jobs[1].colour

    doc.undo_stack.undo()
    assert [j.name for j in dock.jobs] == ["tiny"] and dock.table.rowCount() == 1
    doc.undo_stack.undo()
    assert dock.jobs == [] and dock.table.rowCount() == 0
    assert not dock.editor.isEnabled()
    doc.undo_stack.redo()
    doc.undo_stack.redo()
    assert [j.name for j in dock.jobs] == ["tiny", "tiny-moe"]

    path = tmp_path / "two.fabric.json"
    save(doc.topology, path)
    assert design_jobs(load(path)) == dock.jobs


def test_a_preset_too_big_for_the_design_is_cut_to_its_gpus(dock):
    job = dock.add_job("llama3.1-70b")  # 256 GPUs by default; the design has 8
    assert job.n_gpus <= 8 and job.parallel.tp == 8
    assert dock.table.item(0, COL["Parallelism"]).text() == parallel_text(job)


def test_an_expert_parallel_preset_is_cut_with_its_expert_parallelism(dock):
    job = dock.add_job("deepseek-v3")  # 2,048 GPUs, EP 64; the design has 8
    assert job.n_gpus <= 8
    assert job.parallel.dp % job.parallel.ep == 0
    job.check()


def test_a_bad_value_shows_an_inline_error_naming_the_field_and_changes_nothing(dock, qtbot):
    doc = dock.document
    dock.add_job("tiny")
    steps = doc.undo_stack.count()
    before = doc.topology.settings["workloads"]
    tp = dock.editor.widgets[("parallel", "tp")]

    _retype(qtbot, tp, "3")  # 3 does not divide the tiny model's attention heads
    assert dock.editor.error_label.isVisible()
    assert "tp" in dock.editor.error and "heads" in dock.editor.error
    assert "border" in tp.styleSheet()

    dp = dock.editor.widgets[("parallel", "dp")]
    _retype(qtbot, tp, "2")
    _retype(qtbot, dp, "x")
    assert dock.editor.error.startswith("parallel.dp: expected a whole number")
    assert "border" in dp.styleSheet() and tp.styleSheet() == ""
    qtbot.keyClick(dp, Qt.Key.Key_Return)  # committing a bad value does nothing
    assert doc.undo_stack.count() == steps
    assert doc.topology.settings["workloads"] == before

    name = dock.editor.widgets[("", "name")]
    dock.add_job("tiny-moe")
    dock.table.selectRow(1)
    _retype(qtbot, name, "tiny")
    assert dock.editor.error == "name: another job is named 'tiny'"


def test_a_good_value_is_one_undo_step(dock, qtbot):
    doc = dock.document
    dock.add_job("tiny")
    steps = doc.undo_stack.count()
    dp = dock.editor.widgets[("parallel", "dp")]
    pp = dock.editor.widgets[("parallel", "pp")]
    # 8 GPUs as TP2 PP1 DP4, typed field by field: each committed field is one step
    # (the job has 4 GPUs in between).
    _retype(qtbot, pp, "1")
    qtbot.keyClick(pp, Qt.Key.Key_Return)
    _retype(qtbot, dp, "4")
    qtbot.keyClick(dp, Qt.Key.Key_Return)
    assert dock.editor.error == ""
    assert doc.undo_stack.count() == steps + 2
    assert dock.table.item(0, COL["Parallelism"]).text() == "TP2 DP4"
    assert doc.topology.settings["workloads"][0]["parallel"]["dp"] == 4
    doc.undo_stack.undo()
    assert dock.table.item(0, COL["Parallelism"]).text() == "TP2 DP2"
    assert dp.text() == "2"
    doc.undo_stack.undo()
    assert dock.table.item(0, COL["Parallelism"]).text() == "TP2 PP2 DP2"
    doc.undo_stack.redo()
    doc.undo_stack.redo()
    assert dock.table.item(0, COL["Parallelism"]).text() == "TP2 DP4"


def test_duplicate_and_delete(dock):
    doc = dock.document
    dock.add_job("tiny")
    copy = dock.duplicate_job()
    assert [j.name for j in dock.jobs] == ["tiny", "tiny-2"]
    assert copy.parallel == dock.jobs[0].parallel and copy.colour != dock.jobs[0].colour
    assert dock.selected_name() == "tiny-2"
    dock.delete_job()
    assert [j.name for j in dock.jobs] == ["tiny"]
    doc.undo_stack.undo()
    assert [j.name for j in dock.jobs] == ["tiny", "tiny-2"]


def test_a_job_that_cannot_be_read_makes_the_list_read_only(dock):
    """Editing the list would drop the job it cannot read: it refuses, saying why."""
    doc = dock.document
    dock.add_job("tiny")
    broken = dict(doc.topology.settings["workloads"][0], name="broken")
    broken["parallel"] = dict(broken["parallel"], tp=3)
    doc.topology.set_setting("workloads", [*doc.topology.settings["workloads"], broken])
    assert "broken" in dock.answer.text() and "tp" in dock.answer.text()
    assert not dock.add_button.isEnabled() and not dock.delete_button.isEnabled()
    assert not dock.editor.isEnabled()


def test_opening_another_design_lists_its_jobs(dock):
    dock.add_job("tiny")
    dock.document.replace(build_template("hgx"))
    assert dock.jobs == [] and dock.table.rowCount() == 0
    assert dock.add_button.isEnabled() and not dock.editor.isEnabled()


def test_a_job_that_does_not_fit_in_memory_is_marked(dock):
    """The runner's figures land in the job's row, marked as the CLI marks them."""
    from types import SimpleNamespace

    from designer.gui.workload.build import WorkloadResult
    from designer.workload.report import JobResult

    job = dock.add_job("tiny")
    res = JobResult(job.name, 8, 0.25, 0.2, 1.25, {}, memory_gb_per_gpu=99.0, fits=False)
    dock._on_runner_result_ready(WorkloadResult(1, SimpleNamespace(jobs=(res,)), (job,), 0.1))
    cell = dock.table.item(0, COL["Iteration"])
    assert cell.text() == "250 ms !" and "does not fit" in cell.toolTip()
    assert dock.table.item(0, COL["Slowdown"]).text() == "1.250×"


def test_the_colour_button_sets_the_jobs_colour_undoably(dock, monkeypatch):
    from PySide6.QtGui import QColor
    from PySide6.QtWidgets import QColorDialog

    doc = dock.document
    dock.add_job("tiny")
    before = dock.jobs[0].colour
    monkeypatch.setattr(QColorDialog, "getColor", lambda *_a, **_k: QColor("#123456"))
    dock.editor.colour_button.click()
    assert dock.jobs[0].colour == "#123456"
    assert dock.editor.widgets[("", "colour")].text() == "#123456"
    doc.undo_stack.undo()
    assert dock.jobs[0].colour == before
