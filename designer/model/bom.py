"""Bill of materials: what a design costs and draws, from the catalog's assumptions.

Vendors do not publish prices, so every price and power figure here is an assumption:
the catalog's ``[assumptions]`` table of each device and link technology, replaced by the
design's own figures where ``topology.overrides`` has them (keyed by device model or
link-technology key: ``{"QM9700": {"price_usd": 25000, "power_w": 800}}``).  Failed parts
are still bought, so they are counted.

Links are priced per physical link (a bundle of ``count`` links costs ``count`` times
the technology's figure: optics and fibre for a 400G link, nothing for on-board NVLink).

System-level power: a GPU's figure is its chip TDP, and the parts a design draws (host,
NICs, NVSwitches at 0 W) leave out fans, PSU losses, memory, the baseboard and extra NICs
and DPUs.  For every GPU model with a reference system in the catalog (DGX H100, GB200
NVL72...: ``resources/catalog/systems.toml``), one ``system`` row adds, per GPU, the
system's published power minus its parts' catalog power, shared over its GPUs.  A
design made of such systems then totals the published power per system (DGX H100
10.2 kW), counted once per GPU, so several servers never count it twice.

Example
-------
>>> from designer.model.topology import Topology, Node
>>> t = Topology()
>>> _ = t.add_node(Node("g0", "gpu", "H100", "GPU 0"))
>>> t.overrides["H100"] = {"price_usd": 25000.0}
>>> bom(t).price_per_gpu_usd
25000.0
"""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from designer.model.catalog import FAMILIES
from designer.model.errors import DesignError
from designer.model.report import natural_key
from designer.model.safe_text import csv_writer
from designer.model.topology import Topology

#: Device categories counted as network (with every link) in ``network_price_usd``.
NETWORK_CATEGORIES: frozenset[str] = frozenset({"switch", "nvswitch", "nvlink-switch-tray", "nic"})

#: Row order of device categories in tables.
CATEGORY_ORDER: tuple[str, ...] = (
    "gpu",
    "host",
    "system",
    "nic",
    "nvswitch",
    "nvlink-switch-tray",
    "switch",
    "storage",
)

ASSUMPTION_NOTE = (
    "Prices and power are assumptions (catalog [assumptions] or this design's overrides), "
    "not vendor quotes."
)

SYSTEM_NOTE = (
    "system rows: the reference system's published power (catalog systems.toml, each "
    "with its source) minus the catalog power of its parts, shared per GPU: fans, PSU "
    "losses, memory, baseboard, extra NICs and DPUs"
)

CSV_COLUMNS: tuple[str, ...] = (
    "section",
    "key",
    "name",
    "category",
    "count",
    "bundles",
    "unit_price_usd",
    "unit_power_w",
    "total_price_usd",
    "total_power_w",
    "overridden",
)


@dataclass(frozen=True, slots=True)
class DeviceRow:
    """All devices of one catalog model in a design."""

    model: str
    name: str
    category: str
    count: int
    unit_price_usd: float
    unit_power_w: float
    total_price_usd: float
    total_power_w: float
    overridden: bool = False


@dataclass(frozen=True, slots=True)
class CableRow:
    """All links of one technology: ``links`` physical links in ``bundles`` bundles."""

    tech: str
    name: str
    links: int
    bundles: int
    unit_price_usd: float
    unit_power_w: float
    total_price_usd: float
    total_power_w: float
    overridden: bool = False


@dataclass(frozen=True, slots=True)
class Bom:
    """A design's bill of materials; per-GPU figures and the share are None without GPUs
    or without any cost."""

    name: str
    devices: tuple[DeviceRow, ...]
    cables: tuple[CableRow, ...]
    total_price_usd: float
    total_power_w: float
    gpus: int
    price_per_gpu_usd: float | None
    power_per_gpu_w: float | None
    network_price_usd: float
    network_power_w: float
    network_share: float | None


