"""The component catalog: device models and link technologies, loaded from TOML.

The data lives in ``resources/catalog/*.toml`` (data, not code): every figure there has
a ``source``; prices and power are labelled assumptions that a design may override.

Two kinds of entry:

``[device.<key>]``
    A product (H100, QM9700, ConnectX-7...).  ``category`` says what it is (gpu, switch,
    nvswitch, nvlink-switch-tray, nic, host, storage); ``ports`` lists its port groups.
    ``status = "announced"`` with ``announced = "YYYY-MM-DD"`` marks a product that is
    announced but not shipping (Vera Rubin, Helios...); the default is ``"shipping"``.
``[tech.<key>]``
    A link technology (nvlink4, ib-ndr, roce-400...): per-direction rate of one link,
    latency, header overhead, lossless flag and the efficiency the solver will use.
``[system.<key>]``
    A reference system (DGX H100, GB200 NVL72...): its vendor-published power and the
    catalog parts it is made of, so the bill of materials can count the system-level
    power those parts leave out (`SystemModel.overhead_w`).

Example
-------
>>> cat = default_catalog()
>>> cat.device("H100").category
'gpu'
>>> cat.tech("nvlink4").GBps
25.0
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from designer.model.errors import CatalogError

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

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

#: Link families; a port group accepts exactly one family.  ``nvlink`` is the scale-up
#: family: memory-semantic accelerator-to-accelerator links (NVLink, and by protocol
#: AMD xGMI, UALink, Google ICI and AWS NeuronLink), the links that make a scale-up domain.
FAMILIES: tuple[str, ...] = ("nvlink", "pcie", "infiniband", "ethernet")

#: Whether a product ships or is only announced (`DeviceModel.status`).
STATUSES: tuple[str, ...] = ("shipping", "announced")

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
        # A scale-up port that names no protocol is an NVLink port: it does not take
        # xGMI, UALink, ICI or NeuronLink links of the same generation number.
        if self.protocols is None and self.family == "nvlink" and tech.protocol != "nvlink":
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
    ``sharp``, ``latency_ns``, ``nvlink_generation``...); ``status`` is ``"shipping"``
    or ``"announced"`` (then ``announced`` is the announcement date, ISO format)."""

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
    status: str = "shipping"
    announced: str = ""

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


@dataclass(frozen=True, slots=True)
class SystemModel:
    """A reference GPU system and its published power.

    Parameters
    ----------
    key, name : str
        Catalog key (``DGX-H100``) and display name.
    gpu : str
        The GPU model the system is built around (one system per GPU model).
    gpus : int
        GPUs per system.
    power_w : float
        The vendor's published system power (max), W.
    parts : mapping of str to int
        The catalog devices the BOM counts for one system, GPUs included.
    overhead_w : float
        ``power_w`` minus the catalog power of ``parts``: what the parts leave out
        (fans, PSU losses, memory, baseboard, extra NICs and DPUs), per system.
    source : str
        Where ``power_w`` comes from.
    """

    key: str
    name: str
    gpu: str
    gpus: int
    power_w: float
    parts: Mapping[str, int]
    overhead_w: float
    source: str

    @property
    def overhead_per_gpu_w(self) -> float:
        """`overhead_w` shared over the system's GPUs."""
        return self.overhead_w / self.gpus


class Catalog:
    """Device models, link technologies and reference systems by key (read-only).

    Parameters
    ----------
    devices, techs : iterable
        The entries; keys must be unique.
    systems : iterable of SystemModel, optional
        Reference systems, at most one per GPU model.
    """

    def __init__(
        self,
        devices: Iterable[DeviceModel],
        techs: Iterable[LinkTech],
        systems: Iterable[SystemModel] = (),
    ):
        self._devices = {d.key: d for d in devices}
        self._techs = {t.key: t for t in techs}
        self._systems = {s.key: s for s in systems}
        self._system_of_gpu = {s.gpu: s for s in self._systems.values()}

    @property
    def systems(self) -> Mapping[str, SystemModel]:
        return MappingProxyType(self._systems)

    def system_for_gpu(self, gpu_model: str) -> SystemModel | None:
        """The reference system built around ``gpu_model``, or None.

        Examples
        --------
        >>> default_catalog().system_for_gpu("H100").power_w
        10200.0
        """
        return self._system_of_gpu.get(gpu_model)

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
    status = str(entry.get("status", "shipping"))
    announced = str(entry.get("announced", ""))
    if status not in STATUSES:
        raise CatalogError(f"{where}: status must be one of {', '.join(STATUSES)}")
    if status == "announced" and not _ISO_DATE.fullmatch(announced):
        raise CatalogError(f"{where}: an announced part needs its date, announced = 'YYYY-MM-DD'")
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
        status=status,
        announced=announced,
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


def _parse_system(
    key: str, entry: Mapping[str, Any], file: str, devices: Mapping[str, DeviceModel]
) -> SystemModel:
    """A ``[system.<key>]`` table, checked against the devices loaded with it."""
    where = f"{file}: system.{key}"
    gpu = _need(entry, "gpu", where, str)
    gpus = _need(entry, "gpus", where, int)
    power = float(_need(entry, "power_w", where, (int, float)))
    parts = _need(entry, "parts", where, dict)
    if gpus < 1 or power <= 0:
        raise CatalogError(f"{where}: gpus and power_w must be positive")
    for part, count in parts.items():
        if part not in devices:
            raise CatalogError(f"{where}: parts: unknown device model {part!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise CatalogError(f"{where}: parts: {part} must be a whole number >= 1")
    if gpu not in devices or devices[gpu].category != "gpu":
        raise CatalogError(f"{where}: gpu {gpu!r} is not a GPU model of the catalog")
    if parts.get(gpu) != gpus:
        raise CatalogError(f"{where}: parts must hold its {gpus} {gpu} GPUs")
    counted = sum(devices[part].power_w * count for part, count in parts.items())
    if counted > power:
        raise CatalogError(
            f"{where}: its parts draw {counted:g} W, more than the system's {power:g} W"
        )
    return SystemModel(
        key=key,
        name=_need(entry, "name", where, str),
        gpu=gpu,
        gpus=gpus,
        power_w=power,
        parts=MappingProxyType(dict(parts)),
        overhead_w=power - counted,
        source=_need(entry, "source", where, str),
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
        On unreadable TOML, a missing field, a key defined twice, or a system whose
        parts are unknown or draw more than the system.
    """
    devices: dict[str, DeviceModel] = {}
    techs: dict[str, LinkTech] = {}
    # Systems refer to devices of any file: parsed once every device is known.
    system_entries: list[tuple[str, Mapping[str, Any], str]] = []
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
        for key, entry in data.get("system", {}).items():
            if any(key == k for k, _, _ in system_entries):
                raise CatalogError(f"{path.name}: system {key!r} defined twice")
            system_entries.append((key, entry, path.name))
    systems: dict[str, SystemModel] = {}
    for key, entry, file in system_entries:
        system = _parse_system(key, entry, file, devices)
        if any(other.gpu == system.gpu for other in systems.values()):
            raise CatalogError(f"{file}: system.{key}: a second system for GPU {system.gpu!r}")
        systems[key] = system
    return Catalog(devices.values(), techs.values(), systems.values())


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
