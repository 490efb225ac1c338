"""Make the README's and the user guide's pictures: ``python tools/screenshots.py [OUT_DIR]
[--only NAME ...]`` (default docs/).

Every picture is the real application, driven headless (Qt's offscreen platform, no
display needed) the way a user drives it: actions are triggered, the template dialog is
filled in and its Create button clicked, palette components are dropped and links
Shift-dragged with synthetic events on the canvas, menus are opened where the user
right-clicks, and the analysis is awaited before anything is grabbed.  So each picture
also checks that the step the user guide describes works.

Shots (``--only`` takes these names):

``example``
    ``screenshot-example.png``: the main window on the built-in example design (4 HGX
    H100 servers, rail leaves, spines, storage) as ``fabric-designer`` opens it, once
    the first analysis has finished, fitted.
``superpod``
    ``guide-template-dialog.png``: File > New from Template with the DGX SuperPOD
    template, B200 and 4 SUs; ``screenshot-superpod.png``: the 1,024-GPU design that
    Create builds, solved, zoomed in to where SU 1's rail leaves meet its servers, with
    the Overview dock marking that spot on the whole pod.
``analysis``
    ``screenshot-analysis.png``: the example once the live analysis has finished (links
    coloured by utilisation, the legend, the Scenario dock, the panels below);
    ``panel-timeline.png``, ``panel-busbw.png``, ``panel-linkload.png``,
    ``panel-jitter.png``: each panel on its own; the busbw panel with the example pinned
    as a baseline and its rails downgraded to InfiniBand HDR 200G (an A/B overlay).
``draw``
    ``guide-draw.png``: an empty design drawn by hand: an NVSwitch and four H100s dropped
    from the palette, Shift-dragged links, all four links selected and set to 4 lanes
    each in the Inspector; ``guide-draw-link.png``: a link being drawn (the canvas).
``groups``
    ``guide-groups.png``: the canvas of the example with three servers collapsed.
``tooltip``
    ``guide-tooltip.png``: the canvas, zoomed in, with a rail link's tooltip.
``whatif``
    ``guide-whatif-menu.png``: the context menu on a spine; ``guide-whatif.png``: the
    example's all-to-all with that spine failed, the healthy curve pinned as a baseline
    and renamed (Rename's dialog answered).
``routing``
    ``guide-ab-routing.png``: the busbw panel with the example's all-to-all under
    adaptive, ECMP and static routing.
``workloads``
    ``guide-workloads.png``: the example with two training jobs added from presets in
    the Workloads dock (Llama 3.1 8B and Mixtral 8x7B), simulated, their GPUs tinted and
    outlined, the Iteration timeline panel below; ``panel-iteration.png`` and
    ``panel-linkstats.png``: the Iteration timeline and Link statistics panels on their own.
``review``
    ``guide-review-problems.png``: the example with a job that does not fit in its GPUs'
    memory (Llama 3.1 70B on TP 8 alone): the Problems dock lists it and a click on it
    selected its GPUs; ``guide-review-bom.png`` and ``guide-review-info.png``: the Bill
    of materials and Info docks of the example.
``export``
    ``export-example.png``: the example exported exactly as ``fabric-designer export
    example.fabric.json -o export-example.png --scale 1`` writes it.

Pictures that show a pop-up (menu, tooltip) paint the pop-up's own rendering at the
place Qt would show it, since an offscreen window grab holds only the window itself.
The timeline dock is given 620-700 px of the bottom row so its title fits.  Each shot
raises an error when the step it shows does not work (a link not made, a dialog not
answered), so the script also checks the user guide's steps.
Settings, recent files and autosaves go to a throw-away directory, so the pictures never
depend on (or change) the user's own settings; the light theme is used.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from screenshot_user import User, settle  # beside this script

SIZE = (1400, 900)
#: Size of a single panel's picture (wide enough for the link-load table).
PANEL_SIZE = (980, 440)


def _isolate() -> tempfile.TemporaryDirectory:
    home = tempfile.TemporaryDirectory(prefix="fabric-shots-")
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        os.environ[var] = str(Path(home.name) / var.lower())
    os.environ["FABRIC_DESIGNER_DATA_DIR"] = str(Path(home.name) / "data")
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    return home


# ------------------------------------------------------------------ window and waiting
def _window(topology):
    from designer.gui.canvas.style import LIGHT
    from designer.gui.document import Document
    from designer.gui.main_window import MainWindow

    win = MainWindow(Document(topology))
    win.resize(*SIZE)
    win.scene.set_theme(LIGHT)
    win.show()
    return win


def _example_window(app):
    from designer.model.templates import build_template

    win = _window(build_template("example"))
    settle(app)
    _wait_for_analysis(app, win)
    _panels_side_by_side(app, win)
    win.view.fit()
    win.view.settle()
    settle(app)
    return win


def _wait_for_analysis(app, win, timeout_s: float = 120.0):
    """Process events until the runner has applied a result for the current design."""
    runner = win.analysis.runner
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        latest = runner.latest
        if (latest is not None and latest.generation == win.document.topology.generation
                and not runner.busy and not runner.pending):
            settle(app)  # the recolouring runs in event-loop slices
            return latest
        time.sleep(0.01)
    raise RuntimeError("the analysis did not finish in time")


def _panels_side_by_side(app, win, timeline_px: int = 620) -> None:
    """Give the timeline dock room for its title (the bus-bandwidth dock gets the rest)."""
    from PySide6.QtCore import Qt

    a = win.analysis
    win.resizeDocks([a.timeline, a.busbw], [timeline_px, win.width() - timeline_px],
                    Qt.Orientation.Horizontal)
    settle(app)


def _close(win) -> None:
    win.analysis.runner.shutdown()
    win.files.discard_recovery()
    win.document.undo_stack.setClean()
    win.close()
    win.deleteLater()


# ------------------------------------------------------------------ grabs and dialogs
def _grab_with_popup(win, popup, where, path: Path, crop=None) -> Path:
    """The window's picture with ``popup`` painted at ``where`` (window coordinates),
    optionally cropped to ``crop`` (a QRect in window coordinates)."""
    from PySide6.QtGui import QPainter

    picture = win.grab()
    painter = QPainter(picture)
    painter.drawPixmap(where, popup.grab())
    painter.end()
    if crop is not None:
        picture = picture.copy(crop)
    picture.save(str(path))
    return path


def _canvas_rect(win):
    """The canvas's area in window coordinates (to crop a picture to it)."""
    from PySide6.QtCore import QPoint, QRect

    return QRect(win.view.mapTo(win, QPoint(0, 0)), win.view.size())


