"""What the importers share: safe XML parsing and building a design with clear errors.

An imported file may come from anyone.  It is parsed with the standard library's expat
parser, which never fetches external entities and refuses entity-expansion bombs, after
a size check; a document type declaration is refused outright (no format read here
needs one).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

from designer.io.fabric_json import FileFormatError
from designer.model.catalog import CatalogError
from designer.model.elements import Group, Link, Node
from designer.model.errors import DesignError
from designer.model.topology import Topology

__all__ = ["MAX_IMPORT_BYTES", "build_design", "parse_xml"]

#: Larger files are refused before parsing (a 16k-GPU design exports to ~60 MB).
MAX_IMPORT_BYTES = 512 * 1024 * 1024


def parse_xml(path: str | os.PathLike[str]) -> ET.Element:
    """The root element of the XML file ``path``.

    Raises
    ------
    FileFormatError
        Unreadable, too large, not well-formed, or with a DOCTYPE.
    """
    p = Path(path)
    try:
        if p.stat().st_size > MAX_IMPORT_BYTES:
            raise FileFormatError(f"{p}: too large to import (over {MAX_IMPORT_BYTES >> 20} MiB)")
        data = p.read_bytes()
    except OSError as err:
        raise FileFormatError(f"{p}: cannot read: {err.strerror or err}") from err
    if b"<!DOCTYPE" in data[:4096].upper():
        raise FileFormatError(f"{p}: refusing an XML document type declaration")
    try:
        return ET.fromstring(data)
    except ET.ParseError as err:
        raise FileFormatError(f"{p}: not well-formed XML ({err})") from err


def build_design(
    path: str | os.PathLike[str],
    name: str,
    groups: Iterable[Group],
    nodes: Iterable[Node],
    links: Iterable[Link],
) -> Topology:
    """A `Topology` of the items read from ``path``; an unknown model or technology, a
    link to a missing node or a bad value is one `FileFormatError` naming the item."""
    topology = Topology(name=name or Path(path).name)
    known = topology.catalog.devices
    groups, nodes, links = list(groups), list(nodes), list(links)
    for node in nodes:
        if node.model not in known:
            close = sorted(k for k in known if k.lower()[:3] == node.model.lower()[:3])[:5]
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise FileFormatError(
                f"{path}: node {node.id!r} ({node.name!r}): unknown model {node.model!r}{hint}; "
                "models are the catalog's keys (`fabric-designer templates` lists templates "
                "that use them)"
            )
    for link in links:
        if link.tech not in topology.catalog.techs:
            raise FileFormatError(
                f"{path}: link {link.id!r}: unknown link technology {link.tech!r}"
            )
    # Parents before children, whatever order the file lists groups in.
    pending = {g.id: g for g in groups}
    ordered: list[Group] = []
    while pending:
        ready = [g for g in pending.values() if g.parent is None or g.parent not in pending]
        if not ready:
            raise FileFormatError(f"{path}: groups nest in a cycle")
        for g in ready:
            ordered.append(g)
            del pending[g.id]
    try:
        topology.extend(groups=ordered, nodes=nodes, links=links)
    except (DesignError, CatalogError) as err:
        raise FileFormatError(f"{path}: {err}") from err
    return topology
