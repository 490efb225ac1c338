"""The ``fabric-designer`` command.

With no arguments (or just a design file) it opens the GUI; otherwise the first
argument names a subcommand.  Everything the GUI computes is available here, headless.
Exit codes: 0 success, 1 a failed check or a bad file, 2 a usage error.  Errors are one
line on stderr, never a traceback (``--verbose`` shows the traceback of a bug).

Every run appends to the log file (`designer.logs`); ``--verbose`` also prints DEBUG
records on stderr, and an internal error names the log file that holds its traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from designer import __version__
from designer.cli_base import (
    ArgumentParser,
    Range,
    TerminalSafe,
    UsageError,
    check_ranges,
    did_you_mean,
    document_ranges,
    parse_command_line,
    parse_sets,
    shown,
)
from designer.cli_base import load_design as _load
from designer.cli_simulate import add_simulate_parser
from designer.cli_solver import (  # noqa: F401 - parse_size re-exported
    MAX_MEMORY_HELP,
    PARAMS_RANGE,
    SOLVE_RANGES,
    TRAIN_RANGES,
    cmd_solve,
    cmd_train,
    parse_size,
)
from designer.cli_workload import add_workload_parser
from designer.io.atomic import save_error_message
from designer.io.design_file import check_design_file
from designer.logs import FILE_ONLY, setup_logging
from designer.memory import tune_process
from designer.model.errors import DesignError
from designer.model.scenario import ALGORITHMS, COLLECTIVES, DTYPES, LAUNCH_MODES, ROUTING_MODES

PROG = "fabric-designer"
log = logging.getLogger(__name__)

#: ``export --scale``: PNG pixels per canvas unit (the PNG's size limit may lower the top).
EXPORT_RANGES = {"scale": Range(0.01, 1000)}


# ----------------------------------------------------------------- subcommands
def cmd_templates(args: argparse.Namespace) -> int:
    from designer.model.templates import TEMPLATES

    if args.json:
        out = {
            name: {
                "help": t.help,
                "params": {p.name: {"default": p.default, "help": p.help,
                                    "choices": list(p.choices) if p.choices else None}
                           for p in t.params},
            }
            for name, t in TEMPLATES.items()
        }
        print(json.dumps(out, indent=2))
        return 0
    for name, t in TEMPLATES.items():
        print(f"{name}: {t.help}")
        for p in t.params:
            choices = f" (one of {', '.join(map(str, p.choices))})" if p.choices else ""
            print(f"    {p.name}={p.default}  {p.help}{choices}")
    return 0


def _refuse_if_open_elsewhere(out: Path, force: bool) -> None:
    """Refuse to write ``out`` while a running Fabric Designer has it open (its lock file
    says so, `designer.io.file_lock`), unless ``force``: the window would otherwise save
    over this command's file, or this command over the window's.  A crashed session's
    stale lock does not count."""
    from designer.io.file_lock import design_lock_path, lock_owner

    owner = lock_owner(design_lock_path(out))
    if owner is None:
        return
    if force:
        print(f"{PROG}: note: {out} is open in {owner.describe()}; overwriting it (--force)",
              file=sys.stderr)
        return
    raise DesignError(f"{out} is open in {owner.describe()}; close it there, write "
                      "another file, or pass --force to overwrite it")


def cmd_new(args: argparse.Namespace) -> int:
    from designer.cli_progress import TerminalProgress
    from designer.io.fabric_json import save
    from designer.model.templates import (
        LARGE_TEMPLATE_GPUS,
        build_cost,
        build_template,
        template_gpus,
    )

    out = Path(args.output)
    if not out.name.lower().endswith(".json"):
        if not out.suffix:
            raise UsageError(f"-o {out}: new writes a design file; name it "
                             f"{out.name}.fabric.json")
        raise UsageError(f"-o {out}: new writes a design file (.fabric.json); for a diagram "
                         f"or a graph file, export the design: `{PROG} export "
                         f"DESIGN.fabric.json -o {out}`")
    params = parse_sets(args.set or [])
    try:
        gpus = template_gpus(args.template, **params)  # checks the size before building
    except DesignError as exc:
        raise UsageError(str(exc)) from None
    _refuse_if_open_elsewhere(out, args.force)  # (not a usage error: exit 1)
    try:
        if gpus > LARGE_TEMPLATE_GPUS:
            print(f"{PROG}: note: building a {gpus:,}-GPU design takes {build_cost(gpus)}",
                  file=sys.stderr, flush=True)
        topo = build_template(args.template, **params)
    except DesignError as exc:
        raise UsageError(str(exc)) from None
    with TerminalProgress(f"save {args.output}") as progress:
        save(topo, Path(args.output), progress=progress if progress.active else None)
    log.info("saved %s (template %s)", args.output, args.template)
    gpus = sum(1 for _ in topo.nodes("gpu"))
    print(f"wrote {args.output}: {len(topo)} nodes, {sum(1 for _ in topo.links())} links, "
          f"{gpus} GPUs")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from designer.workload.checks import validate_design

    findings = validate_design(_load(args.file))
    errors = [f for f in findings if f.severity == "error"]
    if args.json:
        print(json.dumps({"ok": not errors, "findings": [
            {"severity": f.severity, "code": f.code, "subject": f.subject, "message": f.message}
            for f in findings]}, indent=2))
    else:
        for f in findings:
            print(f"{f.severity}: [{f.code}] {f.message}")
        warnings = len(findings) - len(errors)
        verdict = "FAILED" if errors else "OK"
        print(f"{args.file}: {verdict} ({len(errors)} error(s), {warnings} warning(s))")
    return 1 if errors else 0


def cmd_info(args: argparse.Namespace) -> int:
    from designer.cli_progress import TerminalProgress
    from designer.model.report import format_info, info

    topology = _load(args.file)
    with TerminalProgress(f"summarise {args.file}") as progress:
        result = info(topology, progress=progress if progress.active else None)
    print(json.dumps(result, indent=2) if args.json else format_info(shown(result)))
    return 0


def cmd_bom(args: argparse.Namespace) -> int:
    from designer.model.bom import as_dict, bom, format_bom, to_csv

    result = bom(_load(args.file))
    if args.csv:
        sys.stdout.write(to_csv(result))
    elif args.json:
        print(json.dumps(as_dict(result), indent=2))
    else:
        print(format_bom(dataclasses.replace(result, name=shown(result.name))))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from designer.io.exports import format_for, suffixes

    out = Path(args.output)
    fmt = format_for(out)
    suffix = out.suffix.lower()
    if fmt is None:
        raise UsageError(f"{out}: unknown export format {suffix or '(none)'!r} "
                         f"(use {', '.join(suffixes())})")
    if args.scale is not None and fmt.suffix != ".png":
        raise UsageError("--scale applies to .png exports only")
    if (args.legend or args.title_block) and not fmt.needs_qt:
        raise UsageError("--legend and --title-block apply to .svg, .png and .pdf exports")
    if (args.page or args.fit) and fmt.suffix != ".pdf":
        raise UsageError("--page and --fit apply to .pdf exports only")
    if args.with_results and not fmt.results:
        raise UsageError("--with-results applies to .drawio and .graphml exports")
    if args.fit and not args.page:
        raise UsageError("--fit needs --page (a diagram-sized PDF is one page)")
    if args.scale is not None and not (0 < args.scale < float("inf")):
        raise UsageError(f"--scale must be a positive number, got {args.scale:g}")
    check_ranges(args, EXPORT_RANGES)
    _refuse_if_open_elsewhere(out, args.force)
    topo = _load(args.file)
    if fmt.needs_qt:
        # Headless by default: without a display Qt's default platform plugin would abort.
        # Must happen before PySide6 is first imported.
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from designer.gui.export import DEFAULT_PNG_SCALE, MAX_PNG_PIXELS, export_topology
        from designer.gui.export_sheet import Sheet

        sheet = Sheet(legend=args.legend, title_block=args.title_block, page=args.page,
                      fit=args.fit or "scale")
        used = export_topology(topo, out, scale=args.scale, sheet=sheet)
        if used is not None and used < DEFAULT_PNG_SCALE and args.scale is None:
            log.info("exported %s to %s at scale %g", args.file, out, used)
            print(f"wrote {out} at scale {used:g}, the largest that fits: at the default "
                  f"scale {DEFAULT_PNG_SCALE:g} the PNG would exceed the "
                  f"{MAX_PNG_PIXELS / 1e6:.0f}-megapixel limit")
            return 0
    else:
        from designer.io.graph_export import export

        export(topo, out, results=_link_results(topo) if args.with_results else None)
    log.info("exported %s to %s (%s)", args.file, out, fmt.name)
    print(f"wrote {out}{_cable_summary(topo, fmt.suffix)}")
    return 0


def _link_results(topo) -> dict[str, dict[str, float]]:
    """Per link id, the utilisation and load (busiest direction) of the design's saved
    scenario, solved as `solve` and the GUI solve it."""
    from designer.model.scenario import Scenario
    from designer.solver import (
        SolverError,
        rank_spec,
        resolve_ranks,
        solve_collective,
        take_snapshot,
    )

    saved = Scenario.from_dict(topo.settings["scenario"])
    snap = take_snapshot(topo)
    try:
        ranks = resolve_ranks(snap, rank_spec(topo, saved.ranks))
        res = solve_collective(snap, saved.collective, sizes=[saved.bytes],
                               algorithm=saved.algorithm, ranks=ranks, launch=saved.launch)
    except SolverError as exc:
        raise DesignError(f"--with-results: the saved scenario cannot be solved: {exc}") from None
    util, load = res.arc_util, res.arc_load_GBps
    return {lid: {"utilisation": float(max(util[2 * k], util[2 * k + 1])),
                  "load_GBps": float(max(load[2 * k], load[2 * k + 1]))}
            for k, lid in enumerate(snap.link_ids)}


def _cable_summary(topo, suffix: str) -> str:
    """For a cabling plan: the cables per technology, which `bom` counts too."""
    if suffix != ".cabling.csv":
        return ""
    from designer.io.exports.cabling import cable_counts

    counts = cable_counts(topo)
    listed = ", ".join(f"{n} {tech}" for tech, n in sorted(counts.items()))
    return f": {sum(counts.values())} cables ({listed or 'none'})"


def cmd_gui(file: str | None, verbose: bool = False) -> int:
    # The editor lands with issue 4; until then say so clearly instead of failing.
    try:
        from designer.gui.app import run  # type: ignore[import-not-found]
    except ImportError:
        print(f"{PROG}: the graphical editor is not built yet. Use the subcommands "
              f"(`{PROG} --help`), e.g. `{PROG} new example -o example.fabric.json`.",
              file=sys.stderr)
        return 1
    # The plain call stays plain: wrappers and tests stand in for `run` with `run(file)`.
    return run(file, verbose=True) if verbose else run(file)


# ----------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog=PROG,
        description="Sketch AI GPU clusters and see how the network behaves. "
                    "With no subcommand (or just a FILE) the GUI opens.",
    )
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show tracebacks of bugs and debug logging on stderr")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("templates", help="list templates, their parameters and defaults")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_templates)

    s = sub.add_parser("new", help="create a design from a template")
    s.add_argument("template", help="template name (see `templates`)")
    s.add_argument("--set", action="extend", nargs="+", metavar="KEY=VALUE",
                   help="template parameter; repeatable, several per --set")
    s.add_argument("-o", "--output", required=True, help="the .fabric.json file to write")
    s.add_argument("--force", action="store_true",
                   help="write even while a running Fabric Designer has the file open")
    s.set_defaults(func=cmd_new)

    s = sub.add_parser("validate", help="check design rules; exit 1 when a rule fails")
    s.add_argument("file")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("info", help="counts, NVLink domains, oversubscription, bisection")
    s.add_argument("file")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("bom", help="bill of materials: devices, cables, cost and power")
    s.add_argument("file")
    fmt = s.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true")
    fmt.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_bom)

    s = sub.add_parser("export", help="export the diagram (SVG, PNG, PDF, draw.io), the "
                                      "graph (GraphML, DOT, node-link JSON, .fabric.json), "
                                      "NetBox import files or a cabling plan")
    s.add_argument("file", help="the design: .fabric.json, or a .drawio/.graphml export or a "
                                "NetBox devices.csv (its cables.csv beside it) to import")
    s.add_argument("-o", "--output", required=True,
                   help="OUT.svg | .png | .pdf | .drawio | .graphml | .dot (NVIDIA Air) | "
                        ".ufm.dot | .netbox (a folder) | .cabling.csv | .astra-sim (a folder) | "
                        ".simai (a folder) | .ns3.txt | .chakra (a folder: a workload's traces) | "
                        ".json | .fabric.json")
    s.add_argument("--scale", type=float, metavar="S",
                   help="PNG pixels per canvas unit (default 2, or the largest scale "
                        "that fits when the design is too large for 2)")
    s.add_argument("--with-results", action="store_true",
                   help=".drawio/.graphml: solve the design's saved scenario and add each "
                        "link's utilisation and load (edges coloured by utilisation)")
    s.add_argument("--legend", action="store_true",
                   help="SVG/PNG/PDF: add a legend of the link technologies")
    s.add_argument("--title-block", action="store_true",
                   help="SVG/PNG/PDF: add a title block (design name, date, scenario)")
    s.add_argument("--page", choices=("A4", "A3", "Letter", "Tabloid"),
                   help="PDF: landscape pages of this size instead of one diagram-sized page")
    s.add_argument("--fit", choices=("scale", "tile"),
                   help="PDF with --page: scale the diagram to one page (default) or tile "
                        "it over pages at print scale")
    s.add_argument("--force", action="store_true",
                   help="write even while a running Fabric Designer has the file open")
    document_ranges(s, EXPORT_RANGES)
    s.set_defaults(func=cmd_export)

    s = sub.add_parser("solve", help="route a collective, compute max-min rates and timing",
                       description="Solve the scenario saved in the design file (the one "
                                   "the GUI shows); each option overrides one field of it.")
    s.add_argument("file")
    s.add_argument("--collective", choices=list(COLLECTIVES),
                   help="the collective (default: the file's scenario)")
    size = s.add_mutually_exclusive_group()
    size.add_argument("--bytes", help="message size: 1048576, 32KiB, 8GiB "
                                      "(default: the file's scenario; range: 1 B..16TiB)")
    size.add_argument("--sweep", metavar="LOW:HIGH", help="powers of two, e.g. 32KiB:16GiB "
                                                          "(range: 1 B..16TiB)")
    s.add_argument("--algorithm", choices=list(ALGORITHMS),
                   help="the algorithm (default: the file's scenario); all-reduce takes "
                        "any, all-to-all and send/recv only auto, the others auto or ring")
    s.add_argument("--ranks", help="all | N (first N GPUs, 2 up to the design's GPUs) | "
                                   "id,id,... | group:ID (default: the file's scenario)")
    s.add_argument("--routing", choices=list(ROUTING_MODES),
                   help="override the design's routing mode")
    s.add_argument("--launch", choices=list(LAUNCH_MODES),
                   help="kernel launches: eager or CUDA graphs (default: the file's scenario)")
    s.add_argument("--gpus-per-thread", type=int, default=1, metavar="G",
                   help="GPUs per process thread, like nccl-tests -g (eager launch cost)")
    s.add_argument("--max-memory", metavar="SIZE", help=MAX_MEMORY_HELP)
    s.add_argument("--json", action="store_true")
    document_ranges(s, SOLVE_RANGES)
    s.set_defaults(func=cmd_solve)

    s = sub.add_parser("train", help="training-step estimate: gradient all-reduce, overlap, "
                                     "jitter and stragglers")
    s.add_argument("file")
    s.add_argument("--params", help="model parameters: 70B, 405e9, 1.2T "
                                    "(default: the file's training workload; range: "
                                    f"{PARAMS_RANGE.text()})")
    s.add_argument("--dtype", choices=list(DTYPES),
                   help="gradient dtype (default: the file's training workload)")
    s.add_argument("--dp", type=int, help="data-parallel size, 2 up to the design's GPUs "
                                          "(default: the file's training workload, 0 "
                                          "there = every GPU)")
    s.add_argument("--compute-s", type=float, help="compute time per step, seconds "
                                                   "(default: the file's training workload)")
    s.add_argument("--flops", type=float, help="model FLOPs per GPU per step")
    s.add_argument("--tflops", type=float, help="GPU dense TFLOP/s (with --flops)")
    s.add_argument("--mfu", type=float, default=0.4, help="model FLOPs utilisation")
    s.add_argument("--overlap", type=float, help="fraction of comm hidden "
                                                 "(default: the file's training workload)")
    s.add_argument("--algorithm", default="auto", choices=list(ALGORITHMS))
    s.add_argument("--routing", choices=list(ROUTING_MODES))
    s.add_argument("--steps", type=int, default=1000, help="Monte Carlo steps")
    s.add_argument("--seed", type=int, default=0,
                   help="seed of the Monte Carlo run (the same seed gives the same figures)")
    s.add_argument("--json", action="store_true")
    document_ranges(s, TRAIN_RANGES)
    s.set_defaults(func=cmd_train)

    from designer.cli_study import add_study_parser

    add_study_parser(sub)
    add_workload_parser(sub)
    add_simulate_parser(sub)
    p.subcommands = dict(sub.choices)  # for `parse_command_line`
    return p


COMMANDS: tuple[str, ...] = (
    "templates", "new", "validate", "info", "bom", "export", "solve", "train", "study",
    "workload", "simulate")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    tune_process()  # the allocator and numpy, for solving (`designer.memory`)
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "-v" in argv or "--verbose" in argv
    # No subcommand: the GUI, optionally on a design file (``-v`` allowed around it).
    rest = [a for a in argv if a not in ("-v", "--verbose")]
    if not rest or (rest[0] not in COMMANDS and not rest[0].startswith("-")):
        if rest and not _names_a_design(rest[0]):
            hint = did_you_mean(rest[0], COMMANDS, quote=True) or f" (see {PROG} --help)"
            print(f"{PROG}: error: unknown command {rest[0]!r}{hint}", file=sys.stderr)
            return 2
        if len(rest) > 1:
            print(f"{PROG}: error: the GUI opens one FILE; unexpected {shlex.join(rest[1:])} "
                  f"(see {PROG} --help)", file=sys.stderr)
            return 2
        # Logging first, so a failure while the window is built lands in the log too.
        log_path = setup_logging(verbose=verbose, gui=True)
        file = rest[0] if rest else None
        return _run(lambda _args: cmd_gui(file, verbose=verbose), argparse.Namespace(),
                    verbose, log_path)
    parser = build_parser()
    try:
        args = parse_command_line(parser, argv)
    except SystemExit as exc:  # a usage error (2), or --help / --version (0)
        return exc.code if isinstance(exc.code, int) else 2
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    log_path = setup_logging(verbose=verbose)
    log.info("run: %s %s", PROG, shlex.join(argv))
    t0 = time.perf_counter()
    code = _run(func, args, verbose, log_path)
    log.info("exit %d after %.2f s", code, time.perf_counter() - t0)
    return code


def _names_a_design(word: str) -> bool:
    """Whether a lone word the GUI would open is meant as a file (an existing path, or a
    name with a folder or a .json suffix) rather than a mistyped command."""
    return (Path(word).exists() or word.lower().endswith(".json")
            or any(sep in word for sep in ("/", os.sep)))


def _run(func: Callable[[argparse.Namespace], int], args: argparse.Namespace, verbose: bool,
         log_path: Path | None) -> int:
    """Run one subcommand, turning every failure into an exit code and one line; what
    it prints goes through `TerminalSafe` (a design's names are untrusted text)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalSafe(out), TerminalSafe(err)
    try:
        return _run_guarded(func, args, verbose, log_path)
    finally:
        if isinstance(sys.stdout, TerminalSafe):  # (a broken pipe swaps in devnull)
            sys.stdout = out
        if isinstance(sys.stderr, TerminalSafe):
            sys.stderr = err


def _run_guarded(func: Callable[[argparse.Namespace], int], args: argparse.Namespace,
                 verbose: bool, log_path: Path | None) -> int:
    try:
        if isinstance(getattr(args, "file", None), str):
            # The design file's size and kind, before the command imports what it needs:
            # a file over the limit is refused at once (`designer.io.design_file`).
            check_design_file(args.file)
        return func(args)
    except UsageError as exc:
        log.info("usage error: %s", exc)
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except DesignError as exc:
        message = save_error_message(exc)  # a failed save says why in plain words
        log.info("error: %s", message)
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        log.info("interrupted")
        return 130
    except BrokenPipeError:  # output piped into `head`: not an error
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        return 0
    except Exception as exc:  # a bug: one line unless --verbose
        # The traceback goes to the log file; the terminal gets it from `raise` below.
        log.error("internal error", exc_info=True, extra=FILE_ONLY)
        if verbose:
            raise
        where = f"the traceback is in {log_path}" if log_path else "run with --verbose"
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc} ({where})",
              file=sys.stderr)
        return 1
