"""The one-line answers the review docks lead with and the report repeats: how many
problems, what the design costs and draws, how big and how well connected it is.

Plain functions of the CLI's results (`Finding` list, `Bom`, `info` dict), no Qt, so
the docks and the HTML report say the same thing.

Example
-------
>>> problems_headline([])
'No problems found'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from designer.model.bom import Bom
from designer.model.rules import Finding


def problems_headline(findings: Sequence[Finding]) -> str:
    """``"2 errors, 5 warnings"`` or ``"No problems found"``."""
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    if not findings:
        return "No problems found"
    parts = []
    if errors:
        parts.append(f"{errors:,} error{'s' if errors != 1 else ''}")
    if warnings:
        parts.append(f"{warnings:,} warning{'s' if warnings != 1 else ''}")
    return ", ".join(parts)


def usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.0f}"


def watts(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:,.1f} kW" if value >= 10_000 else f"{value:,.0f} W"


def bom_headline(b: Bom) -> str:
    """Total and per-GPU cost and power, in one line."""
    per_gpu = ""
    if b.gpus:
        per_gpu = f"; per GPU {usd(b.price_per_gpu_usd)}, {watts(b.power_per_gpu_w)}"
    return f"{usd(b.total_price_usd)}, {watts(b.total_power_w)} ({b.gpus:,} GPUs{per_gpu})"


def bom_network_line(b: Bom) -> str:
    """What the network (NICs, switches, links) costs and draws, and its share."""
    share = "" if b.network_share is None else f" ({b.network_share:.0%} of the cost)"
    return f"Network {usd(b.network_price_usd)}{share}, {watts(b.network_power_w)}"


def info_headline(d: dict[str, Any]) -> str:
    """GPUs, NVLink domains and bisection per GPU in one line."""
    s = d["nvlink_summary"]
    domains = f"{s['domains']:,} NVLink domain{'s' if s['domains'] != 1 else ''}"
    if s["domains"]:
        domains += f" (largest {s['largest']:,})"
    bis = d["bisection_per_gpu_GBps"]
    bis_text = "bisection -" if bis is None else f"bisection {bis:,.1f} GB/s per GPU"
    return f"{d['gpus']:,} GPUs in {domains}; {bis_text}"


def oversubscription_rows(d: dict[str, Any]) -> list[tuple[str, int, str, str, str]]:
    """``(tier, switches, ratio, worst, worst switch)`` of each tier that has switches;
    a ratio reads ``2.00:1``, ``-`` without uplinks."""

    def ratio(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}:1"

    return [
        (tier, v["switches"], ratio(v["ratio"]), ratio(v["worst"]), v["worst_switch"] or "-")
        for tier, v in d["oversubscription"].items()
        if v["switches"]
    ]
