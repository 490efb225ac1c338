"""The shipped component catalog: it loads, holds the keys templates rely on, its
figures match the domain facts (domain.md s2), port matching behaves, and the loader
rejects bad files with a message naming the file and the entry."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from designer.model.catalog import (
    FAMILIES,
    Catalog,
    PortGroup,
    default_catalog,
    load_catalog,
    resources_dir,
)
from designer.model.catalog_sources import unsourced_figures
from designer.model.errors import CatalogError

GPUS = ("A100", "H100", "H200", "H800", "B200", "GB200")
NVSWITCHES = ("NVSwitch-gen2", "NVSwitch-gen3", "NVSwitch-gen4")
IB_SWITCHES = ("SB7800", "QM8700", "QM9700", "Q3400")
ETH_SWITCHES = ("SN5600", "Generic-51T", "SN2201")
NICS = ("ConnectX-5", "ConnectX-6", "ConnectX-7", "ConnectX-8", "BlueField-3", "EFA", "EFA-400")
HOSTS = ("Host-x86", "Grace")
DEVICE_KEYS = {
    **dict.fromkeys(GPUS, "gpu"),
    **dict.fromkeys(NVSWITCHES, "nvswitch"),
    "NVLink-Switch-Tray": "nvlink-switch-tray",
    **dict.fromkeys(IB_SWITCHES + ETH_SWITCHES, "switch"),
    **dict.fromkeys(NICS, "nic"),
    **dict.fromkeys(HOSTS, "host"),
    "Storage-NVMe": "storage",
}
# fmt: off
TECH_KEYS = [
    "nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5", "ib-edr", "ib-hdr", "ib-ndr", "ib-xdr",
    "eth-1g", "eth-100", "eth-200", "eth-400", "eth-800",
    "roce-100", "roce-200", "roce-400", "roce-800", "efa-100", "efa-400",
]
# fmt: on
GPU_SPECS = (
    "nvlink_generation",
    "nvlink_links",
    "nvlink_GBps_per_link",
    "pcie_gen",
    "nvls",
    "sharp",
    "memory_GB",
)


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return default_catalog()


def group(cat: Catalog, model: str, family: str) -> PortGroup:
    """The first (main) port group of ``family`` on ``model``."""
    return next(g for g in cat.device(model).ports if g.family == family)


def keys(techs) -> list[str]:
    return [t.key for t in techs]


# ------------------------------------------------------------------ loading and keys


def test_catalog_loads_from_resources(cat):
    files = sorted((resources_dir() / "catalog").glob("*.toml"))
    assert {"devices.toml", "links.toml"} <= {f.name for f in files}
    assert len(cat.devices) >= len(DEVICE_KEYS)
    assert len(cat.techs) >= len(TECH_KEYS)


@pytest.mark.parametrize(("key", "category"), sorted(DEVICE_KEYS.items()))
def test_device_key_exists_with_category(cat, key, category):
    assert cat.device(key).category == category


@pytest.mark.parametrize("key", TECH_KEYS)
def test_tech_key_exists(cat, key):
    assert cat.tech(key).key == key


def test_every_entry_is_sourced(cat):
    for entry in [*cat.devices.values(), *cat.techs.values()]:
        assert entry.source.strip(), entry.key
        for field, text in entry.sources.items():
            assert isinstance(text, str) and text.strip(), f"{entry.key}.sources.{field}"
        assert entry.name.strip(), entry.key


def test_every_figure_has_a_source(cat):
    """Each number and feature flag has its own ``sources.<field>`` line or is stated in
    the entry's ``source`` (`catalog_sources.unsourced_figures`)."""
    missing = {
        e.key: unsourced_figures(e)
        for e in [*cat.devices.values(), *cat.techs.values()]
        if unsourced_figures(e)
    }
    assert missing == {}


def test_prices_and_power_are_labelled_assumptions(cat):
    for entry in [*cat.devices.values(), *cat.techs.values()]:
        assert entry.price_usd >= 0 and entry.power_w >= 0, entry.key
        assert "assumption" in entry.assumption_note.lower(), entry.key


