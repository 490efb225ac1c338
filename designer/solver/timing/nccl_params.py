"""Parameters of the NCCL time model (`nccl_model`): what ``resources/solver/
nccl_model.toml`` holds, loaded and checked.

The fitted figures (`FITTED`) come from ``benchmarks/calibrate_nccl.py``; the others are
NCCL facts, each with its source in the file.

Example
-------
>>> p = load_params()
>>> p.fraction("Simple"), sorted(p.base_us)[:2]
(1.0, ['collnet', 'nvls'])
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from designer.model.catalog import resources_dir
from designer.model.errors import DesignError

#: NCCL's protocols, in the order its tuner lists them.
PROTOCOLS: tuple[str, ...] = ("LL", "LL128", "Simple")

#: Default parameter file (bundled with the package or at the top of a checkout).
DEFAULT_PARAMS_PATH = resources_dir() / "solver" / "nccl_model.toml"


@dataclass(frozen=True)
class ModelParams:
    """The shared parameters of the model (see ``resources/solver/nccl_model.toml``).

    The top-level floats are the fitted ones (`FITTED`); the mappings hold NCCL facts.
    Mappings are keyed ``[protocol]``, ``[family][protocol]`` or
    ``[hw][family][protocol]`` with hw in ``nvlink``, ``pcie``, ``net``.
    """

    launch_eager_us: float
    ll_fraction: float
    ll128_fraction: float
    simple_efficiency: float
    nvls_efficiency: float
    nvls_step_us: float
    channel_GBps: float
    launch_graph_us: float
    nvls_reference: float
    p2p_ll_threshold: int
    tree_correction: Mapping[str, tuple[float, ...]]
    ring_plateau: float
    ring_plateau_channels: int
    efficiency: Mapping[str, float]
    thread_threshold: Mapping[str, int]
    max_threads: Mapping[str, int]
    threshold_per_rank: Mapping[str, bool]
    base_us: Mapping[str, Mapping[str, float]]
    step_us: Mapping[str, Mapping[str, Mapping[str, float]]]
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def fraction(self, protocol: str) -> float:
        """Bandwidth fraction of a protocol relative to Simple."""
        return {"LL": self.ll_fraction, "LL128": self.ll128_fraction, "Simple": 1.0}[protocol]


#: Fitted fields -> (TOML table path, key); `benchmarks/calibrate_nccl.py` writes these.
FITTED: Mapping[str, tuple[tuple[str, ...], str]] = MappingProxyType(
    {
        "launch_eager_us": (("launch_us",), "eager"),
        "ll_fraction": (("protocol", "LL"), "fraction"),
        "ll128_fraction": (("protocol", "LL128"), "fraction"),
        "simple_efficiency": (("efficiency",), "simple"),
        "nvls_efficiency": (("efficiency",), "nvls"),
        "nvls_step_us": (("nvls",), "step_us"),
        "channel_GBps": (("channels",), "per_channel_GBps"),
    }
)


def _table(data: Mapping[str, Any], path: Sequence[str], where: str) -> Mapping[str, Any]:
    node: Any = data
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            raise DesignError(f"{where}: missing table [{'.'.join(path)}]")
        node = node[key]
    return node


def _number(table: Mapping[str, Any], key: str, where: str) -> float:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DesignError(f"{where}: missing or non-numeric {key!r}")
    return float(value)


def _positive(table: Mapping[str, Any], key: str, where: str) -> float:
    value = _number(table, key, where)
    if not value > 0:
        raise DesignError(f"{where}: {key!r} must be > 0, not {value}")
    return value


def _factors(table: Mapping[str, Any], key: str, where: str) -> tuple[float, ...]:
    """A list of factors in (0, 1], one per power of two of the message size."""
    value = table.get(key)
    if not isinstance(value, list) or not value or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and 0 < v <= 1 for v in value
    ):
        raise DesignError(f"{where}: {key!r} must be a list of factors in (0, 1]")
    return tuple(float(v) for v in value)


def _by_protocol(table: Mapping[str, Any], where: str) -> Mapping[str, float]:
    return MappingProxyType({p: _number(table, p, where) for p in PROTOCOLS})


def load_params(path: str | Path | None = None) -> ModelParams:
    """Load the model parameters from TOML (default: ``resources/solver/nccl_model.toml``).

    Raises
    ------
    DesignError
        When the file is unreadable or a table or figure is missing (names the file).

    Examples
    --------
    >>> load_params().fraction("Simple")
    1.0
    """
    path = Path(path) if path is not None else DEFAULT_PARAMS_PATH
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise DesignError(f"{path}: {exc}") from None
    where = path.name
    fitted = {
        name: _number(_table(data, tpath, where), key, f"{where} [{'.'.join(tpath)}]")
        for name, (tpath, key) in FITTED.items()
    }
    proto = _table(data, ("protocol",), where)
    families = ("ring", "tree", "nvls", "nvlstree", "collnet", "pat")
    base = _table(data, ("base_latency_us",), where)
    step = _table(data, ("step_latency_us",), where)
    sources = {}
    for key, value in data.get("sources", {}).items():
        sources[key] = str(value)
    return ModelParams(
        **fitted,
        launch_graph_us=_number(_table(data, ("launch_us",), where), "graph", where),
        p2p_ll_threshold=int(_positive(proto["LL"], "p2p_threshold_bytes",
                                       f"{where} [protocol.LL]")),
        tree_correction=MappingProxyType(
            {p: _factors(_table(data, ("medium_sizes",), where), f"tree_correction_{p}", where)
             for p in PROTOCOLS}
        ),
        ring_plateau=_positive(_table(data, ("medium_sizes",), where), "ring_plateau", where),
        ring_plateau_channels=int(_positive(_table(data, ("medium_sizes",), where),
                                            "ring_plateau_channels", where)),
        nvls_reference=_positive(_table(data, ("nvls",), where), "reference_efficiency",
                                 f"{where} [nvls]"),
        efficiency=MappingProxyType(
            {
                k: _number(_table(data, ("efficiency",), where), k, f"{where} [efficiency]")
                for k in ("tree", "pat", "collnet")
            }
        ),
        thread_threshold=MappingProxyType(
            {p: int(_number(proto[p], "thread_threshold_bytes", where)) for p in PROTOCOLS}
        ),
        max_threads=MappingProxyType(
            {p: int(_number(proto[p], "max_threads", where)) for p in PROTOCOLS}
        ),
        threshold_per_rank=MappingProxyType(
            {p: bool(proto[p].get("threshold_per_rank", False)) for p in PROTOCOLS}
        ),
        base_us=MappingProxyType(
            {
                f: _by_protocol(_table(base, (f,), where), f"{where} [base_latency_us.{f}]")
                for f in families
            }
        ),
        step_us=MappingProxyType(
            {
                hw: MappingProxyType(
                    {
                        f: _by_protocol(
                            _table(step, (hw, f), where), f"{where} [step_latency_us.{hw}.{f}]"
                        )
                        for f in families
                    }
                )
                for hw in ("nvlink", "pcie", "net")
            }
        ),
        sources=MappingProxyType(sources),
    )


@cache
def _default_params() -> ModelParams:
    """The shipped parameters, loaded once (the file is data shipped with the program)."""
    return load_params()
