"""Parametrised templates: whole designs from a few numbers.

`TEMPLATES` maps a name to a `Template` (help text, `Param` list, builder); the CLI
(``fabric-designer new <template> --set k=v``) and the GUI's "New from template" dialog
list and fill them.  `build_template` coerces string values ("8", "true") by each
parameter's default type and reports a bad name or value in one line.

Example
-------
>>> t = build_template("superpod", gpu="B200", sus="4")
>>> [sum(1 for _ in t.nodes(kind)) for kind in ("gpu", "leaf", "spine", "core")]
[1024, 32, 16, 0]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from designer.model.errors import DesignError
from designer.model.templates.clos import build_fat_tree, build_leaf_spine
from designer.model.templates.clos_plan import CORE_CHOICES
from designer.model.templates.example import build_example
from designer.model.templates.hgx import ALL_GPUS, HGX_GPUS, TORUS_GPUS, build_hgx
from designer.model.templates.lookup import FABRIC_PROTOCOLS
from designer.model.templates.nvl72 import NVL72_REFERENCE, RACK_GPUS, build_nvl72
from designer.model.templates.rail import SUPERPOD_REFERENCE, build_rail_cluster, build_superpod
from designer.model.templates.rail_fabric import PLANE_CHOICES
from designer.model.templates.torus import build_torus3d
from designer.model.templates.ualink import UALINK_GPUS, build_ualink
from designer.model.topology import Topology


@dataclass(frozen=True)
class Param:
    """A template parameter; its type is the type of ``default`` (int, float, str, bool)."""

    name: str
    default: Any
    help: str
    choices: tuple | None = None


@dataclass(frozen=True)
class Template:
    """A named design generator; ``gpus(values)`` is the GPU count it would build from
    the parameter values (computed before building, to refuse a design too large)."""

    name: str
    help: str
    params: tuple[Param, ...]
    build: Callable[..., Topology]
    gpus: Callable[[dict[str, Any]], int]


#: The largest design a template builds: the benchmarks' largest (a rail cluster of
#: 16,384 HGX B200 servers, built in ~25 s).  A typo such as torus3d x=y=z=1000 would
#: otherwise start building a billion GPUs.
MAX_TEMPLATE_GPUS = 131_072
#: Above this many GPUs, building is announced with its cost (`build_cost`).
LARGE_TEMPLATE_GPUS = 16_384


def build_cost(gpus: int) -> str:
    """What building and saving a design of ``gpus`` GPUs costs, roughly: measured on a
    32,760-GPU SuperPOD (23 s, 810 MB peak on one core), the most per GPU of the
    templates (a torus costs half).

    >>> build_cost(32_768)
    'about 23 s and 819 MB of memory'
    """
    return f"about {gpus * 0.7e-3:,.0f} s and {gpus * 25e-3:,.0f} MB of memory"


def _product(*names: str, times: int = 1) -> Callable[[dict[str, Any]], int]:
    """GPU count as the product of parameters (a negative or zero factor counts as 0:
    the builder then says which parameter is out of range)."""

    def count(values: dict[str, Any]) -> int:
        out = times
        for name in names:
            out *= max(0, int(values[name]))
        return out

    return count


def _superpod_gpus(gpu: str, sus: int) -> int:
    """GPUs of a ``sus``-SU SuperPOD of ``gpu`` (0 for a bad value: the builder says)."""
    ref = SUPERPOD_REFERENCE.get(gpu)
    if ref is None or sus < 1:
        return 0
    return (sus * ref.nodes_per_su - ref.reserved_slots) * ref.gpus_per_node


_FABRICS = tuple(FABRIC_PROTOCOLS)
_PLANES = (
    Param("storage", False, "add a storage plane: NVMe servers on their own switches"),
    Param("frontend", False, "add a front-end Ethernet plane"),
    Param("management", False, "add an out-of-band 1G management plane"),
)
_NETWORK = (
    Param("fabric", "infiniband", "scale-out fabric", _FABRICS),
    Param("nic_gbps", 400, "NIC and link rate, Gb/s (picks NIC, switch and link)"),
)

TEMPLATES: dict[str, Template] = {
    t.name: t
    for t in (
        Template(
            "hgx",
            "one HGX server: GPUs on NVSwitches, a NIC per GPU",
            (
                Param("gpu", "H100", "GPU model", HGX_GPUS),
                Param("gpus", 8, "GPUs on the board (1-8)"),
            ),
            build_hgx,
            _product("gpus"),
        ),
        Template(
            "nvl72",
            "NVL72 racks (GB200, GB300, Rubin): 72 GPUs per NVLink domain, racks on rails",
            (
                Param("gpus", 72, "GPUs in a one-rack partition (multiple of 4, 4-72)"),
                Param("racks", 1, "racks; more than 1 adds a rail-optimised scale-out fabric"),
                Param("gpu", "GB200", "GPU model", tuple(NVL72_REFERENCE)),
                Param("nic_gbps", 0, "NIC rate, Gb/s (0: the rack's own, 400 GB200, 800 GB300)"),
                Param("fabric", "infiniband", "scale-out fabric", _FABRICS),
                Param("oversubscription", 1.0, "leaf downlink / uplink bandwidth"),
                Param("core", "auto", "core tier: when needed, always or never", CORE_CHOICES),
                Param("leaf_radix", 64, "ports used per switch (at most the model has)"),
                Param("planes", 1, "fabric planes each NIC is split over", PLANE_CHOICES),
                *_PLANES,
            ),
            build_nvl72,
            lambda v: int(v["gpus"]) if int(v["racks"]) <= 1 else int(v["racks"]) * RACK_GPUS,
        ),
        Template(
            "rail-cluster",
            "HGX servers on rail-optimised leaves and spines",
            (
                Param("nodes", 4, "servers"),
                Param("gpu", "H100", "GPU model", HGX_GPUS),
                Param("gpus_per_node", 8, "GPUs per server (1-8)"),
                Param(
                    "nics_per_node",
                    0,
                    "scale-out NICs per server (0: one per GPU); NIC i is rail i",
                ),
                Param("nic_gbps", 400, "NIC and link rate, Gb/s (picks NIC, switch and link)"),
                Param("fabric", "infiniband", "scale-out fabric", _FABRICS),
                Param("leaf_radix", 64, "ports used per switch (at most the model has)"),
                Param("oversubscription", 1.0, "leaf downlink / uplink bandwidth"),
                Param("core", "auto", "core tier: when needed, always or never", CORE_CHOICES),
                *_PLANES,
                Param("planes", 1, "fabric planes each NIC is split over", PLANE_CHOICES),
            ),
            build_rail_cluster,
            _product("nodes", "gpus_per_node"),
        ),
        Template(
            "superpod",
            "NVIDIA DGX SuperPOD reference: rail-aligned SUs (32 nodes NDR; 72 B300 XDR)",
            (
                Param("gpu", "H100", "GPU model", tuple(SUPERPOD_REFERENCE)),
                Param("sus", 4, "scalable units (32 nodes each; 72 for B300)"),
                *_PLANES,
            ),
            build_superpod,
            # The reference's nodes per SU, less the node slots it gives to management
            # (a 4-SU H100 SuperPOD is 1,016 GPUs).
            lambda v: _superpod_gpus(v["gpu"], int(v["sus"])),
        ),
        Template(
            "fat-tree",
            "k-ary fat-tree of one-GPU hosts (k^3/4 hosts)",
            (
                Param("k", 4, "switch radix used: even, k pods"),
                Param("gpu", "H100", "GPU model", ALL_GPUS),
                *_NETWORK,
                *_PLANES,
            ),
            build_fat_tree,
            lambda v: max(0, int(v["k"])) ** 3 // 4,
        ),
        Template(
            "leaf-spine",
            "two-tier leaf-spine of one-GPU hosts",
            (
                Param("leaves", 4, "leaf switches (one rack each)"),
                Param("spines", 2, "spine switches"),
                Param("hosts_per_leaf", 4, "hosts under each leaf"),
                Param("uplinks", 1, "links from each leaf to each spine"),
                Param("gpu", "H100", "GPU model", ALL_GPUS),
                *_NETWORK,
                *_PLANES,
            ),
            build_leaf_spine,
            _product("leaves", "hosts_per_leaf"),
        ),
        Template(
            "torus3d",
            "3D torus of GPUs, TPUs (ICI) or Trainium2 (2D, z=1), wrap-around",
            (
                Param("x", 4, "GPUs along x"),
                Param("y", 4, "GPUs along y"),
                Param("z", 4, "GPUs along z"),
                Param("gpu", "H100", "GPU or accelerator model", TORUS_GPUS),
                *_PLANES,
            ),
            build_torus3d,
            _product("x", "y", "z"),
        ),
        Template(
            "ualink",
            "UALink pod (AMD Helios-style): accelerators on one tier of UALink 1.0 switches",
            (
                Param("gpus", 72, "accelerators (2-128: one tier of 128-port switches)"),
                Param("gpu", "MI455X", "accelerator model (UALink scale-up)", UALINK_GPUS),
                *_PLANES,
            ),
            build_ualink,
            lambda v: int(v["gpus"]),
        ),
        Template(
            "example",
            "the example design: 4 HGX H100 nodes, rail leaves, 2 spines, storage",
            (),
            build_example,
            lambda _v: 32,
        ),
    )
}

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def template_names() -> list[str]:
    """Names of the templates, in menu order."""
    return list(TEMPLATES)


def _coerce(template: str, p: Param, value: Any) -> Any:
    """``value`` as ``p``'s type, or a `DesignError` naming the parameter."""
    kind = type(p.default)
    bad = DesignError(f"{template}: {p.name} must be {kind.__name__}, got {value!r}")
    if kind is bool:
        if isinstance(value, bool):
            out: Any = value
        elif isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            out = value.strip().lower() in _TRUE
        elif isinstance(value, int) and value in (0, 1):
            out = bool(value)
        else:
            raise bad
    elif kind is int:
        if isinstance(value, bool):
            raise bad
        if isinstance(value, int):
            out = value
        elif isinstance(value, float) and value.is_integer():
            out = int(value)
        elif isinstance(value, str):
            try:
                out = int(value.strip())
            except ValueError:
                raise bad from None
        else:
            raise bad
    elif kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise bad
        try:
            out = float(value)
        except ValueError:
            raise bad from None
        if out != out or out in (float("inf"), float("-inf")):
            raise bad
    else:
        if not isinstance(value, str):
            raise bad
        out = value.strip()
    if p.choices is not None and out not in p.choices:
        folded = {str(c).lower(): c for c in p.choices}
        if isinstance(out, str) and out.lower() in folded:
            return folded[out.lower()]
        raise DesignError(
            f"{template}: {p.name} must be one of {', '.join(map(str, p.choices))}, got {value!r}"
        )
    return out


