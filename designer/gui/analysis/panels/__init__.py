"""The analysis panels: pyqtgraph docks that plot the last background solve.

Each panel is a `PanelDock` with ``set_result(result)``, ``set_message(text)``,
``data_rows()`` and PNG/SVG/CSV export.
"""

from designer.gui.analysis.panels.base import PanelDock
from designer.gui.analysis.panels.busbw import BusBwPanel
from designer.gui.analysis.panels.jitter import JitterPanel
from designer.gui.analysis.panels.linkload import LinkLoadPanel
from designer.gui.analysis.panels.timeline import TimelinePanel

__all__ = ["BusBwPanel", "JitterPanel", "LinkLoadPanel", "PanelDock", "TimelinePanel"]