def _unit(topology: Topology, key: str, price: float, power: float) -> tuple[float, float, bool]:
    """Catalog price and power of ``key``, replaced by the design's overrides if any."""
    over = topology.overrides.get(key)
    if not over:
        return price, power, False
    out = {"price_usd": price, "power_w": power}
    for field, value in over.items():
        if field not in out:
            raise DesignError(
                f"override for {key!r}: unknown field {field!r} (use price_usd or power_w)"
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise DesignError(f"override for {key!r}: {field} must be a number >= 0")
        out[field] = float(value)
    return out["price_usd"], out["power_w"], True


def bom(topology: Topology) -> Bom:
    """Count and price a design.

    Parameters
    ----------
    topology : Topology
        The design (its ``overrides`` replace catalog prices and power).

    Returns
    -------
    Bom
        Device rows (by category, then model), cable rows (by family, then technology)
        and totals.  ``network_price_usd`` covers switches, NVSwitches, NVLink switch
        trays, NICs and all links; ``network_share`` is its fraction of the total.

    Raises
    ------
    DesignError
        When an override is not a number >= 0 or names an unknown field.

    Examples
    --------
    >>> from designer.model.topology import Topology, Node
    >>> t = Topology()
    >>> _ = t.add_node(Node("g0", "gpu", "H100", "GPU 0"))
    >>> b = bom(t)
    >>> b.gpus, b.devices[0].model
    (1, 'H100')
    """
    catalog = topology.catalog
    graph = topology.graph
    models = Counter(m for _, m in graph.nodes(data="model"))
    devices = []
    for key, count in models.items():
        dev = catalog.device(key)
        price, power, overridden = _unit(topology, key, dev.price_usd, dev.power_w)
        devices.append(
            DeviceRow(
                key,
                dev.name,
                dev.category,
                count,
                price,
                power,
                count * price,
                count * power,
                overridden,
            )
        )
    devices += _system_rows(topology, models)
    devices.sort(key=lambda r: (_rank(CATEGORY_ORDER, r.category), natural_key(r.model)))

    links: Counter[str] = Counter()
    bundles: Counter[str] = Counter()
    for _, _, d in graph.edges(data=True):
        links[d["tech"]] += d["count"]
        bundles[d["tech"]] += 1
    cables = []
    for key, n_links in links.items():
        tech = catalog.tech(key)
        price, power, overridden = _unit(topology, key, tech.price_usd, tech.power_w)
        cables.append(
            CableRow(
                key,
                tech.name,
                n_links,
                bundles[key],
                price,
                power,
                n_links * price,
                n_links * power,
                overridden,
            )
        )
    cables.sort(key=lambda r: (_rank(FAMILIES, catalog.tech(r.tech).family), natural_key(r.tech)))

    total_price = sum(r.total_price_usd for r in devices) + sum(r.total_price_usd for r in cables)
    total_power = sum(r.total_power_w for r in devices) + sum(r.total_power_w for r in cables)
    net_devices = [r for r in devices if r.category in NETWORK_CATEGORIES]
    net_price = sum(r.total_price_usd for r in net_devices + cables)
    net_power = sum(r.total_power_w for r in net_devices + cables)
    gpus = _count_category(devices, "gpu")
    return Bom(
        name=topology.name,
        devices=tuple(devices),
        cables=tuple(cables),
        total_price_usd=total_price,
        total_power_w=total_power,
        gpus=gpus,
        price_per_gpu_usd=total_price / gpus if gpus else None,
        power_per_gpu_w=total_power / gpus if gpus else None,
        network_price_usd=net_price,
        network_power_w=net_power,
        network_share=net_price / total_price if total_price > 0 else None,
    )


def _system_rows(topology: Topology, models: Counter[str]) -> list[DeviceRow]:
    """One ``system`` row per GPU model with a reference system: per GPU of the model,
    the system power its catalog parts leave out (`SystemModel.overhead_per_gpu_w`)."""
    catalog = topology.catalog
    rows = []
    for key, count in models.items():
        system = catalog.system_for_gpu(key)
        if system is None or catalog.device(key).category != "gpu":
            continue
        unit = system.overhead_per_gpu_w
        rows.append(
            DeviceRow(
                system.key,
                f"{system.name}: system power beyond the parts counted, per {key} GPU",
                "system",
                count,
                0.0,
                unit,
                0.0,
                count * unit,
            )
        )
    return rows


def _count_category(rows: list[DeviceRow], category: str) -> int:
    """How many devices of ``category`` the rows hold."""
    return sum(r.count for r in rows if r.category == category)


def _rank(order: tuple[str, ...], value: str) -> int:
    return order.index(value) if value in order else len(order)


def as_dict(b: Bom) -> dict[str, Any]:
    """The BOM as plain JSON-serialisable data (rows as lists of dicts), with the note
    that figures are assumptions."""
    data = asdict(b)
    data["devices"] = [dict(r) for r in data["devices"]]
    data["cables"] = [dict(r) for r in data["cables"]]
    data["note"] = ASSUMPTION_NOTE
    return data


# --------------------------------------------------------------------------- text


def _cell(value: float | int | None) -> str:
    """A number for CSV: whole numbers without ``.0``, others to 6 decimals."""
    if value is None:
        return ""
    if float(value).is_integer():
        return str(int(value))
    return repr(round(float(value), 6))


def to_csv(b: Bom) -> str:
    """The BOM as one CSV table (parses back with ``csv.reader``).

    Columns are `CSV_COLUMNS`; ``section`` is ``device``, ``cable``, ``total`` (rows
    ``all``, ``network`` and ``per-gpu``) or ``note`` (the assumptions note, in ``name``).

    Examples
    --------
    >>> from designer.model.topology import Topology, Node
    >>> t = Topology()
    >>> _ = t.add_node(Node("g0", "gpu", "H100", "GPU 0"))
    >>> import csv
    >>> rows = list(csv.reader(io.StringIO(to_csv(bom(t)))))
    >>> rows[0][:3], rows[1][:2]
    (['section', 'key', 'name'], ['device', 'H100'])
    """
    buf = io.StringIO()
    w = csv_writer(buf, lineterminator="\n")  # names could read as formulas: neutralised
    w.writerow(CSV_COLUMNS)
    for r in b.devices:
        w.writerow(
            [
                "device",
                r.model,
                r.name,
                r.category,
                r.count,
                "",
                _cell(r.unit_price_usd),
                _cell(r.unit_power_w),
                _cell(r.total_price_usd),
                _cell(r.total_power_w),
                int(r.overridden),
            ]
        )
    for r in b.cables:
        w.writerow(
            [
                "cable",
                r.tech,
                r.name,
                "link",
                r.links,
                r.bundles,
                _cell(r.unit_price_usd),
                _cell(r.unit_power_w),
                _cell(r.total_price_usd),
                _cell(r.total_power_w),
                int(r.overridden),
            ]
        )
    w.writerow(
        [
            "total",
            "all",
            "whole design",
            "",
            "",
            "",
            "",
            "",
            _cell(b.total_price_usd),
            _cell(b.total_power_w),
            "",
        ]
    )
    w.writerow(
        [
            "total",
            "network",
            "switches, NVSwitches, trays, NICs and links",
            "",
            "",
            "",
            "",
            "",
            _cell(b.network_price_usd),
            _cell(b.network_power_w),
            "",
        ]
    )
    w.writerow(
        [
            "total",
            "per-gpu",
            "whole design per GPU",
            "gpu",
            b.gpus,
            "",
            "",
            "",
            _cell(b.price_per_gpu_usd),
            _cell(b.power_per_gpu_w),
            "",
        ]
    )
    w.writerow(["note", "", ASSUMPTION_NOTE, "", "", "", "", "", "", "", ""])
    return buf.getvalue()


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.0f}"


