"""Catalog look-ups the templates share: which switch, NIC, NVSwitch or link a design uses.

Templates never branch on product names where the catalog can answer: an H100's NVLink
technology is the ``nvlink`` tech of its ``nvlink_generation``, its NVSwitch is the
switch chip whose NVLink ports speak that generation, an NDR fabric's switch is the
InfiniBand switch whose ports run natively at 400 Gb/s, and so on.

Example
-------
>>> from designer.model.catalog import default_catalog
>>> f = fabric_choice(default_catalog(), "infiniband", 400)
>>> (f.tech, f.switch, f.nic)
('ib-ndr', 'QM9700', 'ConnectX-7')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from designer.model.catalog import Catalog, DeviceModel, LinkTech
from designer.model.errors import DesignError

#: Fabric name (template parameter) -> link protocol in the catalog.
FABRIC_PROTOCOLS: dict[str, str] = {"infiniband": "ib", "roce": "roce", "efa": "efa-srd"}

#: When several switches take a fabric's links and none runs them natively, prefer
#: these (NVIDIA Spectrum for RoCE; a generic 51.2T box stands in for AWS's own EFA
#: switches, which are not sold).
PREFERRED_SWITCHES: dict[str, tuple[str, ...]] = {
    "ib": (),
    "roce": ("SN5600", "Generic-51T"),
    "efa-srd": ("Generic-51T",),
    "tcp": ("SN5600", "Generic-51T"),
}


@dataclass(frozen=True)
class FabricChoice:
    """Link technology, switch model and NIC model of one network."""

    tech: str
    switch: str
    nic: str


def _native_gbps(dev: DeviceModel, tech: LinkTech) -> float | None:
    """Native port rate of the group ``tech`` plugs into, if it can run ``tech``."""
    group = dev.port_group_for(tech)
    if group is None or not group.speed_ok(tech):
        return None
    return group.gbps


@lru_cache(maxsize=1024)  # pure in a read-only catalog; templates call it per node
def port_capacity(cat: Catalog, model: str, tech: str) -> int:
    """How many ``tech`` links a ``model`` device can take (breakout counted).

    >>> from designer.model.catalog import default_catalog
    >>> port_capacity(default_catalog(), "SN5600", "roce-400")
    128
    """
    dev, t = cat.device(model), cat.tech(tech)
    group = dev.port_group_for(t)
    if group is None or not group.speed_ok(t):
        return 0
    return math.floor(group.count / group.ports_used(t, 1) + 1e-9)


def fabric_tech(cat: Catalog, fabric: str, gbps: float) -> str:
    """The link technology of ``fabric`` (infiniband, roce, efa) at ``gbps`` Gb/s."""
    if fabric not in FABRIC_PROTOCOLS:
        raise DesignError(f"unknown fabric {fabric!r}; choose one of {', '.join(FABRIC_PROTOCOLS)}")
    protocol = FABRIC_PROTOCOLS[fabric]
    found = [t for t in cat.techs.values() if t.protocol == protocol]
    for t in found:
        if abs(t.gbps - gbps) < 1e-9:
            return t.key
    rates = ", ".join(f"{t.gbps:g}" for t in sorted(found, key=lambda t: t.gbps))
    raise DesignError(f"fabric {fabric} has no {gbps:g} Gb/s link; choose nic_gbps from {rates}")


def switch_for(cat: Catalog, tech: str) -> str:
    """The switch model for links of ``tech``: the fabric's preferred model if it runs
    them, else one whose ports run them natively, else the one with most such ports."""
    t = cat.tech(tech)
    preferred = PREFERRED_SWITCHES.get(t.protocol, ())
    best: tuple | None = None
    for dev in cat.models_for_kind("leaf"):
        native = _native_gbps(dev, t)
        if native is None:
            continue
        rank = preferred.index(dev.key) if dev.key in preferred else len(preferred)
        key = (rank, abs(native - t.gbps) > 1e-9, -port_capacity(cat, dev.key, tech), dev.key)
        if best is None or key < best:
            best = key
    if best is None:
        raise DesignError(f"no switch in the catalog takes {tech} links")
    return best[-1]


def nic_for(cat: Catalog, tech: str, *, dpu: bool = False) -> str:
    """The NIC for links of ``tech``: a NIC tied to a protocol (EFA) only serves that
    protocol; among the rest prefer a native port rate, then the slowest that fits."""
    t = cat.tech(tech)
    best: tuple | None = None
    for dev in cat.models_for_kind("nic"):
        if bool(dev.specs.get("dpu", False)) != dpu:
            continue
        own = dev.specs.get("protocol")
        if own is not None and own != t.protocol:
            continue
        native = _native_gbps(dev, t)
        if native is None:
            continue
        key = (own != t.protocol, abs(native - t.gbps) > 1e-9, native, dev.key)
        if best is None or key < best:
            best = key
    if best is None:
        raise DesignError(f"no NIC in the catalog takes {tech} links")
    return best[-1]


def fabric_choice(cat: Catalog, fabric: str, gbps: float) -> FabricChoice:
    """Tech, switch and NIC of a scale-out ``fabric`` at ``gbps`` per NIC."""
    tech = fabric_tech(cat, fabric, gbps)
    return FabricChoice(tech=tech, switch=switch_for(cat, tech), nic=nic_for(cat, tech))


@lru_cache(maxsize=1024)  # pure in a read-only catalog; templates call it per node
def tech_between(cat: Catalog, model_a: str, model_b: str, family: str) -> str:
    """The fastest ``family`` technology both devices run (``pcie5`` for H100 and
    ConnectX-7, ``pcie4`` when one end is Gen4)."""
    for t in cat.compatible_techs(model_a, model_b):
        if t.family == family:
            return t.key
    raise DesignError(f"no {family} link fits both {model_a} and {model_b}")


def nvlink_tech(cat: Catalog, gpu: str) -> str:
    """The scale-up link technology of ``gpu``: its ``scaleup_tech`` when the catalog
    names one (xGMI, UALink, ICI, NeuronLink), else the NVLink of its
    ``nvlink_generation``.

    >>> from designer.model.catalog import default_catalog
    >>> [nvlink_tech(default_catalog(), g) for g in ("H100", "MI300X", "TPU-v5p")]
    ['nvlink4', 'xgmi-64', 'ici-v5p']
    """
    specs = cat.device(gpu).specs
    if "scaleup_tech" in specs:
        return cat.tech(specs["scaleup_tech"]).key
    gen = specs.get("nvlink_generation")
    for t in cat.techs.values():
        if t.family == "nvlink" and t.protocol == "nvlink" and t.generation == gen:
            return t.key
    raise DesignError(f"GPU {gpu}: no NVLink technology of generation {gen} in the catalog")


def scaleup_links(cat: Catalog, gpu: str) -> int:
    """How many scale-up links ``gpu`` has (``nvlink_links`` or ``scaleup_links``)."""
    specs = cat.device(gpu).specs
    return int(specs.get("nvlink_links", specs.get("scaleup_links", 0)))


def scaleup_topology(cat: Catalog, gpu: str) -> str:
    """How ``gpu``'s scale-up domain is wired: ``switched`` (NVSwitch, UALink switch),
    ``full-mesh`` (AMD xGMI) or ``torus`` (TPU ICI, Trainium NeuronLink)."""
    return str(cat.device(gpu).specs.get("scaleup_topology", "switched"))


def nvswitch_for(cat: Catalog, gpu: str, kind: str = "nvswitch") -> str:
    """The scale-up switch of ``kind`` (an ``nvswitch`` chip or an
    ``nvlink-switch-tray``) whose ports speak ``gpu``'s scale-up technology."""
    tech = cat.tech(nvlink_tech(cat, gpu))
    for dev in cat.models_for_kind(kind):
        if _native_gbps(dev, tech) is not None:
            return dev.key
    raise DesignError(f"GPU {gpu}: no {kind} in the catalog speaks {tech.key}")


def default_nic_gbps(cat: Catalog, gpu: str) -> float:
    """The fastest InfiniBand rate a NIC on ``gpu``'s PCIe link can feed (200 Gb/s on
    PCIe Gen4, 400 on Gen5): what an HGX board of that GPU ships with."""
    gen = cat.device(gpu).specs.get("pcie_gen")
    pcie = [t for t in cat.techs.values() if t.family == "pcie" and t.generation == gen]
    if not pcie:
        raise DesignError(f"GPU {gpu}: no PCIe technology of generation {gen} in the catalog")
    rates = [t.gbps for t in cat.techs.values() if t.protocol == FABRIC_PROTOCOLS["infiniband"]]
    fitting = [r for r in rates if r <= pcie[0].gbps + 1e-9]
    if not fitting:
        raise DesignError(f"GPU {gpu}: no InfiniBand rate fits its PCIe Gen{gen} link")
    return max(fitting)


@lru_cache(maxsize=1024)  # pure in a read-only catalog; templates call it per node
def mgmt_capable(cat: Catalog, model: str, tech: str = "eth-1g") -> bool:
    """Whether ``model`` has a port that runs ``tech`` (an out-of-band management port)."""
    return _native_gbps(cat.device(model), cat.tech(tech)) is not None
