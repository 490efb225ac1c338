"""Which catalog figures say where they come from, and which do not.

Every figure in ``resources/catalog`` must carry a source (design.md, convention 12): a
number or a feature flag of a product or link technology is either given its own
``sources.<field>`` line, or stated in the entry's ``source`` line (the number itself,
or for a feature its name).  `unsourced_figures` lists the ones that are neither, so a
test can refuse a catalog that gains an unsourced figure.

What counts as a figure
-----------------------
* every number in a device's ``specs`` (``radix``, ``memory_GB``, ``nvlink_links``...);
* every feature flag in `FEATURES` (``sharp``, ``adaptive_routing``...), true or false:
  saying a switch cannot reduce in-network is a claim too;
* a link technology's ``gbps``, ``latency_ns`` and ``efficiency``.

Labels that describe rather than measure (``gpudirect``, ``vpi``, ``protocol``,
``scaleup_topology``) are not figures.

Example
-------
>>> from designer.model.catalog import default_catalog
>>> [unsourced_figures(e) for e in default_catalog().devices.values() if unsourced_figures(e)]
[]
"""

from __future__ import annotations

import re

from designer.model.catalog import DeviceModel, LinkTech

#: Feature flags and the words that name them in a source line.
FEATURES: dict[str, tuple[str, ...]] = {
    "nvls": ("nvlink sharp", "nvls"),
    "sharp": ("sharp",),
    "sharp_version": ("sharp",),
    "adaptive_routing": ("adaptive routing",),
    "packet_spraying": ("spray",),
    "lossless": ("lossless", "credit"),
    "multiplane": ("multiplane", "multi-plane", "planarised"),
    "cpo": ("co-packaged",),
    "uec": ("uec",),
}

#: A link technology's figures.
TECH_FIGURES: tuple[str, ...] = ("gbps", "latency_ns", "efficiency")


def _spellings(value: float, *, rate: bool = False) -> set[str]:
    """How a source line may write ``value``: ``1200``, ``1,200``, ``0.94``; a ``rate``
    in Gb/s may also be given in GB/s (``value / 8``)."""
    out = set()
    for v in (value, value / 8) if rate else (value,):
        if float(v).is_integer():
            out |= {str(int(v)), f"{int(v):,}"}
        out.add(f"{v:g}")
    return out


def _states(text: str, value: float, *, rate: bool = False) -> bool:
    """Whether ``text`` writes the number ``value`` (not as part of a longer number)."""
    return any(
        re.search(rf"(?<![\d.,]){re.escape(s)}(?![\d])", text) for s in _spellings(value, rate=rate)
    )


def unsourced_figures(entry: DeviceModel | LinkTech) -> list[str]:
    """The figures of a catalog ``entry`` with no source, by field name.

    Examples
    --------
    >>> from designer.model.catalog import default_catalog
    >>> unsourced_figures(default_catalog().tech("nvlink4"))
    []
    """
    text = entry.source.lower()
    missing = []
    if isinstance(entry, LinkTech):
        for name in TECH_FIGURES:
            if name not in entry.sources and not _states(
                text, getattr(entry, name), rate=name == "gbps"
            ):
                missing.append(name)
        return missing
    for name, value in entry.specs.items():
        if name in entry.sources:
            continue
        if name in FEATURES:
            if not any(word in text for word in FEATURES[name]):
                missing.append(name)
        elif (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and not _states(text, value)
        ):
            missing.append(name)
    return missing