def _grab_panel(app, panel, path: Path) -> Path:
    """``panel`` undocked at `PANEL_SIZE`, drawn and saved, then docked again."""
    panel.setFloating(True)
    panel.resize(*PANEL_SIZE)
    panel.show()
    panel.raise_()
    settle(app)
    panel.grab().save(str(path))
    panel.setFloating(False)
    settle(app)
    return path


def _answer_next_dialog(app, text: str) -> None:
    """Type ``text`` into the next modal input dialog and press OK (a real modal dialog
    would wait for a user)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QInputDialog

    def answer() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QInputDialog):
            raise RuntimeError(f"expected an input dialog, got {dialog!r}")
        dialog.setTextValue(text)
        dialog.accept()

    QTimer.singleShot(50, answer)


def _set_combo(app, combo, text: str) -> None:
    """Choose ``text`` in a combo box as a user does (``activated`` fires)."""
    index = combo.findText(text)
    if index < 0:
        raise RuntimeError(f"{combo.objectName() or 'combo'} has no entry {text!r}")
    combo.setCurrentIndex(index)
    combo.activated.emit(index)
    settle(app)


# ------------------------------------------------------------------ the shots
def example(app, out: Path) -> list[Path]:
    win = _example_window(app)
    path = out / "screenshot-example.png"
    win.grab().save(str(path))
    _close(win)
    return [path]


def superpod(app, out: Path) -> list[Path]:
    """File > New from Template > superpod (B200, 4 SU) > Create, then the solved pod."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QDialogButtonBox

    win = _example_window(app)
    dialog_png = out / "guide-template-dialog.png"

    def fill_in() -> None:
        dialog = QApplication.activeModalWidget()
        dialog.set_template("superpod")
        dialog.set_param("gpu", "B200")
        dialog.set_param("sus", 4)
        settle(app)
        dialog.grab().save(str(dialog_png))
        dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()

    QTimer.singleShot(50, fill_in)
    win.actions_by_name["new_template"].trigger()  # modal: returns after Create
    if len(win.document.topology) < 2000:
        raise RuntimeError("the template dialog did not build the SuperPOD")
    _wait_for_analysis(app, win)
    _panels_side_by_side(app, win, 700)
    view, scene = win.view, win.scene
    view.resetTransform()
    view.scale(0.55, 0.55)  # labels show from 0.5
    # Where SU 1's rail leaves meet its servers: a server block, its NICs' rails.
    leaves = [scene.nodes[f"su1-leaf-r{r}"].pos() for r in range(8)]
    view.centerOn(sum(p.x() for p in leaves) / len(leaves) + 250, leaves[0].y() + 300)
    view.view_changed.emit()
    view.settle()
    settle(app)
    path = out / "screenshot-superpod.png"
    win.grab().save(str(path))
    _close(win)
    return [dialog_png, path]


