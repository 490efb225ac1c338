"""What the ``fabric-designer`` subcommands share: the usage error (exit code 2), the
argument parser that suggests the name a user probably meant, and reading a design file
with a log line.  Apart from `designer.cli`, so that the solver's commands
(`designer.cli_solver`) use them without importing the parser."""

from __future__ import annotations

import argparse
import difflib
import gc
import logging
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TextIO

from designer.model.safe_text import terminal_text

log = logging.getLogger("designer.cli")


class UsageError(Exception):
    """A command-line mistake (exit code 2)."""


def did_you_mean(word: str, names: Iterable[str], quote: bool = False) -> str:
    """`` (did you mean NAME?)`` for the name closest to ``word``, or ``""``.

    >>> did_you_mean("templatez", ["templates", "train"], quote=True)
    " (did you mean 'templates'?)"
    """
    close = difflib.get_close_matches(word, list(names), n=1, cutoff=0.6)
    if not close:
        return ""
    return f" (did you mean {close[0]!r}?)" if quote else f" (did you mean {close[0]}?)"


class ArgumentParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose errors suggest the choice a user probably meant,
    and that reports arguments left over by a subcommand with that subcommand's usage.

    argparse reports an unknown option of a subcommand from the top-level parser (its
    usage, no hint); `parse_command_line` hands it back to the subcommand instead.
    """

    _CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")

    def error(self, message: str) -> NoReturn:
        match = self._CHOICE.search(message)
        if match:
            message += did_you_mean(match[1], re.findall(r"'([^']*)'", match[2]), quote=True)
        super().error(message)

    def unrecognized(self, extras: Sequence[str]) -> NoReturn:
        """Fail on ``extras`` (what no argument took) with a hint for a mistyped option."""
        options = [s for a in self._actions for s in a.option_strings if s.startswith("--")]
        typo = next((x for x in extras if x.startswith("-")), None)
        hint = did_you_mean(typo.split("=", 1)[0], options) if typo else ""
        self.error(f"unrecognized arguments: {' '.join(extras)}{hint}")


def parse_command_line(parser: ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)``, with leftovers reported by the subcommand that was
    given (``parser.subcommands`` maps names to their parsers).  Exits 2 on a mistake."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        sub = getattr(parser, "subcommands", {}).get(getattr(args, "command", None), parser)
        sub.unrecognized(extras)
    return args


def load_design(path: str):
    """The design in ``path`` (`designer.io.imports.read_design`: native, or imported
    from draw.io or GraphML), its load logged.  For a command's process: the objects
    the design is made of are frozen out of the cyclic collector (`gc.freeze`)."""
    from designer.cli_progress import TerminalProgress
    from designer.io.imports import is_import, read_design

    t0 = time.perf_counter()
    # The command's process holds the design to its end: no cyclic collection while it
    # is built (the first one after the loader's own pause would walk every object just
    # made, ~1 s at 131k GPUs), and the design kept out of later ones (gc.freeze).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with TerminalProgress(f"open {path}") as progress:
            # .drawio and .graphml are imported (no progress); a long native load shows it.
            options: dict = {} if is_import(path) else {"lazy_edges": True}
            if progress.active and options:
                options["progress"] = progress
            topo = read_design(Path(path), **options)
        gc.freeze()
    finally:
        if was_enabled:
            gc.enable()
    log.info("opened %s: %d nodes in %.0f ms", path, len(topo), (time.perf_counter() - t0) * 1e3)
    return topo


class TerminalSafe:
    """A text stream that writes through `terminal_text`: whatever a command prints (a
    design's names, a file name, an error message) reaches the terminal with its control
    characters and lone surrogates escaped, so a shared file cannot set the terminal's
    title, clear the screen or fake output, nor fail the print with an encoding error.
    Newlines and tabs pass; a name's own newline is escaped where it is formatted
    (`shown`)."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(terminal_text(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def shown(value: Any) -> Any:
    """``value`` (a string, or lists and dicts of them) with every string escaped by
    `terminal_text` including newlines: for names placed inside a line of a report."""
    if isinstance(value, str):
        return terminal_text(value, newlines=False)
    if isinstance(value, dict):
        return {shown(k): shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(shown(v) for v in value)
    return value


@dataclass(frozen=True)
class Range:
    """The values a numeric option accepts: ``low..high`` (``(low, high]`` when
    ``low_open``).  `check_ranges` enforces it before a command starts; its `text` is
    appended to the option's help (`document_ranges`), so the two cannot drift."""

    low: float
    high: float
    low_open: bool = False

    def text(self) -> str:
        """The range as ``--help`` states it: ``1..100,000`` or ``above 0, at most 1``."""
        if self.low_open:
            return f"above {_number(self.low)}, at most {_number(self.high)}"
        return f"{_number(self.low)}..{_number(self.high)}"

    def rule(self) -> str:
        """What a value must be, for a message: ``in the range 1..100,000``, ``above 0
        and at most 1``."""
        if self.low_open:
            return f"above {_number(self.low)} and at most {_number(self.high)}"
        return f"in the range {self.text()}"

    def holds(self, value: float) -> bool:
        """Whether ``value`` is in the range (NaN never is)."""
        above = value > self.low if self.low_open else value >= self.low
        return bool(above and value <= self.high)


def _number(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e13:
        return f"{int(value):,}"
    return f"{value:g}"


def document_ranges(parser: argparse.ArgumentParser, ranges: dict[str, Range]) -> None:
    """Append each option's range to its ``--help`` text."""
    for action in parser._actions:
        if action.dest in ranges:
            action.help = f"{action.help or ''} (range: {ranges[action.dest].text()})".strip()


def check_ranges(args: argparse.Namespace, ranges: dict[str, Range]) -> None:
    """Raise `UsageError` naming the first option given outside its range."""
    for dest, allowed in ranges.items():
        value = getattr(args, dest, None)
        if value is not None and not allowed.holds(value):
            option = "--" + dest.replace("_", "-")
            shown = f"{value:g}" if isinstance(value, float) else str(value)
            if len(shown) > 24:
                shown = shown[:20] + "..."
            raise UsageError(f"{option} must be {allowed.rule()}, got {shown}")


def check_count(value: float, option: str, allowed: Range, text: str) -> float:
    """``value`` (parsed from ``text``) if ``allowed`` holds it, else a `UsageError`."""
    if not allowed.holds(value):
        raise UsageError(f"{option} must be {allowed.rule()}, got {text!r}")
    return value


def parse_sets(pairs: Sequence[str]) -> dict[str, str]:
    """``--set key=value`` pairs as a dict (``new``, ``workload new``, ``study sweep``);
    a key given twice is a mistake, not the last one wins."""
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise UsageError(f"--set takes key=value, got {pair!r}")
        if key in params:
            raise UsageError(f"--set {key} given twice ({key}={params[key]} and {key}={value}); "
                             "give each parameter once")
        params[key] = value
    return params
