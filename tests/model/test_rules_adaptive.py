"""The ``adaptive-unsupported`` design rule: adaptive routing asked of a fabric whose
switches cannot route adaptively and whose NICs do not spray packets."""

from __future__ import annotations

import pytest

from designer.model.rules import validate
from designer.model.templates import build_template


def codes(topo) -> list[tuple[str, str]]:
    return [(f.code, f.subject) for f in validate(topo) if f.code == "adaptive-unsupported"]


def test_ecmp_switches_with_plain_nics_warn_under_adaptive_routing():
    # RoCE at 100G: generic 51.2T switches (ECMP only) and ConnectX-5 NICs (RC, no spraying)
    t = build_template("leaf-spine", fabric="roce", nic_gbps=100)
    assert t.settings["routing"] == "adaptive"
    found = [f for f in validate(t) if f.code == "adaptive-unsupported"]
    assert len(found) == 1
    assert found[0].severity == "warning"
    assert "Generic-51T" in found[0].message and "6 compute switch" in found[0].message
    assert t.node(found[0].subject).model == "Generic-51T"


def test_no_warning_when_routing_is_ecmp():
    t = build_template("leaf-spine", fabric="roce", nic_gbps=100)
    t.set_setting("routing", "ecmp")
    assert codes(t) == []


@pytest.mark.parametrize(
    "params",
    [
        {"fabric": "efa", "nic_gbps": 100},  # ECMP switches, but SRD NICs spray packets
        {"fabric": "roce", "nic_gbps": 400},  # Spectrum-4: adaptive routing
        {"fabric": "infiniband", "nic_gbps": 400},  # Quantum-2: InfiniBand AR
    ],
)
def test_no_warning_when_switches_or_nics_multipath(params):
    assert codes(build_template("leaf-spine", **params)) == []


def test_a_swapped_switch_model_brings_the_warning():
    t = build_template("leaf-spine", fabric="roce", nic_gbps=400)
    spine = next(iter(t.nodes("spine")))
    t.update_node(spine.id, model="Tomahawk-5")  # adaptive (DLB): still no warning
    assert codes(t) == []
    t.update_node(spine.id, model="Generic-51T")
    assert codes(t) == [("adaptive-unsupported", spine.id)]
