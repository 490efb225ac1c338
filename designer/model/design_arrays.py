"""A design read once into numpy arrays, for the figures `designer.model.report` makes.

The summary of a design (NVLink domains, oversubscription, bisection) looks at every
link several times; going through networkx views or a Python loop per link costs
seconds on a 16,384-GPU SuperPOD.  `DesignArrays` takes the design's columns
(`Topology.columns`, O(1)) and adds what those figures need per node and per link:
kind, plane and failure of each node; ends, bandwidth, family, plane and failure of
each link.  `components` finds connected components over an edge list at numpy speed.

Example
-------
>>> from designer.model.topology import Topology, Node, Link
>>> t = Topology()
>>> _ = t.add_node(Node("g0", "gpu", "H100", "GPU 0"))
>>> _ = t.add_node(Node("g1", "gpu", "H100", "GPU 1"))
>>> _ = t.add_link(Link("l0", "g0", "g1", "nvlink4", count=18))
>>> d = DesignArrays(t)
>>> d.gbps.tolist(), d.live().tolist()
([450.0], [True])
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np

__all__ = ["DesignArrays", "components"]


class DesignArrays:
    """Nodes and links of a design as arrays (node rows like ``ids``, link rows in the
    design's order).

    Attributes
    ----------
    ids : tuple of str
        Node ids, one per node row.
    kind : numpy.ndarray of str
        Each node's kind.
    node_failed, node_mgmt : numpy.ndarray of bool
        Failed nodes; nodes placed in the management plane.
    node_plane : numpy.ndarray of str
        Each node's plane.
    a, b : numpy.ndarray of int
        Each link's end rows.
    count : numpy.ndarray of int
        Links per bundle.
    gbps : numpy.ndarray of float
        Per-direction bandwidth of each bundle, GB/s (``count * rate / 8``).
    family : numpy.ndarray of str
        Each link's technology family (``nvlink``, ``pcie``...).
    plane : numpy.ndarray of str
        Each link's plane.
    link_failed : numpy.ndarray of bool
        Failed links.
    gpus_in_order : bool
        The GPU rows are in natural order of their ids.
    topology : Topology
        The design read, for what depends on its graph's order of links.
    link_row : dict
        Link id -> its row.
    """

    def __init__(self, topology):
        cols = topology.columns()
        techs = topology.catalog.techs
        # Nodes alone (a freshly loaded design's edges may not be in its graph yet).
        nodes = topology.node_data()
        self.topology = topology
        self.link_row: dict[str, int] = cols.link_pos
        self.ids: tuple[str, ...] = cols.node_ids
        self.kind_names: tuple[str, ...] = cols.kind_names
        self.kind_of = np.asarray(cols.kind_of, dtype=np.int64)
        self.kind = _by_code(cols.kind_names, self.kind_of)
        self.node_failed = np.asarray(cols.node_failed, dtype=bool)
        self.node_plane = _strings(list(map(itemgetter("plane"), map(nodes.__getitem__, self.ids))))
        self.node_mgmt = self.node_plane == "management"
        self.a = np.asarray(cols.a_idx, dtype=np.int64)
        self.b = np.asarray(cols.b_idx, dtype=np.int64)
        self.count = np.asarray(cols.counts).astype(np.int64)
        names = cols.tech_names
        rate = np.array([techs[t].gbps for t in names], dtype=float)
        fam = np.array([techs[t].family for t in names], dtype=str)
        tech_of = np.asarray(cols.tech_of, dtype=np.int64)
        self.gbps = self.count * rate[tech_of] / 8.0 if len(names) else np.zeros(0)
        self.family = fam[tech_of] if len(names) else np.zeros(0, dtype=str)
        if cols.one_plane is not None:
            self.plane = np.full(len(self.a), cols.one_plane)
        else:
            self.plane = _strings(cols.planes)
        self.link_failed = np.asarray(cols.link_failed, dtype=bool)
        self.gpus_in_order = cols.gpus_in_order

    def __len__(self) -> int:
        return len(self.ids)

    def is_kind(self, *kinds: str) -> np.ndarray:
        """Mask of the nodes of any of ``kinds``."""
        codes = [i for i, name in enumerate(self.kind_names) if name in kinds]
        return np.isin(self.kind_of, codes)

    def kind_counts(self) -> dict[str, int]:
        """Nodes per kind present."""
        per = np.bincount(self.kind_of, minlength=len(self.kind_names)).tolist()
        return {name: n for name, n in zip(self.kind_names, per, strict=True) if n}

    def live(self, plane: str | None = None) -> np.ndarray:
        """Mask of the working links between working nodes; with ``plane``, only the
        links of that plane and at no management-plane node."""
        a, b = self.a, self.b
        ok = ~(self.link_failed | self.node_failed[a] | self.node_failed[b])
        if plane is not None:
            ok &= (self.plane == plane) & ~self.node_mgmt[a] & ~self.node_mgmt[b]
        return ok


def _by_code(names: tuple[str, ...], codes: np.ndarray) -> np.ndarray:
    """The string array of ``names[codes]`` (numpy strings: compared at C speed)."""
    if not len(names):
        return np.zeros(len(codes), dtype=str)
    return np.asarray(names, dtype=str)[codes]


def _strings(values: list[str]) -> np.ndarray:
    """``values`` as a numpy string array, through their few distinct values (a
    million-row string conversion costs seconds; a code per row does not)."""
    names = tuple(dict.fromkeys(values))
    code = {name: i for i, name in enumerate(names)}
    return _by_code(names, np.fromiter(map(code.__getitem__, values), np.int64, len(values)))


def components(n: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Component label of each of ``n`` nodes over the edges ``u[i] - v[i]``: the
    smallest node of its component.

    Examples
    --------
    >>> components(5, np.array([0, 3]), np.array([2, 4])).tolist()
    [0, 1, 0, 3, 3]
    """
    labels = np.arange(n, dtype=np.int64)
    if not len(u):
        return labels
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    while True:
        lu, lv = labels[u], labels[v]
        low = np.minimum(lu, lv)
        new = labels.copy()
        # Hook each edge's roots onto the smaller; then jump to the roots.
        np.minimum.at(new, lu, low)
        np.minimum.at(new, lv, low)
        while True:
            nxt = new[new]
            if np.array_equal(nxt, new):
                break
            new = nxt
        if np.array_equal(new, labels):
            return labels
        labels = new
