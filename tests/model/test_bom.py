"""Bill of materials: counts, prices and power (assumptions), overrides, CSV and text."""

from __future__ import annotations

import csv
import io
import json

import pytest

from designer.model.bom import CSV_COLUMNS, as_dict, bom, format_bom, to_csv
from designer.model.errors import DesignError
from designer.model.topology import Link, Node, Topology


def add(t: Topology, node_id: str, kind: str, model: str, **kw) -> None:
    t.add_node(Node(node_id, kind, model, node_id, **kw))


def link(t: Topology, link_id: str, a: str, b: str, tech: str, count: int = 1, **kw) -> None:
    t.add_link(Link(link_id, a, b, tech, count=count, **kw))


#: Round figures for every item of `small_design`, so totals can be summed by hand.
PRICES = {
    "H100": {"price_usd": 30000, "power_w": 700},
    "Host-x86": {"price_usd": 50000, "power_w": 2000},
    "ConnectX-7": {"price_usd": 2000, "power_w": 25},
    "NVSwitch-gen3": {"price_usd": 1000, "power_w": 100},
    "QM9700": {"price_usd": 20000, "power_w": 800},
    "nvlink4": {"price_usd": 0, "power_w": 0},
    "pcie5": {"price_usd": 0, "power_w": 0},
    "ib-ndr": {"price_usd": 1500, "power_w": 15},
}


def small_design() -> Topology:
    """2 GPUs on 1 NVSwitch (18 NVLinks each), a host, 2 NICs, a leaf and a spine."""
    t = Topology(name="small")
    add(t, "g0", "gpu", "H100")
    add(t, "g1", "gpu", "H100", failed=True)  # failed parts are still bought
    add(t, "nvs", "nvswitch", "NVSwitch-gen3")
    add(t, "host", "host", "Host-x86")
    add(t, "nic0", "nic", "ConnectX-7")
    add(t, "nic1", "nic", "ConnectX-7")
    add(t, "leaf", "leaf", "QM9700")
    add(t, "spine", "spine", "QM9700")
    link(t, "nv0", "g0", "nvs", "nvlink4", 18)
    link(t, "nv1", "g1", "nvs", "nvlink4", 18)
    link(t, "p0", "g0", "nic0", "pcie5")
    link(t, "p1", "g1", "nic1", "pcie5")
    link(t, "h0", "host", "g0", "pcie5")
    link(t, "ib0", "nic0", "leaf", "ib-ndr")
    link(t, "ib1", "nic1", "leaf", "ib-ndr")
    link(t, "up", "leaf", "spine", "ib-ndr", 2)
    return t


def priced_design() -> Topology:
    t = small_design()
    t.overrides.update({k: dict(v) for k, v in PRICES.items()})
    return t


def test_device_rows_count_models_in_category_order():
    b = bom(small_design())
    rows = [(r.model, r.category, r.count) for r in b.devices]
    assert rows == [
        ("H100", "gpu", 2),
        ("Host-x86", "host", 1),
        ("DGX-H100", "system", 2),  # the DGX H100's system power, per H100
        ("ConnectX-7", "nic", 2),
        ("NVSwitch-gen3", "nvswitch", 1),
        ("QM9700", "switch", 2),
    ]
    assert b.gpus == 2


def test_cable_rows_sum_links_and_bundles_per_technology():
    b = bom(small_design())
    rows = {r.tech: (r.links, r.bundles) for r in b.cables}
    assert rows == {"nvlink4": (36, 2), "pcie5": (3, 3), "ib-ndr": (4, 3)}
    assert [r.tech for r in b.cables] == ["nvlink4", "pcie5", "ib-ndr"]  # by family


def test_totals_equal_hand_sums():
    b = bom(priced_design())
    gpus = 2 * 30000
    host = 50000
    nics = 2 * 2000
    nvswitch = 1000
    switches = 2 * 20000
    cables = 4 * 1500  # 2 NIC links + a bundle of 2 up
    assert b.total_price_usd == gpus + host + nics + nvswitch + switches + cables
    # The system row comes from catalog figures, not the overrides: a DGX H100's 10.2 kW
    # less 8 H100 x 700 W, a Host-x86 2,000 W, 8 ConnectX-7 x 25 W, 4 NVSwitches x 0 W,
    # over its 8 GPUs: 300 W per GPU.
    system = (10200 - 8 * 700 - 2000 - 8 * 25) / 8
    assert b.total_power_w == 2 * 700 + 2000 + 2 * system + 2 * 25 + 100 + 2 * 800 + 4 * 15
    assert b.network_price_usd == nics + nvswitch + switches + cables
    assert b.network_power_w == 2 * 25 + 100 + 2 * 800 + 4 * 15
    assert b.network_share == pytest.approx(b.network_price_usd / b.total_price_usd)
    assert b.price_per_gpu_usd == pytest.approx(b.total_price_usd / 2)
    assert b.power_per_gpu_w == pytest.approx(b.total_power_w / 2)
    for r in b.devices:
        assert r.total_price_usd == r.count * r.unit_price_usd
        assert r.total_power_w == r.count * r.unit_power_w


def test_catalog_figures_are_used_without_overrides():
    t = small_design()
    cat = t.catalog
    b = bom(t)
    expected = sum(cat.device(t.node(n.id).model).price_usd for n in t.nodes()) + sum(
        lk.count * cat.tech(lk.tech).price_usd for lk in t.links()
    )
    assert b.total_price_usd == pytest.approx(expected)
    assert not any(r.overridden for r in (*b.devices, *b.cables))