def test_port_groups_are_well_formed(cat):
    for d in cat.devices.values():
        assert d.ports, d.key
        for g in d.ports:
            assert g.family in FAMILIES, d.key
            assert g.count > 0 and 0 < g.min_gbps <= g.gbps, d.key
            if g.family in ("nvlink", "pcie"):
                assert g.generation is not None, d.key


def test_techs_are_well_formed(cat):
    for t in cat.techs.values():
        assert t.family in FAMILIES, t.key
        assert t.gbps > 0 and t.latency_ns > 0 and t.jitter_ns >= 0, t.key
        assert 0.5 < t.efficiency <= 1.0, t.key
        if t.family in ("nvlink", "pcie"):
            assert t.generation is not None, t.key
    # every tech plugs into at least one device
    for t in cat.techs.values():
        assert any(d.port_group_for(t) for d in cat.devices.values()), t.key


# --------------------------------------------------------------------- domain figures


@pytest.mark.parametrize(
    ("gpu", "links", "GBps_per_dir", "nvlink_gen", "pcie_gen"),
    [
        ("A100", 12, 300, 3, 4),
        ("H100", 18, 450, 4, 5),
        ("H200", 18, 450, 4, 5),
        ("H800", 8, 200, 4, 5),
        ("B200", 18, 900, 5, 5),
        ("GB200", 18, 900, 5, 5),
    ],
)
def test_gpu_nvlink_bandwidth(cat, gpu, links, GBps_per_dir, nvlink_gen, pcie_gen):
    d = cat.device(gpu)
    nv = group(cat, gpu, "nvlink")
    assert nv.count == links == d.specs["nvlink_links"]
    assert nv.generation == nvlink_gen == d.specs["nvlink_generation"]
    # per-direction GPU bandwidth from the port group (Gb/s -> GB/s)
    assert nv.count * nv.gbps / 8 == pytest.approx(GBps_per_dir)
    assert nv.gbps / 8 == pytest.approx(d.specs["nvlink_GBps_per_link"])
    pcie = group(cat, gpu, "pcie")
    assert pcie.count == 2 and pcie.generation == pcie_gen == d.specs["pcie_gen"]


@pytest.mark.parametrize("gpu", GPUS)
def test_gpu_specs_present(cat, gpu):
    specs = cat.device(gpu).specs
    for name in GPU_SPECS:
        assert name in specs, f"{gpu} lacks {name}"
    assert isinstance(specs["nvls"], bool) and isinstance(specs["sharp"], bool)
    assert specs["memory_GB"] >= 80


def test_nvls_only_from_hopper_nvswitch_on(cat):
    assert cat.device("A100").specs["nvls"] is False
    assert cat.device("H100").specs["nvls"] is True
    assert cat.device("B200").specs["nvls"] is True
    assert cat.device("NVSwitch-gen2").specs["nvls"] is False
    assert cat.device("NVSwitch-gen3").specs["nvls"] is True
    assert cat.device("NVSwitch-gen4").specs["nvls"] is True


def test_nvlink_domains_fit_their_switches(cat):
    # HGX A100: 8 GPUs x 12 links into 6 NVSwitch gen2 (36 ports each)
    assert 8 * group(cat, "A100", "nvlink").count <= 6 * group(cat, "NVSwitch-gen2", "nvlink").count
    # HGX H100: 8 x 18 links into 4 NVSwitch gen3 (64 ports), split 5/4/4/5
    h100 = group(cat, "H100", "nvlink").count
    assert h100 == 5 + 4 + 4 + 5
    assert group(cat, "NVSwitch-gen3", "nvlink").count >= 8 * 5
    # GB200 NVL72: 72 GPUs x 18 links = exactly 9 switch trays x 144 ports
    tray = group(cat, "NVLink-Switch-Tray", "nvlink")
    assert 72 * group(cat, "GB200", "nvlink").count == 9 * tray.count
    assert tray.count == 2 * group(cat, "NVSwitch-gen4", "nvlink").count


