"""Published models as presets (``resources/workloads/presets.toml``).

Each preset holds the architecture its source publishes (`ModelSpec`), the source's
URL, the published parameter count (checked against the derived count by the tests),
and a starting training configuration and parallel layout that a user edits.

Example
-------
>>> p = preset("llama3.1-405b")
>>> round(p.model.params() / 1e9)
406
>>> "tiny" in preset_names()
True
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from designer.model.catalog import resources_dir
from designer.workload.model import ModelSpec

__all__ = ["Preset", "preset", "preset_names", "presets"]


@dataclass(frozen=True)
class Preset:
    """One published model and a starting configuration.

    Attributes
    ----------
    name, title, source : str
        The preset's key, a one-line description, where the numbers come from.
    model : ModelSpec
    training, parallel : mapping
        Default `designer.workload.job.TrainingConfig` and `Parallelism` fields (plus
        ``gpus``).
    published_params, published_active_params : float
        The counts the source quotes (0: none); ``params_tolerance`` the relative
        difference the derived count may have from them.
    """

    name: str
    title: str
    source: str
    model: ModelSpec
    training: MappingProxyType
    parallel: MappingProxyType
    published_params: float
    published_active_params: float
    params_tolerance: float


def _path() -> Path:
    return resources_dir() / "workloads" / "presets.toml"


def _build(name: str, entry: dict[str, Any]) -> Preset:
    where = f"{_path().name}: preset {name!r}"
    try:
        model = ModelSpec(**entry["model"])
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    return Preset(
        name=name,
        title=str(entry.get("title", name)),
        source=str(entry["source"]),
        model=model,
        training=MappingProxyType(dict(entry.get("training", {}))),
        parallel=MappingProxyType(dict(entry.get("parallel", {}))),
        published_params=float(entry.get("published_params", 0)),
        published_active_params=float(entry.get("published_active_params", 0)),
        params_tolerance=float(entry.get("params_tolerance", 0)),
    )


@cache
def presets() -> MappingProxyType:
    """Every preset by name, in the file's order."""
    with _path().open("rb") as f:
        data = tomllib.load(f)
    return MappingProxyType({k: _build(k, v) for k, v in data["preset"].items()})


def preset_names() -> list[str]:
    return list(presets())


def preset(name: str) -> Preset:
    """The preset called ``name``.

    Raises
    ------
    ValueError
        When there is none, naming the presets there are.
    """
    try:
        return presets()[name]
    except KeyError:
        raise ValueError(
            f"unknown preset {name!r}; choose one of {', '.join(preset_names())}"
        ) from None