def analysis(app, out: Path) -> list[Path]:
    from designer.model.commands import SetLinkProps

    win = _example_window(app)
    win.analysis.scenario.raise_()  # its headline numbers rather than an empty inspector
    settle(app)
    win.view.fit()
    win.view.settle()
    settle(app)
    paths = [out / "screenshot-analysis.png"]
    win.grab().save(str(paths[0]))

    a = win.analysis
    for panel, name in ((a.timeline, "timeline"), (a.linkload, "linkload"),
                        (a.jitter, "jitter")):
        paths.append(_grab_panel(app, panel, out / f"panel-{name}.png"))

    # A/B: the example as built (InfiniBand NDR 400G rails), then with 200G rails.
    a.busbw.pin_button.click()
    topo = win.document.topology
    rails = [lk.id for lk in topo.links()
             if lk.tech == "ib-ndr" and topo.node(lk.a).kind == "nic"
             and topo.node(lk.b).kind == "leaf" and lk.plane == "compute"]
    win.document.push(SetLinkProps(rails, tech="ib-hdr"))
    _wait_for_analysis(app, win)
    paths.append(_grab_panel(app, a.busbw, out / "panel-busbw.png"))
    _close(win)
    return paths


def draw(app, out: Path) -> list[Path]:
    """File > New, then a one-NVSwitch, four-GPU board drawn by hand."""
    win = _example_window(app)
    user = User(app, win)
    win.actions_by_name["new"].trigger()
    if len(win.document.topology):
        raise RuntimeError("File > New did not empty the design")
    user.drop("nvswitch", "NVSwitch-gen3", (0, 0))
    for i in range(4):
        user.drop("gpu", "H100", (-240 + 160 * i, 160))
    topo = win.document.topology
    switch = next(n.id for n in topo.nodes("nvswitch"))
    gpus = sorted(n.id for n in topo.nodes("gpu"))
    for g in gpus[:3]:
        user.shift_drag(g, switch)
    win.view.fit()
    win.view.settle()
    settle(app)
    # The fourth link, caught while it is being drawn (the button still held).
    user.shift_drag(gpus[3], switch, release=False)
    in_progress = out / "guide-draw-link.png"
    win.grab().copy(_canvas_rect(win)).save(str(in_progress))
    user.release(user.node_xy(switch))  # on the switch: the link is made
    links = sorted(lk.id for lk in topo.links())
    if len(links) != 4:
        raise RuntimeError(f"expected 4 drawn links, got {links}")
    win.scene.select_ids(link_ids=links)  # as Ctrl-clicking the four links does
    settle(app)
    inspector = win.inspector
    inspector.raise_()
    inspector.count.setValue(4)
    inspector.count.editingFinished.emit()
    _wait_for_analysis(app, win)
    if {topo.link(lk).count for lk in links} != {4}:
        raise RuntimeError("the Inspector did not set the link count")
    win.view.fit()
    win.view.settle()
    settle(app)
    path = out / "guide-draw.png"
    win.grab().save(str(path))
    _close(win)
    return [in_progress, path]