def test_qm9700_is_64_ndr_ports(cat):
    g = group(cat, "QM9700", "infiniband")
    assert (g.count, g.gbps) == (64, 400)
    per_dir_tbps = g.count * g.gbps / 1000
    assert per_dir_tbps == pytest.approx(25.6)
    assert cat.device("QM9700").specs["aggregate_tbps"] == pytest.approx(2 * per_dir_tbps)
    assert cat.device("QM9700").specs["radix"] == g.count
    assert cat.device("QM9700").specs["sharp"] is True


def test_ib_switch_generations(cat):
    assert (group(cat, "QM8700", "infiniband").count, group(cat, "QM8700", "infiniband").gbps) == (
        40,
        200,
    )
    q = group(cat, "Q3400", "infiniband")
    assert (q.count, q.gbps) == (144, 800)


def test_sn5600_is_64_x_800g(cat):
    g = group(cat, "SN5600", "ethernet")
    assert (g.count, g.gbps, g.breakout) == (64, 800, True)
    # NVIDIA's 51.2 Tb/s for Spectrum-4 is per direction (unlike Quantum-2's)
    assert g.count * g.gbps / 1000 == pytest.approx(51.2)
    assert cat.device("SN5600").specs["quoted_tbps"] == pytest.approx(51.2)
    # breakout capacity: 128 x 400G and 256 x 200G fill exactly the 64 ports
    assert g.ports_used(cat.tech("roce-400"), 128) == pytest.approx(64)
    assert g.ports_used(cat.tech("roce-200"), 256) == pytest.approx(64)


def test_switch_specs(cat):
    for key in IB_SWITCHES + ETH_SWITCHES:
        specs = cat.device(key).specs
        for name in ("latency_ns", "radix", "aggregate_tbps", "sharp", "adaptive_routing"):
            assert name in specs, f"{key} lacks {name}"
        assert specs["latency_ns"] > 0
        assert isinstance(specs["sharp"], bool) and isinstance(specs["adaptive_routing"], bool)


@pytest.mark.parametrize("key", IB_SWITCHES + ETH_SWITCHES + ("NVLink-Switch-Tray",))
def test_switch_aggregate_is_both_directions(cat, key):
    d = cat.device(key)
    # SN2201's 1G ports are its data ports; elsewhere the 1G group is the mgmt port
    data = [g for g in d.ports if g.gbps > 1 or key == "SN2201"]
    per_dir_tbps = sum(g.count * g.gbps for g in data) / 1000
    assert d.specs["aggregate_tbps"] == pytest.approx(2 * per_dir_tbps)
    assert d.specs["radix"] == (sum(g.count for g in data) if key == "SN2201" else data[0].count)


def test_pcie_rates(cat):
    # 32 GT/s x 128/130 x 16 lanes / 8 = 63 GB/s per direction; Gen4 half of it
    gen5 = 32e9 * 128 / 130 * 16 / 8 / 1e9
    assert cat.tech("pcie5").GBps == pytest.approx(gen5, rel=0.01)
    assert cat.tech("pcie4").GBps == pytest.approx(gen5 / 2, rel=0.01)


@pytest.mark.parametrize(
    ("tech", "GBps"),
    [
        ("nvlink3", 25),
        ("nvlink4", 25),
        ("nvlink5", 50),
        ("ib-edr", 12.5),
        ("ib-hdr", 25),
        ("ib-ndr", 50),
        ("ib-xdr", 100),
        ("eth-800", 100),
        ("efa-100", 12.5),
    ],
)
def test_tech_rates(cat, tech, GBps):
    assert cat.tech(tech).GBps == pytest.approx(GBps)


def test_efficiencies_match_reference_figures(cat):
    # NCCL topo.h effective per-link NVLink rates
    assert cat.tech("nvlink3").efficiency == pytest.approx(20 / 25, abs=1e-3)
    assert cat.tech("nvlink4").efficiency == pytest.approx(20.6 / 25, abs=1e-3)
    assert cat.tech("nvlink5").efficiency == pytest.approx(40.1 / 50, abs=1e-3)
    # measured per-NIC effective rates (measured-allreduce.json)
    assert cat.tech("ib-ndr").efficiency == pytest.approx(47 / 50, abs=1e-3)
    assert cat.tech("ib-hdr").efficiency == pytest.approx(24 / 25, abs=1e-3)
    assert cat.tech("ib-edr").efficiency == pytest.approx(12 / 12.5, abs=1e-3)


