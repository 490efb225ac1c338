"""Make the README's screenshots: ``python tools/screenshots.py [OUT_DIR]`` (default docs/).

Writes, headless (Qt's offscreen platform, no display needed):

- ``screenshot-example.png``: the main window on the built-in example design (4 HGX H100
  servers, rail leaves, spines, storage), fitted, as ``fabric-designer`` opens it;
- ``screenshot-superpod.png``: the main window on a 1,024-GPU DGX B200 SuperPOD (4 SU,
  ``fabric-designer new superpod --set gpu=B200 sus=4``), zoomed in to where SU 1's rail
  leaves meet its servers (labels show), with the Overview dock marking that spot on
  the whole pod;
- ``screenshot-analysis.png``: the main window on the example once the live analysis has
  finished: links coloured by utilisation with the legend, the Scenario dock raised and
  the analysis panels docked below the canvas;
- ``panel-timeline.png``, ``panel-busbw.png``, ``panel-linkload.png``,
  ``panel-jitter.png``: each analysis panel on its own (undocked); the busbw panel with
  the example pinned as a baseline and its rails downgraded to InfiniBand HDR 200G, so
  the A/B overlay shows.

Settings, recent files and autosaves go to a throw-away directory, so the pictures never
depend on (or change) the user's own settings; the light theme is used.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

SIZE = (1400, 900)


def _isolate() -> tempfile.TemporaryDirectory:
    home = tempfile.TemporaryDirectory(prefix="fabric-shots-")
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        os.environ[var] = str(Path(home.name) / var.lower())
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    return home


def _window(topology):
    from designer.gui.canvas.style import LIGHT
    from designer.gui.document import Document
    from designer.gui.main_window import MainWindow

    win = MainWindow(Document(topology))
    win.resize(*SIZE)
    win.scene.set_theme(LIGHT)
    win.show()
    return win


def _settle(app) -> None:
    for _ in range(3):
        app.processEvents()


def example(app, out: Path) -> Path:
    from designer.model.templates import build_template

    win = _window(build_template("example"))
    _settle(app)
    win.view.fit()
    win.view.settle()
    _settle(app)
    path = out / "screenshot-example.png"
    win.grab().save(str(path))
    _close(win)
    return path


def superpod(app, out: Path) -> Path:
    from designer.model.templates import build_template

    win = _window(build_template("superpod", gpu="B200", sus=4))
    _settle(app)
    view, scene = win.view, win.scene
    view.resetTransform()
    view.scale(0.55, 0.55)  # labels show from 0.5
    # Where SU 1's rail leaves meet its servers: a server block, its NICs' rails.
    leaves = [scene.nodes[f"su1-leaf-r{r}"].pos().x() for r in range(8)]
    rect = scene.design_rect()
    view.centerOn(sum(leaves) / len(leaves) + 250, (rect.top() + rect.bottom()) / 2)
    view.view_changed.emit()
    view.settle()
    _settle(app)
    path = out / "screenshot-superpod.png"
    win.grab().save(str(path))
    _close(win)
    return path


#: Size of a single panel's picture (wide enough for the link-load table).
PANEL_SIZE = (980, 440)


def _wait_for_analysis(app, win, timeout_s: float = 60.0):
    """Process events until the runner has applied a result for the current design."""
    runner = win.analysis.runner
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        latest = runner.latest
        if (latest is not None and latest.generation == win.document.topology.generation
                and not runner.busy and not runner._timer.isActive()):
            return latest
        time.sleep(0.01)
    raise RuntimeError("the analysis did not finish in time")


def _grab_panel(app, panel, path: Path) -> Path:
    """``panel`` undocked at `PANEL_SIZE`, drawn and saved, then docked again."""
    panel.setFloating(True)
    panel.resize(*PANEL_SIZE)
    panel.show()
    panel.raise_()
    _settle(app)
    panel.grab().save(str(path))
    panel.setFloating(False)
    _settle(app)
    return path


def analysis(app, out: Path) -> list[Path]:
    from designer.model.commands import SetLinkProps
    from designer.model.templates import build_template

    win = _window(build_template("example"))
    _settle(app)
    _wait_for_analysis(app, win)
    win.analysis.scenario.raise_()  # its headline numbers rather than an empty inspector
    _settle(app)  # the docks' sizes are set once the window is laid out
    win.view.fit()
    win.view.settle()
    _settle(app)
    paths = [out / "screenshot-analysis.png"]
    win.grab().save(str(paths[0]))

    a = win.analysis
    for panel, name in ((a.timeline, "timeline"), (a.linkload, "linkload"),
                        (a.jitter, "jitter")):
        paths.append(_grab_panel(app, panel, out / f"panel-{name}.png"))

    # A/B: the example as built (InfiniBand NDR 400G rails), then with 200G rails.
    a.busbw.pin_baseline()
    topo = win.document.topology
    rails = [lk.id for lk in topo.links()
             if lk.tech == "ib-ndr" and topo.node(lk.a).kind == "nic"
             and topo.node(lk.b).kind == "leaf" and lk.plane == "compute"]
    win.document.push(SetLinkProps(rails, tech="ib-hdr"))
    _wait_for_analysis(app, win)
    paths.append(_grab_panel(app, a.busbw, out / "panel-busbw.png"))
    _close(win)
    return paths


def _close(win) -> None:
    win.files.stop_autosave() if hasattr(win.files, "stop_autosave") else None
    win.document.undo_stack.setClean()
    win.close()
    win.deleteLater()


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "docs"
    out.mkdir(parents=True, exist_ok=True)
    home = _isolate()
    try:
        from designer.gui.app import application

        app = application()
        for make in (example, superpod):
            print(f"wrote {make(app, out)}")
        for path in analysis(app, out):
            print(f"wrote {path}")
    finally:
        home.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
