"""Symmetry classes of a failure study against solving every element, and the
study's independence of names and listing order."""

from __future__ import annotations

import pytest
from study_designs import asymmetric, by_id, renamed_shuffled, same_figures

from designer.model.scenario import Scenario
from designer.model.templates import build_template
from designer.studies import element_classes, failure_study

RING = Scenario(algorithm="ring")


def _both(topo, elements, scenario=None):
    """The study with classes and with every element solved, as JSON."""
    reduced = failure_study(topo, elements=elements, workers=0, scenario=scenario)
    full = failure_study(topo, elements=elements, workers=0, scenario=scenario, reduce=False)
    return reduced, full


def test_fat_tree_classes_match_enumeration():
    reduced, full = _both(build_template("fat-tree", k=4), "all", RING)
    assert reduced.classes == 9 and full.classes == len(full.elements) == 116
    assert reduced.solves < full.solves / 2  # the reduction did reduce
    assert same_figures(by_id(reduced.as_json()), by_id(full.as_json()))


@pytest.mark.slow
def test_two_su_superpod_classes_match_enumeration():
    topo = build_template("superpod", sus=2)
    reduced, full = _both(topo, "switches", RING)
    assert same_figures(by_id(reduced.as_json()), by_id(full.as_json()))
    assert reduced.solves < full.solves / 3


def test_asymmetric_design_classes_match_enumeration():
    """The doubled uplink splits leaves, uplinks and spines into classes of their own;
    what structure cannot show, the sample's disagreement does."""
    topo = asymmetric()
    sym = element_classes(build_template("leaf-spine", leaves=4, spines=2, hosts_per_leaf=2), "all")
    asym = element_classes(topo, "all")
    assert len(asym) > len(sym)
    reduced, full = _both(topo, "all")
    assert same_figures(by_id(reduced.as_json()), by_id(full.as_json()))
    worst = reduced.elements[0]
    assert not worst.connected  # a host's only link or its leaf: a GPU is cut off


def test_classes_do_not_depend_on_names_or_order():
    topo = build_template("fat-tree", k=4)
    other, rename = renamed_shuffled(topo)
    a = failure_study(topo, elements="all", workers=0).as_json()
    b = failure_study(other, elements="all", workers=0).as_json()
    assert a["classes"] == b["classes"]
    assert same_figures(by_id(a, rename), by_id(b))
    assert [e["class"] for e in a["elements"]] == [e["class"] for e in b["elements"]]


def test_class_keys_are_name_free():
    topo = build_template("leaf-spine")
    other, rename = renamed_shuffled(topo, seed=3)
    a = element_classes(topo, "all")
    b = element_classes(other, "all")
    assert sorted(a) == sorted(b)
    for key, members in a.items():
        assert sorted(rename[i] for _k, i in members) == sorted(i for _k, i in b[key])


def test_sampled_pairs_fail_two_elements_at_once():
    topo = build_template("leaf-spine")
    report = failure_study(topo, elements="switches", k=2, samples=4, workers=0)
    assert len(report.elements) == 4
    assert all("+" in e.id and e.cls == -1 for e in report.elements)
    # Both spines down cuts the leaves apart: that pair, if drawn, is the worst.
    every = failure_study(topo, elements="switches", k=2, samples=100, workers=0)
    assert len(every.elements) == 15  # all pairs of 6 switches
    both_spines = next(e for e in every.elements if set(e.id.split("+")) == {"spine-0", "spine-1"})
    assert not both_spines.connected


def test_a_class_whose_members_disagree_is_enumerated():
    """Verified, not assumed: a grouping that lumps every switch together (leaves, whose
    failure cuts hosts off, with spines, whose failure does not) is caught by its
    sample, and the study solves every member."""
    topo = build_template("leaf-spine")

    def one_class(topo, elements, ranks, labels):
        return {
            ("everything",): [("node", n.id) for n in topo.nodes() if n.kind in ("leaf", "spine")]
        }

    lumped = failure_study(topo, elements="switches", workers=0, classify=one_class, verify=3)
    full = failure_study(topo, elements="switches", workers=0, reduce=False)
    assert lumped.enumerated_classes == 1 and lumped.solves == 6
    assert same_figures(by_id(lumped.as_json()), by_id(full.as_json()))
