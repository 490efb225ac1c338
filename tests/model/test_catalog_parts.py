"""The 2025-2026 catalog parts: their published figures, announced parts' dates, scale-up
links that are not NVLink, and the feature specs (docs/hardware.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from designer.model.catalog import default_catalog, load_catalog
from designer.model.errors import CatalogError

ANNOUNCED = {
    "Rubin": "2025-03-18",
    "Vera": "2025-03-18",
    "NVLink6-Switch-Tray": "2025-03-18",
    "ConnectX-9": "2025-03-18",
    "Q3450-LD": "2025-03-18",
    "SN6810": "2025-03-18",
    "MI455X": "2025-06-12",
    "UALink-Switch": "2025-04-08",
}


@pytest.fixture(scope="module")
def cat():
    return default_catalog()


def per_direction_GBps(cat, model: str) -> float:
    """Scale-up bandwidth of a GPU per direction, from its port group."""
    group = next(g for g in cat.device(model).ports if g.family == "nvlink")
    return group.count * group.gbps / 8


def test_announced_parts_carry_their_date(cat):
    announced = {k: d.announced for k, d in cat.devices.items() if d.status == "announced"}
    assert announced == ANNOUNCED
    assert all(d.status == "shipping" for k, d in cat.devices.items() if k not in ANNOUNCED)


def test_an_announced_part_without_a_date_is_refused(tmp_path):
    entry = (
        '[device.x]\ncategory = "nic"\nname = "X"\nsource = "s"\nstatus = "announced"\n'
        'ports = [ { family = "ethernet", count = 1, gbps = 400 } ]\n'
    )
    path = Path(tmp_path, "a.toml")
    path.write_text(entry, encoding="utf-8")
    with pytest.raises(CatalogError, match=r"device\.x: an announced part needs its date"):
        load_catalog([path])


@pytest.mark.parametrize(
    ("gpu", "GBps"),
    [
        ("B300", 900),  # NVLink 5: 1.8 TB/s bidirectional
        ("GB300", 900),
        ("Rubin", 1800),  # NVLink 6: 3.6 TB/s
        ("MI300X", 7 * 64),  # 7 xGMI links x 128 GB/s bidirectional
        ("MI325X", 7 * 64),
        ("MI355X", 7 * 76.8),
        ("MI455X", 1800),  # UALink 3.6 TB/s
        ("TPU-v5p", 600),  # ICI 1,200 GB/s bidirectional
        ("TPU7x", 600),  # ICI 1.2 TB/s
        ("Trainium2", 640),  # NeuronLink-v3 1.28 TB/s (read as bidirectional)
    ],
)
def test_scale_up_bandwidth_per_gpu(cat, gpu, GBps):
    assert per_direction_GBps(cat, gpu) == pytest.approx(GBps)


@pytest.mark.parametrize(
    ("switch", "ports", "gbps"),
    [
        ("Q3400", 144, 800),
        ("Q3450-LD", 144, 800),
        ("SN5600", 64, 800),
        ("SN6810", 128, 800),  # 102.4 Tb/s
        ("Tomahawk-5", 64, 800),  # 51.2 Tb/s
        ("Tomahawk-6", 128, 800),  # 102.4 Tb/s
        ("UALink-Switch", 128, 800),
        ("NVLink6-Switch-Tray", 144, 800),
    ],
)
def test_switch_radix_and_rate(cat, switch, ports, gbps):
    group = cat.device(switch).ports[0]
    assert (group.count, group.gbps) == (ports, gbps)


def test_scale_up_protocols_do_not_mix(cat):
    assert next(t.key for t in cat.compatible_techs("MI300X", "MI300X")) == "xgmi-64"
    # an NVLink port of the same generation number does not take an xGMI link
    assert cat.tech("xgmi-64").generation == cat.device("H100").ports[0].generation
    assert cat.device("H100").port_group_for(cat.tech("xgmi-64")) is None
    for a, b in [("H100", "MI300X"), ("MI455X", "NVSwitch-gen4"), ("TPU-v5p", "Trainium2")]:
        assert not [t for t in cat.compatible_techs(a, b) if t.family == "nvlink"], (a, b)
    assert [t.key for t in cat.compatible_techs("MI455X", "UALink-Switch")] == ["ualink-x4"]


def test_feature_specs(cat):
    def spec(key, name):
        return cat.device(key).specs.get(name)

    for ib in ("SB7800", "QM8700", "QM9700", "Q3400", "Q3450-LD"):
        assert spec(ib, "sharp") and spec(ib, "adaptive_routing") and spec(ib, "lossless")
    assert [spec(k, "sharp_version") for k in ("SB7800", "QM8700", "QM9700", "Q3400")] == [
        1, 2, 3, 4,
    ]  # fmt: skip
    assert not spec("Generic-51T", "adaptive_routing")
    for nic in ("EFA", "EFA-400", "EFA-v3", "Pollara-400", "ConnectX-8", "BlueField-3"):
        assert spec(nic, "packet_spraying"), nic
    assert not spec("ConnectX-7", "packet_spraying")
    assert spec("ConnectX-8", "multiplane") and not spec("ConnectX-7", "multiplane")
    for up in ("MI300X", "TPU-v5p", "Trainium2", "UALink-Switch"):
        assert spec(up, "nvls") is False, up
    assert spec("NVLink-Switch-Tray", "nvls") and spec("NVLink6-Switch-Tray", "nvls")