def build_template(name: str, **params: Any) -> Topology:
    """Build template ``name`` with ``params`` (strings are coerced by each parameter's
    default type; missing ones take their default).

    Raises
    ------
    DesignError
        Unknown template, unknown parameter, a value of the wrong type, out of range or
        not among the choices, or a design of more than `MAX_TEMPLATE_GPUS` GPUs; the
        message names it.

    Examples
    --------
    >>> build_template("hgx", gpu="B200", gpus="4").name
    'HGX B200 (4 GPUs)'
    >>> build_template("hgx", gpus="eight")
    Traceback (most recent call last):
    ...
    designer.model.errors.DesignError: hgx: gpus must be int, got 'eight'
    """
    values = template_values(name, **params)
    return TEMPLATES[name].build(**values)


def template_values(name: str, **params: Any) -> dict[str, Any]:
    """Every parameter of template ``name``: ``params`` coerced, the rest defaults.

    Raises
    ------
    DesignError
        As `build_template`, and for a design beyond `MAX_TEMPLATE_GPUS` GPUs (the
        message says how many it would have made), before anything is built.
    """
    if name not in TEMPLATES:
        raise DesignError(f"unknown template {name!r}; choose one of {', '.join(TEMPLATES)}")
    t = TEMPLATES[name]
    known = {p.name: p for p in t.params}
    for key in params:
        if key not in known:
            raise DesignError(
                f"{name}: no parameter {key!r}; it takes {', '.join(known) or 'none'}"
            )
    values = {
        p.name: _coerce(name, p, params[p.name]) if p.name in params else p.default
        for p in t.params
    }
    gpus = t.gpus(values)
    if gpus > MAX_TEMPLATE_GPUS:
        given = ", ".join(f"{k}={values[k]}" for k in params)
        raise DesignError(
            f"{name}: {given} would make {gpus:,} GPUs; a template builds at most "
            f"{MAX_TEMPLATE_GPUS:,}"
        )
    return values


__all__ = [
    "LARGE_TEMPLATE_GPUS",
    "MAX_TEMPLATE_GPUS",
    "TEMPLATES",
    "Param",
    "Template",
    "build_cost",
    "build_template",
    "template_gpus",
    "template_names",
    "template_values",
]


def template_gpus(name: str, **params: Any) -> int:
    """The GPU count template ``name`` would build with ``params`` (`template_values`
    checks them, the size included)."""
    values = template_values(name, **params)  # first: it checks the name
    return TEMPLATES[name].gpus(values)
