"""Structural positions of a design's nodes: an order that follows how the design is
cabled, not how its file lists the nodes or what they are called.

The solver numbers NVLink domains, the ranks inside them, ring channels, static
routing's destinations and the order of equal-cost next hops.  Taken from file rows or
ids, those numbers would make the results depend on them: the same cluster listed in
another order would ring its servers leaf after leaf or back and forth between leaves,
and GPUs renamed inside their servers would misalign the rails.  `structural_order`
gives every node a position that depends only on the structure:

1. **Units.**  The components of NVLink and PCIe links (a server: its GPUs, NVSwitches,
   NICs and host) and every other node on its own (a switch).  The compute plane's
   network links join units.
2. **Colours.**  Weisfeiler-Lehman colour refinement on the graph of units: a unit's
   first colour hashes its members' kinds and models and its internal links' technologies;
   each round hashes a unit's colour with the multiset of its neighbours' colours and
   the technologies of the links to them, until no class splits any more.  Units that
   some symmetry of the design maps onto each other always share a colour.
3. **Order.**  A breadth-first search from a root: the first server of the largest
   class of units with GPUs.  Each level's new units are ordered by the position of
   the unit they were reached from, then by colour, so units hanging off one switch (the
   servers of a leaf, the leaves of a pod) stay together.  Separate pieces of the
   design come one after the other, ordered by their root's colour.

Where units share a colour and a parent, file order decides, which changes nothing
where a symmetry maps one onto the other (every template); only designs whose
structurally different units colour refinement cannot tell apart keep an order effect.
Failed links and nodes count (they are part of the structure), and link counts do not,
so a what-if fail or capacity edit leaves the order as it is.

Example
-------
>>> a = np.array([0, 1, 2]); b = np.array([1, 2, 3])   # a path 0-1-2-3 of network links
>>> gpu = np.array([False, False, False, True])        # a GPU at the end 3
>>> o = structural_order(4, a, b, np.zeros(3, bool), np.ones(3, bool), np.zeros(4, np.uint64),
...                      np.zeros(3, np.uint64), gpu)
>>> o.unit_pos[o.unit_of].tolist()                     # from the GPU, whatever the order
[3, 2, 1, 0]
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from designer.solver.arrays.ragged import mix64

__all__ = ["Structure", "components", "name_hashes", "structural_order"]

_MAX_ROUNDS = 16


@dataclass(frozen=True, eq=False)
class Structure:
    """`structural_order`'s answer: each node's unit, and each unit's position."""

    unit_of: np.ndarray  # per node: its unit (0..U-1)
    unit_pos: np.ndarray  # per unit: its structural position (0..U-1)

    def node_pos(self) -> np.ndarray:
        """Per node: its unit's position (a switch's own; a server's members share one)."""
        return self.unit_pos[self.unit_of]


def name_hashes(names: Sequence[str]) -> np.ndarray:
    """A 64-bit hash of each name, the same in every process (Python's ``hash`` of a str
    is salted per process)."""
    return mix64(np.array([zlib.crc32(n.encode()) for n in names], dtype=np.uint64), 7)