def test_overrides_by_model_and_by_tech_key_apply_partially():
    t = small_design()
    cat = t.catalog
    t.overrides["QM9700"] = {"price_usd": 12345}
    t.overrides["ib-ndr"] = {"power_w": 99}
    b = bom(t)
    qm = next(r for r in b.devices if r.model == "QM9700")
    assert (qm.unit_price_usd, qm.unit_power_w) == (12345, cat.device("QM9700").power_w)
    assert qm.total_price_usd == 2 * 12345 and qm.overridden
    ndr = next(r for r in b.cables if r.tech == "ib-ndr")
    assert (ndr.unit_price_usd, ndr.unit_power_w) == (cat.tech("ib-ndr").price_usd, 99)
    assert ndr.total_power_w == 4 * 99 and ndr.overridden


@pytest.mark.parametrize(
    "bad", [{"price_usd": "cheap"}, {"power_w": -1}, {"cost": 3}, {"price_usd": True}]
)
def test_bad_overrides_raise_naming_the_key(bad):
    t = small_design()
    t.overrides["QM9700"] = bad
    with pytest.raises(DesignError, match="QM9700"):
        bom(t)


def test_design_without_gpus_or_cost():
    t = Topology()
    add(t, "s", "leaf", "QM9700")
    t.overrides["QM9700"] = {"price_usd": 0, "power_w": 0}
    b = bom(t)
    assert b.gpus == 0 and b.price_per_gpu_usd is None and b.power_per_gpu_w is None
    assert b.network_share is None
    assert bom(Topology()).devices == ()


def test_csv_parses_back_and_totals_add_up():
    b = bom(priced_design())
    rows = list(csv.reader(io.StringIO(to_csv(b))))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert all(len(r) == len(CSV_COLUMNS) for r in rows)
    col = {name: i for i, name in enumerate(CSV_COLUMNS)}
    items = [r for r in rows[1:] if r[0] in ("device", "cable")]
    assert len(items) == len(b.devices) + len(b.cables)
    total = next(r for r in rows if r[0] == "total" and r[1] == "all")
    assert float(total[col["total_price_usd"]]) == sum(
        float(r[col["total_price_usd"]]) for r in items
    )
    assert float(total[col["total_power_w"]]) == b.total_power_w
    ndr = next(r for r in items if r[1] == "ib-ndr")
    assert (ndr[col["count"]], ndr[col["bundles"]], ndr[col["overridden"]]) == ("4", "3", "1")
    assert any(r[0] == "note" and "assumptions" in r[2] for r in rows)


def test_as_dict_is_json_serialisable():
    data = as_dict(bom(priced_design()))
    again = json.loads(json.dumps(data))
    assert again["total_price_usd"] == bom(priced_design()).total_price_usd
    assert again["devices"][0]["model"] == "H100"
    assert "assumptions" in again["note"]


def test_format_bom_states_assumptions_and_marks_overrides():
    t = small_design()
    t.overrides["QM9700"] = {"price_usd": 25000}
    text = format_bom(bom(t))
    assert "assumptions" in text.lower()
    assert "QM9700*" in text and "overridden" in text
    assert "$50,000" in text  # 2 x 25,000
    assert "Per GPU (2 GPUs)" in text


def _build(name, **params):
    templates = pytest.importorskip("designer.model.templates")
    if not hasattr(templates, "build_template"):
        pytest.skip("templates not written yet")
    return templates.build_template(name, **params)


def test_hgx_template_bom_matches_its_nodes_and_links():
    t = _build("hgx")
    b = bom(t)
    assert b.gpus == 8
    assert sum(r.count for r in b.devices if r.category != "system") == len(t)
    assert sum(r.links for r in b.cables) == sum(lk.count for lk in t.links())
    assert 0 < b.network_share < 1


# ----------------------------------------------------------------------- system power

#: Published system power, W: NVIDIA DGX H100 / DGX B200 datasheets (~10.2 / ~14.3 kW
#: max); GB200 NVL72 ~120 kW per rack (the commonly quoted figure, domain.md s2).
PUBLISHED = {("hgx", "H100"): 10200, ("hgx", "B200"): 14300, ("nvl72", "GB200"): 120000}


@pytest.mark.parametrize(("template", "gpu"), list(PUBLISHED))
def test_one_system_totals_its_published_power(template, gpu):
    t = _build(template, gpu=gpu) if template == "hgx" else _build(template)
    assert bom(t).total_power_w == pytest.approx(PUBLISHED[template, gpu], rel=0.05)


def _server_power(b) -> float:
    """Power of everything but the scale-out network (switches and their cables)."""
    rows = [r.total_power_w for r in b.devices if r.category != "switch"]
    return sum(rows) + sum(r.total_power_w for r in b.cables if r.tech in ("nvlink4", "pcie5"))


def test_system_power_is_counted_once_per_server():
    two, four = (bom(_build("rail-cluster", nodes=n)) for n in (2, 4))
    assert _server_power(four) == pytest.approx(2 * _server_power(two))
    assert _server_power(four) == pytest.approx(4 * PUBLISHED["hgx", "H100"], rel=0.05)
    system = next(r for r in four.devices if r.category == "system")
    assert (system.model, system.count) == ("DGX-H100", 32)


def test_a_gpu_without_a_reference_system_adds_no_system_row():
    t = Topology()
    add(t, "g0", "gpu", "H800")  # no published DGX H800 figure in the catalog
    assert [r.category for r in bom(t).devices] == ["gpu"]


def test_format_bom_explains_the_system_row():
    text = format_bom(bom(_build("hgx")))
    assert "DGX-H100 per GPU" in text and "published power" in text


@pytest.mark.slow
def test_4096_gpu_superpod_bom():
    """The BOM of 4,096 GPUs (its time: benchmarks/design_checks.py)."""
    t = _build("superpod", gpu="B200", sus=16)
    b = bom(t)
    text, table = format_bom(b), to_csv(b)
    assert b.gpus == 4096 and "B200" in text and table.count("\n") > 5
