"""The component catalog: device models and link technologies, loaded from TOML.

The data lives in ``resources/catalog/*.toml`` (data, not code): every figure there has
a ``source``; prices and power are labelled assumptions that a design may override.

Two kinds of entry:

``[device.<key>]``
    A product (H100, QM9700, ConnectX-7...).  ``category`` says what it is (gpu, switch,
    nvswitch, nvlink-switch-tray, nic, host, storage); ``ports`` lists its port groups.
``[tech.<key>]``
    A link technology (nvlink4, ib-ndr, roce-400...): per-direction rate of one link,
    latency, header overhead, lossless flag and the efficiency the solver will use.

Example
-------
>>> cat = default_catalog()
>>> cat.device("H100").category
'gpu'
>>> cat.tech("nvlink4").GBps
25.0
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from designer.model.errors import CatalogError

#: Device categories and the node kinds (roles) a device of that category can play.
CATEGORY_KINDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "gpu": ("gpu",),
        "nvswitch": ("nvswitch",),
        "nvlink-switch-tray": ("nvlink-switch-tray",),
        "switch": ("leaf", "spine", "core", "switch"),
        "nic": ("nic",),
        "host": ("host",),
        "storage": ("storage",),
    }
)

#: Every node kind the model knows, in tier order (top of a layered layout first).
NODE_KINDS: tuple[str, ...] = (
    "core",
    "spine",
    "leaf",
    "switch",
    "nvlink-switch-tray",
    "nvswitch",
    "nic",
    "gpu",
    "host",
    "storage",
)

#: Link families; a port group accepts exactly one family.
FAMILIES: tuple[str, ...] = ("nvlink", "pcie", "infiniband", "ethernet")

PLANES: tuple[str, ...] = ("compute", "storage", "frontend", "management")


@dataclass(frozen=True, slots=True)
class PortGroup:
    """A set of identical ports on a device.

    Parameters
    ----------
    family : str
        Link family the ports take (``nvlink``, ``pcie``, ``infiniband``, ``ethernet``).
    count : int
        Number of ports.
    gbps : float
        Native rate of one port, Gb/s per direction.
    min_gbps : float
        Slowest link rate the port runs at (auto-negotiation or breakout).
    breakout : bool
        Whether a port splits into several slower links (an 800G port as 2x400G):
        a slower link then uses ``link_gbps / gbps`` of a port instead of a whole one.
    generation : int or None
        For NVLink and PCIe, the generation; a link of another generation mismatches.
    protocols : tuple of str or None
        Link protocols the port speaks (``efa-srd`` only on an EFA adapter, ``roce``
        and ``tcp`` but not EFA on a ConnectX); ``None`` accepts any of the family.
    """

    family: str
    count: int
    gbps: float
    min_gbps: float
    breakout: bool = False
    generation: int | None = None
    protocols: tuple[str, ...] | None = None

    def accepts(self, tech: LinkTech) -> bool:
        """Whether a link of ``tech`` can plug into this group (family and generation)."""
        if tech.family != self.family:
            return False
        if self.protocols is not None and tech.protocol not in self.protocols:
            return False
        # NVLink generations do not interoperate; PCIe negotiates down (speed range).
        if self.family == "nvlink" and self.generation is not None:
            return tech.generation == self.generation
        return True

    def speed_ok(self, tech: LinkTech) -> bool:
        """Whether the port can run at the link's rate."""
        return self.min_gbps - 1e-9 <= tech.gbps <= self.gbps + 1e-9

    def ports_used(self, tech: LinkTech, count: int) -> float:
        """Ports consumed by ``count`` links of ``tech`` in this group."""
        if self.breakout and tech.gbps < self.gbps:
            return count * tech.gbps / self.gbps
        return float(count)


