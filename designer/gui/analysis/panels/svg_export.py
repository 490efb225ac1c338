"""Fixes for pyqtgraph's SVG exporter, used while a panel exports a vector image."""

from __future__ import annotations

import contextlib
import importlib

from designer.model.safe_text import xml_bytes

_SVG_MODULE = importlib.import_module("pyqtgraph.exporters.SVGExporter")


@contextlib.contextmanager
def svg_close_path_support():
    """Let pyqtgraph's SVG exporter rewrite paths that contain close-path commands.

    Qt 6.10+ writes the clip rectangle of every ViewBox (and any closed fill) as a path
    ending in ``Z``; pyqtgraph 0.14 parses path data as ``x,y`` pairs only and fails on
    it (pyqtgraph issue #3495).  While this is active, the exporter's coordinate rewrite
    sees the path without its ``Z`` commands, which are put back in place afterwards.
    Its parse of each item's SVG also goes through `_XmlSafeMinidom` meanwhile.
    """
    original = _SVG_MODULE.correctCoordinates

    def correct(node, defs, item, options):
        closed = []
        for path in node.getElementsByTagName("path"):
            tokens = path.getAttribute("d").split()
            where = [
                i - n for n, i in enumerate(j for j, t in enumerate(tokens) if t in ("Z", "z"))
            ]
            if where:
                closed.append((path, where))
                path.setAttribute("d", " ".join(t for t in tokens if t not in ("Z", "z")))
        original(node, defs, item, options)
        for path, where in closed:
            tokens = path.getAttribute("d").split()
            for i in reversed(where):
                tokens.insert(i, "Z")
            path.setAttribute("d", " ".join(tokens))

    _SVG_MODULE.correctCoordinates = correct
    minidom = _SVG_MODULE.xml
    _SVG_MODULE.xml = _XmlSafeMinidom(minidom)
    try:
        yield
    finally:
        _SVG_MODULE.correctCoordinates = original
        _SVG_MODULE.xml = minidom


class _XmlSafeMinidom:
    """``xml.dom.minidom`` whose ``parseString`` first replaces what XML 1.0 cannot hold
    (`xml_bytes`): pyqtgraph parses Qt's SVG of every item, and Qt writes a label's
    control characters or U+FFFF as they are, which failed the export of a baseline
    renamed to hold one."""

    def __init__(self, minidom):
        self._minidom = minidom

    def parseString(self, data, *args, **kwargs):  # minidom's name
        return self._minidom.parseString(xml_bytes(bytes(data)), *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._minidom, name)