@pytest.mark.parametrize(("roce", "ib"), [("roce-200", "ib-hdr"), ("roce-400", "ib-ndr")])
def test_roce_efficiency_is_ib_less_header_overhead(cat, roce, ib):
    r, i = cat.tech(roce), cat.tech(ib)
    assert r.header_bytes == 62 and i.header_bytes == 26
    assert r.mtu_bytes == i.mtu_bytes
    derived = i.efficiency * r.wire_efficiency / i.wire_efficiency
    assert r.efficiency == pytest.approx(derived, abs=1e-3)
    assert r.efficiency < i.efficiency


def test_lossless_flags(cat):
    for key in ("nvlink4", "pcie5", "ib-ndr", "roce-400"):
        assert cat.tech(key).lossless is True, key
    for key in ("eth-400", "eth-1g", "efa-100", "efa-400"):
        assert cat.tech(key).lossless is False, key
    assert {cat.tech(k).protocol for k in ("efa-100", "efa-400")} == {"efa-srd"}
    assert {cat.tech(k).protocol for k in TECH_KEYS if k.startswith("roce")} == {"roce"}


def test_efa_instances_reach_3200_gbps(cat):
    # p5: 32 x 100G EFA; p6-b200: 8 x 400G EFA -> both 3,200 Gb/s per instance
    assert 32 * group(cat, "EFA", "ethernet").gbps == 3200
    assert 8 * group(cat, "EFA-400", "ethernet").gbps == 3200


# ------------------------------------------------------------------ port compatibility


def test_gpu_to_its_nvswitch(cat):
    assert keys(cat.compatible_techs("H100", "NVSwitch-gen3")) == ["nvlink4"]
    assert keys(cat.compatible_techs("A100", "NVSwitch-gen2")) == ["nvlink3"]
    assert keys(cat.compatible_techs("B200", "NVSwitch-gen4")) == ["nvlink5"]
    assert keys(cat.compatible_techs("GB200", "NVLink-Switch-Tray")) == ["nvlink5"]


def test_nvlink_generations_do_not_mix(cat):
    assert cat.compatible_techs("A100", "NVSwitch-gen3") == []
    assert cat.compatible_techs("H100", "NVSwitch-gen4") == []


def test_gpu_does_not_plug_into_ib_switch(cat):
    assert cat.compatible_techs("H100", "QM9700") == []
    assert cat.device("QM9700").port_group_for(cat.tech("nvlink4")) is None


def test_nic_to_ib_switch_prefers_ndr(cat):
    techs = keys(cat.compatible_techs("ConnectX-7", "QM9700"))
    assert techs[0] == "ib-ndr"
    assert "ib-hdr" in techs and "ib-xdr" not in techs
    assert keys(cat.compatible_techs("ConnectX-6", "QM8700"))[0] == "ib-hdr"
    assert keys(cat.compatible_techs("ConnectX-8", "Q3400"))[0] == "ib-xdr"


def test_nic_to_ethernet_switch_is_roce_or_ethernet(cat):
    techs = cat.compatible_techs("ConnectX-7", "SN5600")
    assert techs and techs[0].key == "roce-400"
    assert {t.family for t in techs} == {"ethernet"}
    assert {"roce-400", "eth-400"} <= set(keys(techs))
    assert max(t.gbps for t in techs) == 400


def test_gpu_to_nic_and_host_over_pcie(cat):
    assert keys(cat.compatible_techs("H100", "ConnectX-7"))[0] == "pcie5"
    # a Gen4 device negotiates down in a Gen5 slot
    assert keys(cat.compatible_techs("A100", "Host-x86")) == ["pcie4"]
    assert keys(cat.compatible_techs("ConnectX-6", "H100")) == ["pcie4"]