def groups(app, out: Path) -> list[Path]:
    """Three of the example's servers collapsed (a double-click on each frame)."""
    win = _example_window(app)
    for gid in ("n02", "n03", "n04"):
        win.scene.toggle_collapsed(gid)  # what a double-click on the frame does
    settle(app)
    win.view.fit()
    win.view.settle()
    settle(app)
    path = out / "guide-groups.png"
    win.grab().copy(_canvas_rect(win)).save(str(path))
    _close(win)
    return [path]


def tooltip(app, out: Path) -> list[Path]:
    """Hover a saturated rail link of the solved example."""
    from PySide6.QtCore import QPoint

    win = _example_window(app)
    user = User(app, win)
    scene = win.scene
    mid = scene.links["n02-nic3:leaf-r3-0"].line.pointAt(0.5)
    win.view.resetTransform()
    win.view.scale(1.0, 1.0)  # labels and link badges readable
    win.view.centerOn(mid)
    win.view.view_changed.emit()
    win.view.settle()
    settle(app)
    tip, at = user.tooltip((mid.x(), mid.y()))
    path = _grab_with_popup(win, tip, at + QPoint(12, 16), out / "guide-tooltip.png",
                            crop=_canvas_rect(win))
    _close(win)
    return [path]


def whatif(app, out: Path) -> list[Path]:
    """All-to-all on the example; pin it; fail Spine 0 from its context menu."""
    from PySide6.QtCore import QPoint

    win = _example_window(app)
    user = User(app, win)
    a = win.analysis
    a.scenario.raise_()
    _set_combo(app, a.scenario.collective, "alltoall")
    healthy = _wait_for_analysis(app, win)
    a.busbw.pin_button.click()
    _answer_next_dialog(app, "healthy: both spines")
    a.busbw.ask_rename(0)  # what Rename > baseline 1 (or a double-click on it) does
    menu = user.context_menu(user.node_xy("spine-0"))
    at = win.view.viewport().mapTo(win, user.at(user.node_xy("spine-0")))
    menu_png = _grab_with_popup(win, menu, at + QPoint(4, 4), out / "guide-whatif-menu.png",
                                crop=_canvas_rect(win))
    fail = next(act for act in menu.actions() if act.text().startswith("Fail "))
    fail.trigger()
    menu.close()
    failed = _wait_for_analysis(app, win)
    if not win.document.topology.node("spine-0").failed:
        raise RuntimeError("the context menu did not fail Spine 0")
    _panels_side_by_side(app, win)
    path = out / "guide-whatif.png"
    win.grab().save(str(path))
    for label, r in (("healthy", healthy), ("Spine 0 failed", failed)):
        f = r.focus
        print(f"  all-to-all 1 GiB, {label}: {f.time_s[0] * 1e3:.2f} ms, "
              f"busbw {f.busbw_GBps[0]:.1f} GB/s")
    _close(win)
    return [menu_png, path]


def routing(app, out: Path) -> list[Path]:
    """All-to-all under adaptive, ECMP and static routing, pinned one after another."""
    win = _example_window(app)
    a = win.analysis
    _set_combo(app, a.scenario.collective, "alltoall")
    for mode in ("adaptive", "ecmp", "static"):
        _set_combo(app, a.scenario.routing, mode)
        r = _wait_for_analysis(app, win)
        print(f"  all-to-all 1 GiB, {mode}: busbw {r.focus.busbw_GBps[0]:.1f} GB/s")
        if mode != "static":
            a.busbw.pin_button.click()
    path = _grab_panel(app, a.busbw, out / "guide-ab-routing.png")
    _close(win)
    return [path]


def export(app, out: Path) -> list[Path]:
    """The example as ``fabric-designer export ... --scale 1`` writes it."""
    from designer.gui.export import export_topology
    from designer.model.templates import build_template

    path = out / "export-example.png"
    export_topology(build_template("example"), path, scale=1.0)
    return [path]


def _wait_for_jobs(app, win, timeout_s: float = 180.0):
    """Process events until the jobs of the design as it is now are simulated."""
    runner = win.workload.runner
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        latest = runner.latest
        if (latest is not None and latest.generation == win.document.topology.generation
                and not runner.busy and not runner.pending):
            settle(app)
            return latest
        time.sleep(0.01)
    raise RuntimeError("the workload simulation did not finish in time")


