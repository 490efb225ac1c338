"""Tests of snapshots built from the topology's kept, copy-on-write columns
(`capture_design`, `build_snapshot`) and the values cached between them: a snapshot built
from a capture, however much later and whatever was edited in between, equals the
snapshot of a copy of the design built afresh at the moment of the capture."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from designer.model.templates import build_template
from designer.model.topology import Topology
from designer.solver.snapshot.build import DesignCapture, build_snapshot, capture_design
from designer.solver.snapshot.columns import ColumnCache, cache_of
from tests.model.random_edits import random_edit


def fresh(topo):
    """The snapshot of a copy of ``topo`` built now, sharing nothing with its columns or
    their cache."""
    copy = Topology(topo.catalog)
    copy.extend(topo.groups(), topo.nodes(), topo.links())
    return build_snapshot(DesignCapture(topo.generation, topo.settings["routing"],
                                        topo.catalog, copy.columns(), ColumnCache()))


def assert_same(a, b) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name in ("links", "link_compute", "names"):  # compared through what they give
            continue
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        elif f.name != "arc_delays":   # made on first use: compared below
            assert x == y, f.name
    # The per-arc facts made on first use, from what the capture held.
    for name in ("arc_line", "arc_latency_s", "arc_jitter_s", "node_kind", "node_model",
                 "arc_plane"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert dict(a.link_positions()) == dict(b.link_positions())
    assert np.array_equal(a.compute_links(), b.compute_links())


@pytest.mark.parametrize("seed", range(6))
def test_a_capture_is_unchanged_by_later_edits(seed):
    """Captures taken between random edits (some built at once, some only after more
    edits, as a worker thread might) give exactly the fresh snapshot of their moment."""
    rng = np.random.default_rng(seed)
    topo = build_template("rail-cluster", nodes=3)
    pending = []
    for k in range(40):
        random_edit(topo, rng, k)
        if rng.random() < 0.5:
            pending.append((capture_design(topo), fresh(topo)))
        if pending and rng.random() < 0.4:
            cap, expect = pending.pop(int(rng.integers(len(pending))))
            assert_same(build_snapshot(cap), expect)
    for cap, expect in pending:
        assert_same(build_snapshot(cap), expect)


def test_derived_values_are_reused_while_their_inputs_are_unchanged():
    """Failing a link keeps the node names; a changed node model rebuilds them."""
    topo = build_template("rail-cluster", nodes=2)
    a = build_snapshot(capture_design(topo))
    lk = next(iter(topo.links()))
    topo.update_link(lk.id, failed=True)
    b = build_snapshot(capture_design(topo))
    assert b.node_kind is a.node_kind and b.node_model is a.node_model
    gpu = next(n for n in topo.nodes() if n.kind == "gpu")
    topo.update_node(gpu.id, model="B200")
    c = build_snapshot(capture_design(topo))
    assert c.node_model is not b.node_model
    assert c.node_model[c.node_ids.index(gpu.id)] == "B200"


def test_nvlink_domains_are_reused_until_an_nvlink_link_changes():
    """Failing a network link keeps the NVLink components; failing an NVLink link
    recomputes them (and the snapshot still equals a fresh read)."""
    topo = build_template("rail-cluster", nodes=2)
    build_snapshot(capture_design(topo))
    cols = cache_of(topo)
    first = cols._components[3]
    net = next(lk for lk in topo.links() if lk.tech.startswith("ib-"))
    topo.update_link(net.id, failed=True)
    build_snapshot(capture_design(topo))
    assert cols._components[3] is first
    nv = next(lk for lk in topo.links() if lk.tech.startswith("nvlink"))
    topo.update_link(nv.id, failed=True)
    snap = build_snapshot(capture_design(topo))
    assert cols._components[3] is not first
    assert_same(snap, fresh(topo))


def test_a_snapshot_makes_its_names_only_when_asked():
    """Node kinds and models and arc planes are object arrays a solve rarely reads: a
    snapshot and a ring solve make none of them; asked, they are the design's, shared by
    the snapshots of one design."""
    from designer.solver.pipeline import solve_collective

    topo = build_template("rail-cluster", nodes=2)
    snap = build_snapshot(capture_design(topo))
    solve_collective(snap, sizes=[1 << 30], algorithm="ring")
    assert not {"node_kind", "node_model", "arc_plane"} & set(vars(snap))
    assert list(snap.node_kind[:2]) == [topo.node(i).kind for i in snap.node_ids[:2]]
    link = next(iter(topo.links()))
    k = snap.link_ids.index(link.id)
    assert snap.arc_plane[2 * k] == snap.arc_plane[2 * k + 1] == link.plane
    again = build_snapshot(capture_design(topo))
    assert again.node_kind is snap.node_kind and again.arc_plane is snap.arc_plane
