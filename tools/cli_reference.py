"""Write ``docs/cli.md``, the command-line reference, from the parser itself:
``python tools/cli_reference.py [OUT]``.

The reference part (usage, every subcommand, every option with its help text, default
and choices) is rendered from ``designer.cli.build_parser()`` by walking its actions, not
from argparse's ``--help`` text, so it reads the same on every Python version and
terminal width.  ``tests/test_docs.py`` renders it again and fails when the committed
file differs, so it cannot drift from the code.

The examples part runs a few real commands in a temporary directory, in-process through
``designer.cli.main``, and pastes what they printed; the test runs them again and
compares (numbers within a small tolerance, wall-clock timings ignored).

Example
-------
>>> from designer.cli import build_parser
>>> "### `solve`" in reference_markdown(build_parser())
True
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"
OUT = DOCS / "cli.md"
EXAMPLES_MARKER = "## Examples"
REGENERATE = "python tools/cli_reference.py"

#: Help for arguments the parser leaves without one (shared meanings across commands).
FALLBACK_HELP = {
    "file": "the design, a `*.fabric.json` file",
    "json": "machine-readable JSON output",
    "csv": "CSV output",
    "seed": "seed of the Monte Carlo run (the same seed gives the same figures)",
}

#: (commands, note) run in order in one temporary directory; each command's output is
#: pasted under it.  Kept short: a few lines each.
EXAMPLES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("new superpod --set gpu=B200 sus=4 -o sp.fabric.json",
      "info sp.fabric.json",
      "validate sp.fabric.json"),
     "A 1,024-GPU DGX B200 SuperPOD from its template: what it contains, and the rules "
     "check."),
    (("new example -o example.fabric.json",
      "solve example.fabric.json --sweep 64MiB:1GiB"),
     "The example design's all-reduce, bus bandwidth against size, as nccl-tests prints "
     "it; the last line is wall-clock time and varies from run to run."),
    (("solve example.fabric.json --collective alltoall --bytes 1GiB --routing ecmp",),
     "The same fabric's all-to-all with ECMP routing instead of the design's adaptive "
     "routing (the `--routing` option overrides the design's setting)."),
    (("train example.fabric.json --params 70e9 --compute-s 1",),
     "A 70B-parameter data-parallel step over the 32 GPUs: the gradient all-reduce, "
     "exposed communication, and the Monte Carlo jitter and straggler figures (seeded)."),
    (("export example.fabric.json -o example.svg",
      "new superpod --set gpu=A100 -o bad.fabric.json"),
     "A diagram export, and a usage error: one line on stderr, exit code 2."),
)


# ------------------------------------------------------------------ the reference
def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
                None)


def _visible(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions
            if a.help != argparse.SUPPRESS and not isinstance(a, argparse._SubParsersAction)]


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None and not action.option_strings:
        return "{" + ",".join(map(str, action.choices)) + "}"
    return action.dest.upper()


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _usage_part(action: argparse.Action) -> str:
    if not action.option_strings:
        return _metavar(action)
    flag = max(action.option_strings, key=len)  # the long form reads best
    if not _takes_value(action):
        return flag
    value = _metavar(action) if action.choices is None or action.metavar else \
        action.dest.upper()
    return f"{flag} {value} [{value} ...]" if action.nargs in ("+", "*") else f"{flag} {value}"


def usage_line(parser: argparse.ArgumentParser, prog: str) -> str:
    """``prog`` followed by its arguments: required ones bare, optional ones bracketed,
    mutually exclusive ones joined with ``|`` (``-h`` left out: every command has it)."""
    groups = {id(a): g for g in parser._mutually_exclusive_groups for a in g._group_actions}
    parts, done = [], set()
    for action in _visible(parser):
        if isinstance(action, argparse._HelpAction) or id(action) in done:
            continue
        group = groups.get(id(action))
        if group is not None:
            members = [a for a in group._group_actions if a.help != argparse.SUPPRESS]
            done.update(id(a) for a in members)
            text = " | ".join(_usage_part(a) for a in members)
            parts.append(f"({text})" if group.required else f"[{text}]")
            continue
        text = _usage_part(action)
        parts.append(text if (action.required or not action.option_strings) else f"[{text}]")
    return " ".join([prog, *parts])


def _sentence(text: str) -> str:
    """``text`` with a capital first letter and a full stop (the rest untouched)."""
    return f"{text[:1].upper()}{text[1:]}." if text else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(action: argparse.Action) -> str:
    d = action.default
    if d is None or d is False or d == argparse.SUPPRESS or not _takes_value(action):
        return ""
    return f"`{d}`"


def _help(action: argparse.Action) -> str:
    text = action.help or FALLBACK_HELP.get(action.dest, "")
    if action.choices is not None:
        text = f"{text}; one of " if text else "one of "
        text += ", ".join(f"`{c}`" for c in action.choices)
    if action.required and action.option_strings:
        text = f"required; {text}" if text else "required"
    return text


def options_table(parser: argparse.ArgumentParser) -> list[str]:
    """A markdown table of ``parser``'s arguments: argument, default, meaning."""
    rows = ["| argument | default | meaning |", "|---|---|---|"]
    for action in _visible(parser):
        if action.option_strings:
            names = ", ".join(action.option_strings)
            value = f" {_metavar(action)}" if _takes_value(action) and action.choices is None \
                else (f" {action.dest.upper()}" if _takes_value(action) else "")
            name = f"`{names}{value}`"
        else:
            name = f"`{_metavar(action)}`"
        rows.append(f"| {name} | {_default(action)} | {_cell(_help(action))} |")
    return rows