@dataclass(frozen=True, slots=True)
class DeviceModel:
    """A catalog product.  ``specs`` holds category-specific figures (``nvls``,
    ``sharp``, ``latency_ns``, ``nvlink_generation``...)."""

    key: str
    category: str
    name: str
    vendor: str
    ports: tuple[PortGroup, ...]
    specs: Mapping[str, Any]
    price_usd: float
    power_w: float
    source: str
    sources: Mapping[str, str] = field(default_factory=dict)
    assumption_note: str = ""

    def port_group_for(self, tech: LinkTech) -> PortGroup | None:
        """The port group a link of ``tech`` plugs into, or ``None`` if none accepts it.

        Prefers a group that can also run at the link's speed.
        """
        fitting = [g for g in self.ports if g.accepts(tech)]
        for g in fitting:
            if g.speed_ok(tech):
                return g
        return fitting[0] if fitting else None

    @property
    def kinds(self) -> tuple[str, ...]:
        """Node kinds (roles) a device of this model can play."""
        return CATEGORY_KINDS[self.category]


@dataclass(frozen=True, slots=True)
class LinkTech:
    """A link technology; rates are per direction for one link of a bundle."""

    key: str
    name: str
    family: str
    protocol: str
    generation: int | None
    gbps: float
    latency_ns: float
    header_bytes: int
    mtu_bytes: int
    lossless: bool
    efficiency: float
    jitter_ns: float
    price_usd: float
    power_w: float
    source: str
    sources: Mapping[str, str] = field(default_factory=dict)
    assumption_note: str = ""

    @property
    def GBps(self) -> float:
        """Per-direction rate of one link in GB/s (10^9 bytes/s)."""
        return self.gbps / 8.0

    @property
    def wire_efficiency(self) -> float:
        """Fraction of the line rate left after per-packet headers at the MTU."""
        return self.mtu_bytes / (self.mtu_bytes + self.header_bytes)


class Catalog:
    """Device models and link technologies by key (read-only).

    Parameters
    ----------
    devices, techs : iterable
        The entries; keys must be unique.
    """

    def __init__(self, devices: Iterable[DeviceModel], techs: Iterable[LinkTech]):
        self._devices = {d.key: d for d in devices}
        self._techs = {t.key: t for t in techs}

    @property
    def devices(self) -> Mapping[str, DeviceModel]:
        return MappingProxyType(self._devices)

    @property
    def techs(self) -> Mapping[str, LinkTech]:
        return MappingProxyType(self._techs)

    def device(self, key: str) -> DeviceModel:
        """The device model ``key``; raises `CatalogError` naming it when unknown."""
        try:
            return self._devices[key]
        except KeyError:
            raise CatalogError(f"unknown device model {key!r}") from None

    def tech(self, key: str) -> LinkTech:
        """The link technology ``key``; raises `CatalogError` naming it when unknown."""
        try:
            return self._techs[key]
        except KeyError:
            raise CatalogError(f"unknown link technology {key!r}") from None

    def models_for_kind(self, kind: str) -> list[DeviceModel]:
        """Device models that can play node kind ``kind``."""
        return [d for d in self._devices.values() if kind in d.kinds]

    def compatible_techs(self, model_a: str, model_b: str) -> list[LinkTech]:
        """Technologies that fit both devices' ports, fastest first.

        Examples
        --------
        >>> [t.key for t in default_catalog().compatible_techs("H100", "NVSwitch-gen3")]
        ['nvlink4']
        """
        a, b = self.device(model_a), self.device(model_b)
        out = []
        for t in self._techs.values():
            ga, gb = a.port_group_for(t), b.port_group_for(t)
            if ga and gb and ga.speed_ok(t) and gb.speed_ok(t):
                out.append(t)
        # Fastest first; among equals prefer lossless (IB over RoCE), then the key.
        out.sort(key=lambda t: (-t.gbps, not t.lossless, t.key))
        return out


# --------------------------------------------------------------------------- loading


def _need(entry: Mapping[str, Any], name: str, where: str, typ: type | tuple) -> Any:
    if name not in entry:
        raise CatalogError(f"{where}: missing field {name!r}")
    value = entry[name]
    if not isinstance(value, typ) or (isinstance(value, bool) and typ is not bool):
        raise CatalogError(f"{where}: field {name!r} has the wrong type")
    return value


def _assumptions(entry: Mapping[str, Any], where: str) -> tuple[float, float, str]:
    a = entry.get("assumptions", {})
    if not isinstance(a, dict):
        raise CatalogError(f"{where}: 'assumptions' must be a table")
    price = float(a.get("price_usd", 0.0))
    power = float(a.get("power_w", 0.0))
    return price, power, str(a.get("note", ""))