def _kw(watts: float | None) -> str:
    return "-" if watts is None else f"{watts / 1000:,.1f} kW"


def _w(watts: float) -> str:
    return f"{watts:,.0f} W"


def format_bom(b: Bom) -> str:
    """The BOM as a text table for people, stating that figures are assumptions.

    Examples
    --------
    >>> from designer.model.topology import Topology
    >>> "assumptions" in format_bom(bom(Topology()))
    True
    """
    lines = [f"Bill of materials: {b.name}", ASSUMPTION_NOTE, ""]
    lines.append(
        f"{'device':<22}{'category':<20}{'count':>8}{'unit':>12}{'total':>16}{'power':>14}"
    )
    for r in b.devices:
        mark = "*" if r.overridden else ""
        label = f"{r.model} per GPU" if r.category == "system" else r.model
        lines.append(
            f"{label + mark:<22}{r.category:<20}{r.count:>8,}"
            f"{_usd(r.unit_price_usd):>12}{_usd(r.total_price_usd):>16}"
            f"{_w(r.total_power_w):>14}"
        )
    lines.append("")
    lines.append(
        f"{'link technology':<22}{'bundles':>10}{'links':>10}{'unit':>12}{'total':>16}{'power':>12}"
    )
    for r in b.cables:
        mark = "*" if r.overridden else ""
        lines.append(
            f"{r.tech + mark:<22}{r.bundles:>10,}{r.links:>10,}"
            f"{_usd(r.unit_price_usd):>12}{_usd(r.total_price_usd):>16}"
            f"{_w(r.total_power_w):>14}"
        )
    lines.append("")
    share = "-" if b.network_share is None else f"{b.network_share:.1%}"
    lines.append(f"Total: {_usd(b.total_price_usd)}, {_kw(b.total_power_w)}")
    lines.append(
        f"Per GPU ({b.gpus:,} GPUs): {_usd(b.price_per_gpu_usd)}, "
        f"{'-' if b.power_per_gpu_w is None else f'{b.power_per_gpu_w:,.0f} W'}"
    )
    lines.append(
        f"Network: {_usd(b.network_price_usd)} ({share} of the total), {_kw(b.network_power_w)}"
    )
    if any(r.category == "system" for r in b.devices):
        lines.append(SYSTEM_NOTE)
    if any(r.overridden for r in (*b.devices, *b.cables)):
        lines.append("* price or power overridden in this design")
    return "\n".join(lines)