def reference_markdown(parser: argparse.ArgumentParser) -> str:
    """The reference part of ``docs/cli.md``: everything before the examples."""
    prog = parser.prog
    sub = _subparsers(parser)
    commands = list(sub.choices) if sub is not None else []
    helps = {a.dest: a.help for a in sub._choices_actions} if sub is not None else {}
    lines = [
        "# Command-line reference",
        "",
        f"<!-- Generated by tools/cli_reference.py from designer.cli.build_parser(); do not "
        f"edit by hand. Regenerate with: {REGENERATE} -->",
        "",
        f"{parser.description}",
        "",
        "```",
        f"{prog} [FILE]",
        usage_line(parser, prog) + " COMMAND [ARGUMENTS]",
        "```",
        "",
        f"With no arguments `{prog}` opens the editor on the built-in example design; with "
        "a design file it opens that file (see the [user guide](user-guide.md)). Every "
        "other use names one of the commands below. Each command also takes `-h`/`--help`.",
        "",
        "Errors are one line on stderr. Exit codes: 0 success, 1 a failed check (`validate`) "
        "or a bad file, 2 a usage error. Sizes are bytes, or a number with a unit: "
        "`KiB`/`MiB`/`GiB`/`TiB` (powers of 1024), `KB`/`MB`/`GB`/`TB` (powers of 1000); "
        "bandwidths are GB/s (10^9 bytes/s).",
        "",
        "The formats `export` writes and the files it (and File > Open) imports, with the "
        "upstream files each follows, are in [export formats](export-formats.md).",
        "",
        "Options of the command itself:",
        "",
        *options_table(parser),
        "",
        "Commands:",
        "",
        *[f"- [`{name}`](#{name}): {helps.get(name, '')}" for name in commands],
        "",
    ]
    for name in commands:
        cmd = sub.choices[name]
        lines += [
            f"### `{name}`",
            "",
            f"{_sentence(helps.get(name) or '')}",
            "",
            "```",
            usage_line(cmd, cmd.prog),
            "```",
            "",
            *options_table(cmd),
            "",
        ]
        nested = _subparsers(cmd)
        nested_helps = ({a.dest: a.help for a in nested._choices_actions}
                        if nested is not None else {})
        for inner in nested.choices if nested is not None else ():
            leaf = nested.choices[inner]
            lines += [
                f"#### `{name} {inner}`",
                "",
                f"{_sentence(nested_helps.get(inner) or '')}",
                "",
                "```",
                usage_line(leaf, leaf.prog),
                "```",
                "",
                *options_table(leaf),
                "",
            ]
    return "\n".join(lines)


# ------------------------------------------------------------------ the examples
def run_example(command: str) -> tuple[str, int]:
    """Run ``fabric-designer COMMAND`` in-process in the current directory: what it
    printed (stdout, then stderr) and its exit code."""
    from designer.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(command.split())
        except SystemExit as exc:  # argparse's own usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return out.getvalue() + err.getvalue(), code


@contextlib.contextmanager
def _in_temporary_directory():
    """Run in a throw-away directory, with the commands' log file there too (every
    command appends to a log file, see `designer.logs`)."""
    old, old_log = Path.cwd(), os.environ.get("FABRIC_DESIGNER_LOG_DIR")
    with tempfile.TemporaryDirectory(prefix="fabric-cli-") as tmp:
        os.chdir(tmp)
        os.environ["FABRIC_DESIGNER_LOG_DIR"] = str(Path(tmp) / "log")
        try:
            yield Path(tmp)
        finally:
            os.chdir(old)
            if old_log is None:
                os.environ.pop("FABRIC_DESIGNER_LOG_DIR", None)
            else:
                os.environ["FABRIC_DESIGNER_LOG_DIR"] = old_log


def examples_markdown() -> str:
    """The examples part of ``docs/cli.md``, from running `EXAMPLES`."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # the export example renders
    lines = [EXAMPLES_MARKER, "",
             "Real runs, pasted as printed (`$` lines are the commands; a non-zero exit code "
             "is shown after the output). They are run again by `tests/test_docs.py`.", ""]
    with _in_temporary_directory():
        for commands, note in EXAMPLES:
            lines += [note, "", "```console"]
            for command in commands:
                output, code = run_example(command)
                lines.append(f"$ fabric-designer {command}")
                lines += output.rstrip("\n").splitlines()
                if code:
                    lines.append(f"[exit code {code}]")
            lines += ["```", ""]
    return "\n".join(lines)


def parse_examples(text: str) -> list[tuple[str, str, int]]:
    """``(command, output, exit code)`` of each ``$`` line in the examples part."""
    part = text.split(EXAMPLES_MARKER, 1)[1] if EXAMPLES_MARKER in text else ""
    runs: list[tuple[str, list[str]]] = []
    inside = False
    for line in part.splitlines():
        if line.startswith("```"):
            inside = line.startswith("```console")
        elif inside and line.startswith("$ "):
            runs.append((line[2:].removeprefix("fabric-designer "), []))
        elif inside and runs:
            runs[-1][1].append(line)
    out = []
    for command, body in runs:
        code = 0
        if body and body[-1].startswith("[exit code "):
            code = int(body.pop()[len("[exit code "):-1])
        out.append((command, "\n".join(body), code))
    return out


def render() -> str:
    """The whole of ``docs/cli.md``."""
    from designer.cli import build_parser

    return reference_markdown(build_parser()) + "\n" + examples_markdown()


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else OUT
    out.write_text(render(), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