def test_management_network(cat):
    for key in ("Host-x86", "QM9700", "SN5600", "Storage-NVMe"):
        assert "eth-1g" in keys(cat.compatible_techs(key, "SN2201")), key
    assert cat.compatible_techs("H100", "SN2201") == []


def test_storage_attaches_to_both_fabrics(cat):
    assert keys(cat.compatible_techs("Storage-NVMe", "QM9700"))[0] == "ib-ndr"
    assert keys(cat.compatible_techs("Storage-NVMe", "SN5600"))[0] == "roce-400"


def test_models_for_kind(cat):
    leafs = {d.key for d in cat.models_for_kind("leaf")}
    assert set(IB_SWITCHES + ETH_SWITCHES) <= leafs
    assert {d.key for d in cat.models_for_kind("gpu")} >= set(GPUS)


# ----------------------------------------------------------------------- breakout


def test_breakout_uses_a_fraction_of_a_port(cat):
    g = group(cat, "SN5600", "ethernet")
    assert g.ports_used(cat.tech("eth-400"), 1) == pytest.approx(0.5)
    assert g.ports_used(cat.tech("roce-800"), 3) == pytest.approx(3.0)
    ndr = group(cat, "QM9700", "infiniband")
    assert ndr.ports_used(cat.tech("ib-hdr"), 4) == pytest.approx(2.0)
    assert ndr.speed_ok(cat.tech("ib-hdr")) and not ndr.speed_ok(cat.tech("ib-xdr"))


def test_no_breakout_uses_whole_ports(cat):
    nic = group(cat, "ConnectX-7", "infiniband")
    assert not nic.breakout
    assert nic.ports_used(cat.tech("ib-hdr"), 1) == 1.0
    assert math.isclose(group(cat, "H100", "nvlink").ports_used(cat.tech("nvlink4"), 18), 18)


# ----------------------------------------------------------------------- loader errors

GOOD_DEVICE = """
[device.X1]
category = "switch"
name = "Test switch"
source = "test"
ports = [ { family = "ethernet", count = 4, gbps = 100 } ]
"""