def _wait_for_review(app, win, timeout_s: float = 120.0) -> None:
    """Process events until the review docks show the design as it is now."""
    runner = win.review.runner
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        if runner.current and not runner.busy:
            settle(app)
            return
        time.sleep(0.01)
    raise RuntimeError("the design review did not finish in time")


def workloads(app, out: Path) -> list[Path]:
    """Two jobs from presets (Add job), simulated, tinted and outlined on the canvas."""
    win = _example_window(app)
    wl = win.workload
    wl.dock.show()
    wl.dock.raise_()
    for name in ("llama3.1-8b", "mixtral-8x7b"):
        wl.dock.add_job(name)
    if len(wl.dock.jobs) != 2:
        raise RuntimeError("Add job did not add the two jobs")
    result = _wait_for_jobs(app, win)
    if result is None or len(result.simulation.jobs) != 2:
        raise RuntimeError("the two jobs were not simulated")
    if wl.controls is not None:
        wl.controls.outlines.setChecked(True)
    wl.timeline.show()
    wl.timeline.raise_()
    win.view.fit()
    win.view.settle()
    settle(app)
    path = out / "guide-workloads.png"
    win.grab().save(str(path))
    paths = [path, _grab_panel(app, wl.timeline, out / "panel-iteration.png"),
             _grab_panel(app, wl.linkstats, out / "panel-linkstats.png")]
    wl.runner.shutdown()
    win.review.runner.shutdown()
    _close(win)
    return paths


def review(app, out: Path) -> list[Path]:
    """A job too big for its GPUs: the Problems dock lists it, a click selects its GPUs;
    the Bill of materials and Info docks of the example."""
    from designer.workload.files import set_design_jobs
    from designer.workload.job import Job, Parallelism
    from designer.workload.presets import preset

    win = _example_window(app)
    rv = win.review
    _wait_for_review(app, win)
    paths = []
    for dock, name in ((rv.bom, "guide-review-bom.png"), (rv.info, "guide-review-info.png")):
        dock.show()
        dock.raise_()
        settle(app)
        paths.append(out / name)
        dock.grab().save(str(paths[-1]))
    topo = win.document.topology
    gpus = tuple(sorted(n.id for n in topo.nodes("gpu"))[8:16])
    job = Job.from_preset("llama-70b", preset("llama3.1-70b"), parallel=Parallelism(tp=8),
                          placement="explicit", gpus=gpus)
    set_design_jobs(topo, [job])
    _wait_for_review(app, win)
    rv.problems.show()
    rv.problems.raise_()
    settle(app)
    tree = rv.problems.tree
    item = next((tree.topLevelItem(i) for i in range(tree.topLevelItemCount())
                 if tree.topLevelItem(i).text(2) == "job-memory"), None)
    if item is None:
        raise RuntimeError("the Problems dock does not list the job that does not fit")
    tree.setCurrentItem(item)
    tree.itemClicked.emit(item, 1)  # as a click on the row does
    settle(app)
    if sorted(win.scene.selected_node_ids()) != sorted(gpus):
        raise RuntimeError("clicking the problem did not select the job's GPUs")
    _wait_for_jobs(app, win)
    win.analysis.busbw.raise_()
    win.view.fit()
    win.view.settle()
    settle(app)
    paths.append(out / "guide-review-problems.png")
    win.grab().save(str(paths[-1]))
    win.workload.runner.shutdown()
    rv.runner.shutdown()
    _close(win)
    return paths


SHOTS = {"example": example, "superpod": superpod, "analysis": analysis, "draw": draw,
         "groups": groups, "tooltip": tooltip, "whatif": whatif, "routing": routing,
         "workloads": workloads, "review": review, "export": export}


def main(argv: list[str]) -> int:
    args = argv[1:]
    only = None
    if "--only" in args:
        i = args.index("--only")
        only, args = args[i + 1:], args[:i]
        unknown = [n for n in only if n not in SHOTS]
        if unknown or not only:
            print(f"--only takes shot names: {', '.join(SHOTS)}", file=sys.stderr)
            return 2
    out = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "docs"
    out.mkdir(parents=True, exist_ok=True)
    home = _isolate()
    try:
        from designer.gui.app import application

        app = application()
        for name, make in SHOTS.items():
            if only is None or name in only:
                for path in make(app, out):
                    print(f"wrote {path}")
    finally:
        home.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