def _parse_device(key: str, entry: Mapping[str, Any], file: str) -> DeviceModel:
    where = f"{file}: device.{key}"
    category = _need(entry, "category", where, str)
    if category not in CATEGORY_KINDS:
        raise CatalogError(f"{where}: unknown category {category!r}")
    ports = []
    for i, p in enumerate(entry.get("ports", [])):
        pw = f"{where}.ports[{i}]"
        family = _need(p, "family", pw, str)
        if family not in FAMILIES:
            raise CatalogError(f"{pw}: unknown family {family!r}")
        gbps = float(_need(p, "gbps", pw, (int, float)))
        ports.append(
            PortGroup(
                family=family,
                count=int(_need(p, "count", pw, int)),
                gbps=gbps,
                min_gbps=float(p.get("min_gbps", gbps)),
                breakout=bool(p.get("breakout", False)),
                generation=p.get("generation"),
                protocols=tuple(p["protocols"]) if "protocols" in p else None,
            )
        )
    price, power, note = _assumptions(entry, where)
    return DeviceModel(
        key=key,
        category=category,
        name=_need(entry, "name", where, str),
        vendor=str(entry.get("vendor", "")),
        ports=tuple(ports),
        specs=MappingProxyType(dict(entry.get("specs", {}))),
        price_usd=price,
        power_w=power,
        source=_need(entry, "source", where, str),
        sources=MappingProxyType(dict(entry.get("sources", {}))),
        assumption_note=note,
    )


def _parse_tech(key: str, entry: Mapping[str, Any], file: str) -> LinkTech:
    where = f"{file}: tech.{key}"
    family = _need(entry, "family", where, str)
    if family not in FAMILIES:
        raise CatalogError(f"{where}: unknown family {family!r}")
    efficiency = float(_need(entry, "efficiency", where, (int, float)))
    if not 0.0 < efficiency <= 1.0:
        raise CatalogError(f"{where}: efficiency must be in (0, 1]")
    price, power, note = _assumptions(entry, where)
    return LinkTech(
        key=key,
        name=_need(entry, "name", where, str),
        family=family,
        protocol=str(entry.get("protocol", family)),
        generation=entry.get("generation"),
        gbps=float(_need(entry, "gbps", where, (int, float))),
        latency_ns=float(_need(entry, "latency_ns", where, (int, float))),
        header_bytes=int(entry.get("header_bytes", 0)),
        mtu_bytes=int(entry.get("mtu_bytes", 4096)),
        lossless=bool(_need(entry, "lossless", where, bool)),
        efficiency=efficiency,
        jitter_ns=float(entry.get("jitter_ns", 0.0)),
        price_usd=price,
        power_w=power,
        source=_need(entry, "source", where, str),
        sources=MappingProxyType(dict(entry.get("sources", {}))),
        assumption_note=note,
    )


def load_catalog(paths: Iterable[Path]) -> Catalog:
    """Load and merge catalog TOML files.

    Parameters
    ----------
    paths : iterable of Path
        TOML files with ``[device.*]`` and/or ``[tech.*]`` tables.

    Raises
    ------
    CatalogError
        On unreadable TOML, a missing field, or a key defined twice.
    """
    devices: dict[str, DeviceModel] = {}
    techs: dict[str, LinkTech] = {}
    for path in paths:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise CatalogError(f"{path}: {exc}") from None
        for key, entry in data.get("device", {}).items():
            if key in devices:
                raise CatalogError(f"{path.name}: device {key!r} defined twice")
            devices[key] = _parse_device(key, entry, path.name)
        for key, entry in data.get("tech", {}).items():
            if key in techs:
                raise CatalogError(f"{path.name}: tech {key!r} defined twice")
            techs[key] = _parse_tech(key, entry, path.name)
    return Catalog(devices.values(), techs.values())


def resources_dir() -> Path:
    """The ``resources`` folder: bundled in the wheel, or at the top of a checkout."""
    packaged = Path(__file__).resolve().parent.parent / "resources"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "resources"


@cache
def default_catalog() -> Catalog:
    """The catalog shipped in ``resources/catalog`` (loaded once)."""
    return load_catalog(sorted((resources_dir() / "catalog").glob("*.toml")))