GOOD_TECH = """
[tech.t1]
name = "Test tech"
family = "ethernet"
gbps = 100
latency_ns = 100
lossless = false
efficiency = 0.9
source = "test"
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_loader_accepts_minimal_entries(tmp_path):
    c = load_catalog([write(tmp_path, "a.toml", GOOD_DEVICE + GOOD_TECH)])
    assert c.device("X1").ports[0].min_gbps == 100  # defaults to the native rate
    assert c.tech("t1").protocol == "ethernet"


def test_loader_rejects_missing_field(tmp_path):
    bad = GOOD_DEVICE.replace('source = "test"\n', "")
    p = write(tmp_path, "nosource.toml", bad)
    with pytest.raises(CatalogError, match=r"nosource\.toml.*device\.X1.*'source'"):
        load_catalog([p])


def test_loader_rejects_missing_tech_field(tmp_path):
    p = write(tmp_path, "nogbps.toml", GOOD_TECH.replace("gbps = 100\n", ""))
    with pytest.raises(CatalogError, match=r"nogbps\.toml.*tech\.t1.*'gbps'"):
        load_catalog([p])


def test_loader_rejects_key_defined_in_two_files(tmp_path):
    a = write(tmp_path, "a.toml", GOOD_DEVICE)
    b = write(tmp_path, "b.toml", GOOD_DEVICE)
    with pytest.raises(CatalogError, match=r"b\.toml.*X1.*twice"):
        load_catalog([a, b])


def test_loader_rejects_key_defined_twice_in_one_file(tmp_path):
    p = write(tmp_path, "dup.toml", GOOD_TECH + GOOD_TECH)
    with pytest.raises(CatalogError, match=r"dup\.toml"):
        load_catalog([p])


def test_loader_rejects_bad_family(tmp_path):
    p = write(tmp_path, "fam.toml", GOOD_DEVICE.replace('"ethernet"', '"fibrechannel"'))
    with pytest.raises(CatalogError, match=r"fam\.toml.*device\.X1.*'fibrechannel'"):
        load_catalog([p])
    p = write(tmp_path, "tfam.toml", GOOD_TECH.replace('"ethernet"', '"token-ring"'))
    with pytest.raises(CatalogError, match=r"tfam\.toml.*tech\.t1.*'token-ring'"):
        load_catalog([p])


def test_loader_rejects_bad_category_and_efficiency(tmp_path):
    p = write(tmp_path, "cat.toml", GOOD_DEVICE.replace('"switch"', '"toaster"'))
    with pytest.raises(CatalogError, match=r"cat\.toml.*device\.X1.*'toaster'"):
        load_catalog([p])
    p = write(tmp_path, "eff.toml", GOOD_TECH.replace("0.9", "1.5"))
    with pytest.raises(CatalogError, match=r"eff\.toml.*tech\.t1.*efficiency"):
        load_catalog([p])


def test_shipped_files_define_each_key_once():
    # the loader would raise on a duplicate; load the shipped files directly to be sure
    files = sorted((resources_dir() / "catalog").glob("*.toml"))
    c = load_catalog(files)
    assert set(c.devices) == set(default_catalog().devices)


def test_unknown_key_names_it(cat):
    with pytest.raises(CatalogError, match="'H9000'"):
        cat.device("H9000")
    with pytest.raises(CatalogError, match="'ib-qdr'"):
        cat.tech("ib-qdr")


# ----------------------------------------------------------------------- systems

GPU_X = """
[device.GX]
category = "gpu"
name = "Test GPU"
source = "test"
[device.GX.assumptions]
power_w = 1000
"""

SYSTEM_X = """
[system.SX]
name = "Test system"
gpu = "GX"
gpus = 2
power_w = 5000
source = "test"
parts = { GX = 2, X1 = 1 }
"""


def test_reference_systems_match_the_published_power(cat):
    # domain.md s2: DGX H100 ~10.2 kW, GB200 NVL72 rack ~120 kW; DGX B200 ~14.3 kW
    published = {"H100": 10200, "B200": 14300, "GB200": 120000}
    for gpu, watts in published.items():
        system = cat.system_for_gpu(gpu)
        assert system.power_w == watts and system.source
        parts = sum(cat.device(k).power_w * n for k, n in system.parts.items())
        assert parts + system.overhead_w == pytest.approx(watts)
        assert system.overhead_w > 0 and system.parts[gpu] == system.gpus
    assert cat.system_for_gpu("H800") is None


def test_loader_reads_a_system_defined_before_its_parts(tmp_path):
    # Systems may name devices of any file, in any order.
    c = load_catalog(
        [write(tmp_path, "a.toml", SYSTEM_X), write(tmp_path, "b.toml", GOOD_DEVICE + GPU_X)]
    )
    assert c.system_for_gpu("GX").overhead_per_gpu_w == (5000 - 2 * 1000) / 2


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (("X1 = 1", "Y9 = 1"), "unknown device model 'Y9'"),
        (("GX = 2", "GX = 1"), "must hold its 2 GX GPUs"),
        (("power_w = 5000", "power_w = 1500"), "draw 2000 W, more than the system's 1500 W"),
        (('gpu = "GX"', 'gpu = "X1"'), "'X1' is not a GPU model"),
        (('source = "test"\n', ""), "'source'"),
    ],
)
def test_loader_rejects_bad_systems(tmp_path, change, match):
    p = write(tmp_path, "sys.toml", GOOD_DEVICE + GPU_X + SYSTEM_X.replace(*change))
    with pytest.raises(CatalogError, match=r"sys\.toml.*system\.SX.*" + match):
        load_catalog([p])


def test_loader_rejects_two_systems_for_one_gpu(tmp_path):
    second = SYSTEM_X.replace("[system.SX]", "[system.SY]")
    p = write(tmp_path, "two.toml", GOOD_DEVICE + GPU_X + SYSTEM_X + second)
    with pytest.raises(CatalogError, match=r"system\.SY.*second system for GPU 'GX'"):
        load_catalog([p])