def components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Connected-component label per node for the undirected edges (src, dst): the
    smallest node index of the component.

    Each round hooks, for every edge whose ends carry different labels, the larger label
    (a root) under the smaller one (`np.minimum.at`), then jumps pointers until every
    node points at its root.  Labels only fall and a root keeps its own, so the
    component's smallest node stays a root and ends up everyone's label.  No sort: NVLink
    domains (stars of GPUs and switches, meshes, tori) settle in two or three rounds.
    """
    label = np.arange(n)
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    while len(src):
        a, b = label[src], label[dst]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        differ = lo != hi
        if not differ.any():
            break
        np.minimum.at(label, hi[differ], lo[differ])
        while True:
            jumped = label[label]
            if np.array_equal(jumped, label):
                break
            label = jumped
    return label


def structural_order(
    n: int,
    a: np.ndarray,
    b: np.ndarray,
    inside: np.ndarray,
    network: np.ndarray,
    node_colour: np.ndarray,
    link_colour: np.ndarray,
    has_gpu: np.ndarray,
) -> Structure:
    """Structural positions of ``n`` nodes joined by links ``(a[k], b[k])`` (module
    docstring).

    Parameters
    ----------
    n : int
        Number of nodes.
    a, b : ndarray
        Each link's ends.
    inside : ndarray of bool
        Per link: it joins the members of one unit (NVLink, PCIe).
    network : ndarray of bool
        Per link: it joins units (the compute plane's network links).
    node_colour, link_colour : ndarray of uint64
        Per node and per link: a hash of what it is (kind and model; technology), not of
        its name.
    has_gpu : ndarray of bool
        Per node: it is a GPU.
    """
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    unit_of, n_units = _units(n, a[inside], b[inside])
    with np.errstate(over="ignore"):
        # A unit's first colour: its members and its internal links (multisets: sums).
        colour = np.zeros(n_units, np.uint64)
        np.add.at(colour, unit_of, mix64(node_colour, 1))
        ia, ib = a[inside], b[inside]
        np.add.at(
            colour, unit_of[ia], mix64(node_colour[ia] + node_colour[ib] + link_colour[inside], 2)
        )
        colour = mix64(colour, 3)
        src = np.concatenate([unit_of[a[network]], unit_of[b[network]]])
        dst = np.concatenate([unit_of[b[network]], unit_of[a[network]]])
        label = np.tile(link_colour[network], 2)
        colour = _refine(colour, src, dst, label)
    gpu_unit = np.zeros(n_units, bool)
    gpu_unit[unit_of[np.asarray(has_gpu, bool)]] = True
    first = np.full(n_units, n, np.int64)  # each unit's first node: file order
    np.minimum.at(first, unit_of, np.arange(n))
    return Structure(unit_of, _bfs_positions(n_units, src, dst, colour, first, gpu_unit))


def _units(n: int, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    """Component number (0..U-1, in order of each one's first node) of every node over
    links ``(a, b)``."""
    label = components(n, a, b)
    root = label == np.arange(n)
    number = np.cumsum(root) - 1
    return number[label], int(root.sum())


def _refine(colour: np.ndarray, src: np.ndarray, dst: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Colour refinement over arcs ``src -> dst`` labelled ``label`` until no colour class
    splits (at most `_MAX_ROUNDS` rounds)."""
    classes = len(np.unique(colour))
    for r in range(_MAX_ROUNDS):
        with np.errstate(over="ignore"):
            seen = np.zeros(len(colour), np.uint64)
            np.add.at(seen, src, mix64(colour[dst] + label, 11 + r))
            new = mix64(colour * np.uint64(0x9E3779B97F4A7C15) + seen, 5)
        n_new = len(np.unique(new))
        if n_new == classes:
            return new
        colour, classes = new, n_new
    return colour


def _bfs_positions(
    n_units: int,
    src: np.ndarray,
    dst: np.ndarray,
    colour: np.ndarray,
    first: np.ndarray,
    gpu_unit: np.ndarray,
) -> np.ndarray:
    """Breadth-first positions of the units (module docstring, step 3): every piece of
    the graph from its root, pieces in order of their roots' colour."""
    if n_units == 0:
        return np.zeros(0, np.int64)
    # Usually the design is one piece: its root from the classes alone, and the pieces
    # are found (a components pass) only if the search from it misses some unit.
    _, cls, size = np.unique(colour, return_inverse=True, return_counts=True)
    size = size[cls.reshape(-1)]
    root = np.lexsort((first, colour, -size, ~gpu_unit))[:1]
    pos = _search(n_units, src, dst, colour, first, root, np.zeros(n_units, np.int64))
    if pos is not None:
        return pos
    piece = components(n_units, src, dst)
    # Roots: in each piece, the first unit of its largest class of units with GPUs (of
    # its largest class when it has none), the smallest colour among equals.
    _, cls, size = np.unique(
        np.stack([piece, colour.view(np.int64)]), axis=1, return_inverse=True, return_counts=True
    )
    size = size[cls.reshape(-1)]
    order = np.lexsort((first, colour, -size, ~gpu_unit, piece))
    heads = order[np.r_[True, piece[order][1:] != piece[order][:-1]]]
    roots = heads[np.lexsort((first[heads], colour[heads]))]
    piece_rank = np.empty(n_units, np.int64)
    piece_rank[piece[roots]] = np.arange(len(roots))
    return _search(n_units, src, dst, colour, first, roots, piece_rank[piece])


def _search(
    n_units: int,
    src: np.ndarray,
    dst: np.ndarray,
    colour: np.ndarray,
    first: np.ndarray,
    roots: np.ndarray,
    piece_rank: np.ndarray,
) -> np.ndarray | None:
    """Breadth-first positions from ``roots`` (one per piece, ``piece_rank`` the order of
    each unit's piece), or None if some unit is not reached."""
    big = np.iinfo(np.int64).max
    level = np.full(n_units, -1, np.int64)
    rank = np.full(n_units, big, np.int64)  # position within its level
    level[roots] = 0
    rank[roots] = np.arange(len(roots))
    frontier = np.zeros(n_units, bool)
    frontier[roots] = True
    depth = 0
    while True:
        depth += 1
        go = frontier[src] & (level[dst] < 0)
        if not go.any():
            break
        parent = np.full(n_units, big, np.int64)
        np.minimum.at(parent, dst[go], rank[src[go]])
        new = np.flatnonzero(parent < big)
        new = new[np.lexsort((first[new], colour[new], parent[new], piece_rank[new]))]
        level[new] = depth
        rank[new] = np.arange(len(new))
        frontier[:] = False
        frontier[new] = True
    if (level < 0).any():
        return None
    pos = np.empty(n_units, np.int64)
    pos[np.lexsort((rank, level, piece_rank))] = np.arange(n_units)
    return pos
