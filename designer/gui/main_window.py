"""`MainWindow`: composes the canvas, docks and controllers; does no work itself.

Canvas in the centre, component palette on the left, inspector on the right, the bottom
dock area left free for the analysis panels; menus and a toolbar built from
`designer.gui.actions`; the title shows unsaved changes from the undo stack's clean
state.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QLabel, QMainWindow, QToolBar

from designer.gui.actions import make_actions
from designer.gui.analysis.install import install_analysis
from designer.gui.canvas.scene import FabricScene
from designer.gui.canvas.theming import ThemeMenu
from designer.gui.canvas.view import FabricView
from designer.gui.design_properties import DesignPropertiesDialog
from designer.gui.document import Document
from designer.gui.edit import EditController
from designer.gui.files import FileController
from designer.gui.help import install_help
from designer.gui.inspector import InspectorDock
from designer.gui.minimap import MinimapDock
from designer.gui.palette import PaletteDock
from designer.gui.review.install import install_review
from designer.gui.studies.install import install_studies
from designer.gui.window_geometry import place_window, remember_window
from designer.gui.workload.install import install_workload

STATUS_MS = 6000


class MainWindow(QMainWindow):
    """The Fabric Designer window for one `Document`."""

    def __init__(self, document: Document, parent=None):
        super().__init__(parent)
        self.setObjectName("main_window")
        self.document = document
        self.scene = FabricScene(document, parent=self)
        self.view = FabricView(self.scene, self)
        self.setCentralWidget(self.view)
        self.files = FileController(self, document, self)
        self.edit = EditController(document, self.scene, self.view, self)
        self.palette = PaletteDock(document.topology.catalog, self)
        self.inspector = InspectorDock(document, self.scene, self)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.palette)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.inspector)
        self.minimap = MinimapDock(self.view, self)  # under the inspector
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.minimap)
        self.actions_by_name = make_actions(self)
        self._build_menus()
        self._build_toolbar()
        self.selection_label = QLabel(self)
        self.statusBar().addPermanentWidget(self.selection_label)
        for source in (self.scene, self.view, self.files, self.edit, self.inspector):
            source.message.connect(self.show_message)
        self.scene.selectionChanged.connect(self._on_scene_selection_changed)
        document.undo_stack.cleanChanged.connect(self._update_title)
        # Edits change the counts the label shows when nothing is selected.
        document.undo_stack.indexChanged.connect(self._on_scene_selection_changed)
        document.path_changed.connect(self._update_title)
        document.name_changed.connect(self._update_title)
        document.about_to_replace.connect(self._on_document_about_to_replace)
        document.topology_replaced.connect(self._on_document_topology_replaced)
        self._update_title()
        self._on_scene_selection_changed()
        self.analysis = install_analysis(self)
        self.workload = install_workload(self)
        self.studies = install_studies(self)
        self.review = install_review(self)
        self.help_menu = install_help(self)  # last on the menu bar
        self.files.start_autosave()
        place_window(self, self.files.settings)

    # ------------------------------------------------------------ wiring
    def _build_menus(self) -> None:
        a = self.actions_by_name
        stack = self.document.undo_stack
        a["undo"].triggered.connect(stack.undo)
        a["redo"].triggered.connect(stack.redo)
        stack.canUndoChanged.connect(a["undo"].setEnabled)
        stack.canRedoChanged.connect(a["redo"].setEnabled)
        a["undo"].setEnabled(stack.canUndo())
        a["redo"].setEnabled(stack.canRedo())
        a["new"].triggered.connect(lambda: self.files.new_design())
        a["open"].triggered.connect(lambda: self.files.open_file())
        a["save"].triggered.connect(self.files.save)
        a["save_as"].triggered.connect(lambda: self.files.save_as())
        a["new_template"].triggered.connect(self.files.new_from_template)
        a["export"].triggered.connect(self.files.export)
        a["design_properties"].triggered.connect(self._on_design_properties_triggered)
        a["quit"].triggered.connect(self.close)
        a["cut"].triggered.connect(self.edit.cut)
        a["copy"].triggered.connect(self.edit.copy)
        a["paste"].triggered.connect(self.edit.paste)
        a["duplicate"].triggered.connect(self.edit.duplicate)
        a["delete"].triggered.connect(lambda: self.edit.delete())
        a["select_all"].triggered.connect(self.edit.select_all)
        a["find"].triggered.connect(lambda: self.edit.find(parent=self))
        a["link_tool"].toggled.connect(self._on_link_tool_toggled)
        for how in ("left", "hcenter", "top", "vcenter"):
            a[f"align_{how}"].triggered.connect(lambda _=False, h=how: self.edit.align(h))
        a["distribute_h"].triggered.connect(lambda: self.edit.distribute("h"))
        a["distribute_v"].triggered.connect(lambda: self.edit.distribute("v"))
        a["auto_layout"].triggered.connect(self.edit.auto_layout)
        a["group"].triggered.connect(lambda: self.edit.group_selection(parent=self))
        a["ungroup"].triggered.connect(self.edit.ungroup_selection)
        a["zoom_in"].triggered.connect(self.view.zoom_in)
        a["zoom_out"].triggered.connect(self.view.zoom_out)
        a["zoom_fit"].triggered.connect(self.view.fit)
        a["toggle_grid"].toggled.connect(self._on_grid_toggled)

        bar = self.menuBar()
        m = bar.addMenu("&File")
        for name in ("new", "new_template", "open"):
            m.addAction(a[name])
        recent = self.files.recent_menu()
        if recent is not None:
            m.addMenu(recent)
        for name in (None, "save", "save_as", "export", None, "design_properties", None,
                     "quit"):
            m.addSeparator() if name is None else m.addAction(a[name])
        self.file_menu = m
        m = bar.addMenu("&Edit")
        for name in ("undo", "redo", None, "cut", "copy", "paste", "duplicate", "delete", None,
                     "select_all", "find", None, "link_tool"):
            m.addSeparator() if name is None else m.addAction(a[name])
        m = bar.addMenu("&Arrange")
        for name in ("align_left", "align_hcenter", "align_top", "align_vcenter", None,
                     "distribute_h", "distribute_v", None, "group", "ungroup", None,
                     "auto_layout"):
            m.addSeparator() if name is None else m.addAction(a[name])
        m = bar.addMenu("&View")
        for name in ("zoom_in", "zoom_out", "zoom_fit", None, "toggle_grid"):
            m.addSeparator() if name is None else m.addAction(a[name])
        m.addSeparator()
        m.addMenu(ThemeMenu(self.scene, m))
        m.addSeparator()
        m.addAction(self.palette.toggleViewAction())
        m.addAction(self.inspector.toggleViewAction())
        m.addAction(self.minimap.toggleViewAction())
        self.view_menu = m

    def _build_toolbar(self) -> None:
        tb = QToolBar("Main", self)
        tb.setObjectName("main_toolbar")
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        a = self.actions_by_name
        for name in ("new", "open", "save", None, "undo", "redo", None, "link_tool", "delete",
                     None, "zoom_in", "zoom_out", "zoom_fit"):
            tb.addSeparator() if name is None else tb.addAction(a[name])
        self.addToolBar(tb)

    # ------------------------------------------------------------ slots
    def show_message(self, text: str) -> None:
        self.statusBar().showMessage(text, STATUS_MS)

    def _update_title(self, *_args) -> None:
        if not (shiboken6.isValid(self) and shiboken6.isValid(self.document.undo_stack)):
            return  # the undo stack announces its own destruction at exit
        self.setWindowTitle(f"{self._design_title()}[*] — Fabric Designer")
        self.setWindowModified(self.document.is_modified)

    def _design_title(self) -> str:
        """The file's name, and the design's when the file is named otherwise; the
        design's name alone while it has no file."""
        doc = self.document
        name = doc.topology.name
        if doc.path is None:
            return name
        stem = doc.path.name.removesuffix(".json").removesuffix(".fabric")
        title = doc.path.name if name in ("", stem) else f"{doc.path.name} ({name})"
        return f"{title} [read-only]" if doc.read_only else title

    def _on_design_properties_triggered(self) -> None:
        """File > Design Properties…: the design's name (saved in its file)."""
        dialog = DesignPropertiesDialog(self.document.topology, self)
        try:
            if dialog.exec() != DesignPropertiesDialog.DialogCode.Accepted:
                return
            name = dialog.name()
        finally:
            dialog.deleteLater()
        if self.document.rename(name):
            self.show_message(f"Design renamed to {self.document.topology.name}")

    def _on_scene_selection_changed(self) -> None:
        if not self.document.replacing:  # (the scene is half torn down then)
            self._show_counts()

    def _show_counts(self) -> None:
        """The status bar's counts: of the selection, or of the design."""
        nodes = self.scene.selected_node_ids()
        links = self.scene.selected_link_ids()
        topo = self.document.topology
        gpus = sum(1 for n in nodes if topo.node(n).kind == "gpu")
        if nodes or links:
            text = f"{len(nodes)} node(s) ({gpus} GPU), {len(links)} link(s) selected"
        else:
            text = f"{len(topo)} nodes, {topo.link_count()} links"
        self.selection_label.setText(text)

    def _on_document_about_to_replace(self, _old) -> None:
        # The selection names items and ids of the design going away: drop it now, with
        # one selectionChanged while those ids still resolve, so the inspector and the
        # status bar empty themselves.  Left in place, the scene would drop it item by
        # item as it deletes them (a selectionChanged each, quadratic for a big
        # selection), with every listener looking old ids up in the new design.
        self.scene.clearSelection()

    def _on_document_topology_replaced(self, _topology) -> None:
        if self.scene.design_rect().isEmpty():
            # Nothing to fit (File > New): 100 % around the origin, not the zoom the last
            # design left, so the first device dropped is drawn at its size, where dropped.
            self.view.zoom(1.0 / self.view.scale_factor)
            self.view.centerOn(0.0, 0.0)
        else:
            self.view.fit()
        self._show_counts()

    def _on_link_tool_toggled(self, on: bool) -> None:
        self.view.link_tool = on
        self.show_message("Link tool: drag from one node to another" if on else "")

    def _on_grid_toggled(self, on: bool) -> None:
        self.scene.show_grid = on
        self.scene.update()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.files.maybe_save():
            remember_window(self, self.files.settings)
            self.analysis.runner.shutdown()
            self.workload.runner.shutdown()
            self.review.runner.shutdown()
            self.files.discard_recovery()
            event.accept()
        else:
            event.ignore()
