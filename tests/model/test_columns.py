"""Tests of the columns a `Topology` keeps as it is edited (`designer.model.columns`):
after any sequence of edits they hold what the graph holds, in insertion order, and a
frozen view never changes afterwards."""

from __future__ import annotations

import numpy as np
import pytest

from designer.model.naming import natural_key
from designer.model.templates import build_template
from designer.model.topology import Link, Node
from tests.model.random_edits import random_edit


def read_graph(topo) -> dict:
    """The columns' content read straight from the design, one node and link at a time."""
    nodes = list(topo.nodes())
    row = {n.id: i for i, n in enumerate(nodes)}
    links = list(topo.links())
    return {
        "node_ids": [n.id for n in nodes], "kind": [n.kind for n in nodes],
        "model": [n.model for n in nodes], "node_failed": [n.failed for n in nodes],
        "keys": [lk.id for lk in links], "a": [row[lk.a] for lk in links],
        "b": [row[lk.b] for lk in links], "tech": [lk.tech for lk in links],
        "count": [float(lk.count) for lk in links], "plane": [lk.plane for lk in links],
        "link_failed": [lk.failed for lk in links],
    }


def as_read(f) -> dict:
    """The same dict from a `FrozenColumns`."""
    return {
        "node_ids": list(f.node_ids), "kind": [f.kind_names[k] for k in f.kind_of],
        "model": [f.model_names[k] for k in f.model_of],
        "node_failed": f.node_failed.tolist(), "keys": list(f.keys),
        "a": f.a_idx.tolist(), "b": f.b_idx.tolist(),
        "tech": [f.tech_names[k] for k in f.tech_of], "count": f.counts.tolist(),
        "plane": list(f.planes), "link_failed": f.link_failed.tolist(),
    }


def check(topo, f) -> None:
    expect = read_graph(topo)
    assert as_read(f) == expect
    if f.gpus_in_order:  # the flag may be False for sorted rows, never True for others
        gpus = [i for i, k in zip(expect["node_ids"], expect["kind"], strict=True) if k == "gpu"]
        assert gpus == sorted(gpus, key=natural_key)
    assert f.link_pos == {lid: k for k, lid in enumerate(expect["keys"])}
    planes = set(expect["plane"])
    assert f.one_plane == (planes.pop() if len(planes) == 1 else None)


@pytest.mark.parametrize("seed", range(8))
def test_columns_hold_what_the_graph_holds_after_random_edits(seed):
    """Frozen between random edits, the columns equal a read of the design; every view
    taken earlier still equals the read of its own moment."""
    rng = np.random.default_rng(seed)
    topo = build_template("rail-cluster", nodes=2)
    taken = []
    for k in range(60):
        random_edit(topo, rng, k)
        if rng.random() < 0.4:
            f = topo.columns()
            check(topo, f)
            taken.append((f, read_graph(topo)))
    for f, expect in taken:
        assert as_read(f) == expect
    check(topo, topo.columns())


def test_a_freeze_shares_and_the_first_write_copies():
    """A freeze copies nothing; the first write after it copies only the column written;
    a value written unchanged copies nothing; an append copies no array."""
    topo = build_template("hgx", gpu="H100")
    first = topo.columns()
    again = topo.columns()
    assert again.counts is first.counts and again.keys is first.keys
    lk = next(iter(topo.links()))
    topo.update_link(lk.id, failed=True)
    second = topo.columns()
    assert second.link_failed is not first.link_failed
    assert not first.link_failed[first.link_pos[lk.id]]      # the view kept its value
    assert second.counts is first.counts                      # not written: shared
    topo.update_link(lk.id, count=lk.count)                   # same value: no write
    assert topo.columns().counts is first.counts
    topo.add_node(Node("extra", "gpu", "H100", "extra"))
    topo.add_link(Link("extra-l", "extra", lk.a, "pcie5"))
    third = topo.columns()
    assert np.shares_memory(third.counts, first.counts)       # appended past the view
    assert len(first.counts) + 1 == len(third.counts) and "extra-l" not in first.link_pos
    with pytest.raises(ValueError):
        third.counts[0] = 7.0                                 # views are read-only


def test_removed_rows_are_dropped_in_order():
    topo = build_template("hgx", gpu="H100")
    before = read_graph(topo)
    victim = before["node_ids"][3]
    topo.remove_node(victim)
    f = topo.columns()
    check(topo, f)
    assert victim not in f.node_ids
    assert list(f.node_ids) == [n for n in before["node_ids"] if n != victim]


def test_the_columns_know_when_gpu_rows_are_in_natural_order():
    topo = build_template("rail-cluster", nodes=2)       # GPUs added in natural order
    assert topo.columns().gpus_in_order
    topo.remove_node("n02-gpu3")                          # a removal keeps the order
    topo.add_node(Node("n03-gpu10", "gpu", "H100", "late"))
    topo.add_node(Node("n03-gpu11", "gpu", "H100", "later"))
    f = topo.columns()
    check(topo, f)
    assert f.gpus_in_order
    topo.add_node(Node("n03-gpu9", "gpu", "H100", "out of order"))   # 9 < 11
    assert not topo.columns().gpus_in_order

    topo = build_template("rail-cluster", nodes=2)
    topo.add_node(Node("zz-switch", "leaf", "QM9700", "a leaf"))
    assert topo.columns().gpus_in_order                   # not a GPU: no matter
    topo.update_node("n01-nic0", kind="gpu", model="H100")  # a GPU now, mid-table
    f = topo.columns()
    assert not f.gpus_in_order
    check(topo, f)

