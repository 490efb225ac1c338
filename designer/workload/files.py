"""Jobs as plain data: ``*.workload.toml`` files and the dicts a design file holds.

A workload file holds one or more jobs, each self-contained (the whole model, not only
a preset's name, so a file keeps meaning the same job when presets change)::

    format = "fabric-designer-workload"
    version = 1

    [[job]]
    name = "llama"
    preset = "llama3.1-405b"
    placement = "packed"
    colour = "#1f77b4"
    mfu = 0.5

    [job.model]
    layers = 126
    ...

    [job.training]
    global_batch = 2048
    ...

    [job.parallel]
    tp = 8
    ...

A design file keeps its jobs in ``settings.workloads`` in the same shape
(`design_jobs`, `set_design_jobs`; format version 2 of ``*.fabric.json``).

Reading trusts nothing: every problem is a ``ValueError`` of one line naming the file,
the job and the field.  Writing uses a small TOML writer for exactly this shape (tables
of scalars and lists of scalars), checked by reading back with `tomllib`.

Example
-------
>>> from designer.workload.job import Job
>>> from designer.workload.presets import preset
>>> job = Job.from_preset("a", preset("tiny"))
>>> loads_workload(dumps_workload([job])) == [job]
True
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import fields
from typing import Any

from designer.workload.job import Job, Parallelism, TrainingConfig
from designer.workload.model import ModelSpec

__all__ = [
    "FORMAT",
    "VERSION",
    "design_jobs",
    "dumps_workload",
    "job_from_dict",
    "job_to_dict",
    "loads_workload",
    "read_workload",
    "set_design_jobs",
    "write_workload",
]

FORMAT = "fabric-designer-workload"
VERSION = 1
#: A workload file larger than this is surely not one (a 16,384-GPU explicit list is
#: ~400 kB).
MAX_BYTES = 16 << 20

_JOB_SCALARS = {
    "name": str,
    "preset": str,
    "placement": str,
    "colour": str,
    "mfu": float,
    "tflops": float,
}
_JOB_LISTS = {"gpus": str, "layer_times": float}
_SECTIONS = {"model": ModelSpec, "training": TrainingConfig, "parallel": Parallelism}


def job_to_dict(job: Job) -> dict[str, Any]:
    """``job`` as plain TOML/JSON values (see the module for the shape)."""
    out: dict[str, Any] = {"name": job.name}
    if job.preset:
        out["preset"] = job.preset
    out.update(placement=job.placement, colour=job.colour, mfu=job.mfu)
    if job.tflops:
        out["tflops"] = job.tflops
    if job.gpus:
        out["gpus"] = list(job.gpus)
    if job.layer_times:
        out["layer_times"] = list(job.layer_times)
    for key, obj in (("model", job.model), ("training", job.config), ("parallel", job.parallel)):
        out[key] = {f.name: getattr(obj, f.name) for f in fields(obj)}
    return out


def _typed(value: Any, want: type, where: str) -> Any:
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if want is bool and not isinstance(value, bool):
        raise ValueError(f"{where}: expected true or false, got {value!r:.40}")
    if want is int and (not isinstance(value, int) or isinstance(value, bool)):
        raise ValueError(f"{where}: expected a whole number, got {value!r:.40}")
    if want is float and (not isinstance(value, float) or not math.isfinite(value)):
        raise ValueError(f"{where}: expected a number, got {value!r:.40}")
    if want is str and not isinstance(value, str):
        raise ValueError(f"{where}: expected a string, got {value!r:.40}")
    return value


def _section(cls, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a table")
    types = {
        f.name: {"int": int, "bool": bool, "float": float, "str": str}[f.type] for f in fields(cls)
    }
    unknown = sorted(set(data) - set(types))
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r}")
    values = {k: _typed(v, types[k], f"{where}.{k}") for k, v in data.items()}
    try:
        return cls(**values)
    except TypeError as exc:  # a required field missing
        missing = str(exc).rsplit(" ", 1)[-1].strip("'")
        raise ValueError(f"{where}: missing field {missing!r}") from None
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def job_from_dict(data: Any, where: str = "job") -> Job:
    """A checked `Job` from ``job_to_dict``'s shape; ``where`` prefixes every message.

    A job may give ``preset`` and leave out ``model`` (the preset's model is used) or
    ``training`` / ``parallel`` (the preset's defaults).

    Raises
    ------
    ValueError
        One line naming ``where``, the job and the field.
    """
    from designer.workload.presets import preset as find_preset

    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a table")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: missing field 'name' (a non-empty string)")
    where = f"{where} ({name!r})"
    unknown = sorted(set(data) - set(_JOB_SCALARS) - set(_JOB_LISTS) - set(_SECTIONS))
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r}")
    kw: dict[str, Any] = {}
    for key, want in _JOB_SCALARS.items():
        if key in data:
            kw[key] = _typed(data[key], want, f"{where}.{key}")
    for key, want in _JOB_LISTS.items():
        if key in data:
            if not isinstance(data[key], list):
                raise ValueError(f"{where}.{key}: expected a list")
            kw[key] = tuple(_typed(v, want, f"{where}.{key}[{i}]") for i, v in enumerate(data[key]))
    base = None
    if "preset" in kw:
        try:
            base = find_preset(kw["preset"])
        except ValueError as exc:
            raise ValueError(f"{where}.preset: {exc}") from None
    for key, cls in _SECTIONS.items():
        if key in data:
            section = data[key]
            if base is not None and key != "model" and isinstance(section, dict):
                defaults = dict(base.training if key == "training" else base.parallel)
                defaults.pop("gpus", None)
                section = {**defaults, **section}
            kw[key] = _section(cls, section, f"{where}.{key}")
        elif base is not None:
            kw[key] = (
                base.model
                if key == "model"
                else _section(
                    cls,
                    {
                        k: v
                        for k, v in (base.training if key == "training" else base.parallel).items()
                        if k != "gpus"
                    },
                    f"{where}.{key}",
                )
            )
        else:
            raise ValueError(f"{where}: missing table {key!r} (or a preset)")
    kw["config"] = kw.pop("training")
    job = Job(**kw)
    try:
        job.check()
    except ValueError as exc:
        raise ValueError(f"{where}: {str(exc).split(': ', 1)[-1]}") from None
    return job


# ------------------------------------------------------------------ TOML text
def _toml_str(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot write the number {value!r}")
        return repr(value)
    if isinstance(value, str):
        return _toml_str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def dumps_workload(jobs: list[Job]) -> str:
    """The text of a ``*.workload.toml`` file holding ``jobs``."""
    lines = [f"format = {_toml_str(FORMAT)}", f"version = {VERSION}"]
    for job in jobs:
        data = job_to_dict(job)
        lines += ["", "[[job]]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
        for key, table in data.items():
            if isinstance(table, dict):
                lines += ["", f"[job.{key}]"]
                lines += [f"{k} = {_toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def loads_workload(text: str, source: str = "<workload>") -> list[Job]:
    """The jobs of a workload file's text; errors name ``source``."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{source}: not valid TOML: {exc}") from None
    if data.get("format", FORMAT) != FORMAT:
        raise ValueError(f"{source}: format is {data['format']!r:.40}, not {FORMAT!r}")
    version = data.get("version", VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"{source}: version must be a whole number >= 1")
    if version > VERSION:
        raise ValueError(
            f"{source}: written by a newer Fabric Designer (workload version "
            f"{version}); this version reads up to {VERSION}"
        )
    unknown = sorted(set(data) - {"format", "version", "job"})
    if unknown:
        raise ValueError(f"{source}: unknown top-level field {unknown[0]!r}")
    jobs = data.get("job")
    if not isinstance(jobs, list) or not jobs:
        raise ValueError(f"{source}: no [[job]] in the file")
    out = [job_from_dict(j, f"{source}: job {i + 1}") for i, j in enumerate(jobs)]
    names = [j.name for j in out]
    for i, n in enumerate(names):
        if n in names[:i]:
            raise ValueError(f"{source}: job {i + 1} ({n!r}): another job has this name")
    return out


def read_workload(path: str | os.PathLike[str]) -> list[Job]:
    """The jobs of the workload file at ``path`` (errors: one line naming the file)."""
    name = os.fspath(path)
    try:
        size = os.path.getsize(name)
        if size > MAX_BYTES:
            raise ValueError(f"{name}: {size} bytes is too large for a workload file")
        with open(name, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ValueError(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not UTF-8 text") from None
    return loads_workload(text, name)


def write_workload(path: str | os.PathLike[str], jobs: list[Job]) -> None:
    """Write ``jobs`` to ``path`` atomically (a crash leaves the old file or the new)."""
    from designer.io.atomic import atomic_write_bytes

    atomic_write_bytes(os.fspath(path), dumps_workload(jobs).encode("utf-8"))


def design_jobs(topology, source: str = "design") -> list[Job]:
    """The jobs a design holds (``settings.workloads``), checked; errors name
    ``source`` and the job (``x.fabric.json: settings.workloads[0] ('a'): ...``)."""
    return [job_from_dict(data, f"{source}: settings.workloads[{i}]")
            for i, data in enumerate(topology.settings.get("workloads", []))]


def set_design_jobs(topology, jobs: list[Job]) -> None:
    """Store ``jobs`` in ``topology`` (saved with the design, format version 2)."""
    topology.set_setting("workloads", [job_to_dict(j) for j in jobs])
