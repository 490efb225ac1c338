"""Designs for the study tests: renamed and reordered copies, a deliberately asymmetric
design, and the study's JSON without its timings."""

from __future__ import annotations

import dataclasses
import random

from designer.model.templates import build_template
from designer.model.topology import Topology


def renamed_shuffled(topo: Topology, seed: int = 7) -> tuple[Topology, dict[str, str]]:
    """``topo`` with every node and link given a new, unrelated id (and label) and its
    nodes and links listed in a shuffled order; returns it and the old -> new id map."""
    rng = random.Random(seed)
    nodes, links = list(topo.nodes()), list(topo.links())
    names = [f"z{rng.getrandbits(40):010x}" for _ in nodes]
    new = dict(zip((n.id for n in nodes), names, strict=True))
    moved_nodes = [dataclasses.replace(n, id=new[n.id], name=new[n.id]) for n in nodes]
    moved_links = []
    for lk in links:
        lid = f"{new[lk.a]}:{new[lk.b]}" if rng.random() < 0.5 else f"{new[lk.b]}:{new[lk.a]}"
        while lid in new.values():
            lid += "x"
        new[lk.id] = lid
        a, b = (new[lk.a], new[lk.b]) if rng.random() < 0.5 else (new[lk.b], new[lk.a])
        moved_links.append(dataclasses.replace(lk, id=lid, a=a, b=b))
    rng.shuffle(moved_nodes)
    rng.shuffle(moved_links)
    out = Topology(name=topo.name)
    out.settings.update(topo.settings)
    out.extend(groups=list(topo.groups()), nodes=moved_nodes, links=moved_links)
    return out, new


def asymmetric() -> Topology:
    """A leaf-spine whose spines differ: one leaf has two uplinks to spine-0, so the
    leaves, their uplinks and the spines are no longer all alike."""
    topo = build_template("leaf-spine", leaves=4, spines=2, hosts_per_leaf=2)
    uplink = next(lk for lk in topo.links() if "spine-0" in (lk.a, lk.b))
    topo.update_link(uplink.id, count=2)
    return topo


def without_timing(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "timing_ms"}


def by_id(doc: dict, rename: dict[str, str] | None = None) -> dict[str, tuple]:
    """Each element's figures keyed by id (mapped through ``rename``), class left out:
    class numbers follow the outcomes, not the names, but tie order may differ."""
    rename = rename or {}
    return {
        rename.get(e["id"], e["id"]): (e["kind"], e["time_s"], e["slowdown"], e["connected"])
        for e in doc["elements"]
    }


def same_figures(a: dict[str, tuple], b: dict[str, tuple], rel: float = 1e-9) -> bool:
    """``by_id`` results equal, times and slowdowns to ``rel`` (a class's members agree
    to the study's tolerance, not always to the last bit)."""
    if a.keys() != b.keys():
        return False
    for key, x in a.items():
        y = b[key]
        for u, v in zip(x, y, strict=True):
            if isinstance(u, float) and isinstance(v, float):
                if abs(u - v) > rel * max(abs(u), abs(v)):
                    return False
            elif u != v:
                return False
    return True
