"""Property: whatever a user types, the command line answers with exit 0, 1 or 2 and
never an internal error, a traceback or an unbounded allocation.

For every subcommand, hypothesis draws argument lists from that subcommand's own
parser (its options, in any order, with values drawn from numbers at and beyond every
range, sizes with units, other scripts' digits, empty and random text).  The commands
run in this process on a small design; templates are capped at a few thousand GPUs here
(the cap itself is `test_cli_bounds`'s business), so each example stays quick.
"""

from __future__ import annotations

import contextlib
import io
import resource
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from designer.cli import build_parser, main
from tests.cli_support import new_design

#: Peak memory this test may add to the process (ru_maxrss is in KiB on Linux).
RSS_BUDGET_KIB = 1_500_000

NUMBER_VALUES = [
    "0",
    "1",
    "2",
    "-1",
    "7",
    "1000",
    "100000",
    "100000000",
    "99999999999999999999",
    "1e400",
    "1e300",
    "1e19",
    "1e30",
    "-1e400",
    "1e-300",
    "0.5",
    "nan",
    "inf",
    "-inf",
    "1TiB",
    "16TiB",
    "100TiB",
    "99999999999TiB",
    "32KiB",
    "8GiB",
    "1.5",
    "1e15",
    "70B",
    "1.2T",
    "1:1e300",
    "1e400:1e401",
    "32KiB:16GiB",
    "1:16TiB",
    "2:1",
    "²",
    "٣",
    "１２",
    "",
    " ",
    "all",
    "group:x",
    "x,y",
    "n01-gpu0,n01-gpu1",
]
NUMBERS = st.sampled_from(NUMBER_VALUES)
TEXT = st.text(max_size=12)
VALUES = st.one_of(NUMBERS, NUMBERS, TEXT)
SET_PAIRS = st.builds(
    lambda k, v: f"{k}={v}",
    st.sampled_from(
        [
            "gpus",
            "x",
            "y",
            "z",
            "k",
            "nodes",
            "sus",
            "leaves",
            "spines",
            "hosts_per_leaf",
            "uplinks",
            "gpu",
            "nic_gbps",
            "oversubscription",
            "leaf_radix",
            "storage",
            "bogus",
        ]
    ),
    VALUES,
)


def _options(command: str) -> list[tuple[str, bool]]:
    """(flag, takes a value) for each option of ``command``, --help left out."""
    parser = build_parser()
    sub = parser.subcommands[command]
    out = []
    for action in sub._actions:
        flags = [f for f in action.option_strings if f.startswith("--")]
        if flags and flags[0] not in ("--help", "--output", "--set"):
            out.append((flags[0], action.nargs != 0))
    return out


def _argv(command: str, design: str, out_dir: str):
    options = _options(command)

    def one(pair):
        flag, takes = pair
        if not takes:
            return st.just([flag])
        choices = None
        for action in build_parser().subcommands[command]._actions:
            if flag in action.option_strings and action.choices:
                choices = list(action.choices)
        values = st.one_of(st.sampled_from(choices), VALUES) if choices else VALUES
        return values.map(lambda v, f=flag: [f, v])

    if options:
        opts = st.lists(st.sampled_from(options).flatmap(one), max_size=4).map(
            lambda parts: [x for p in parts for x in p]
        )
    else:
        opts = st.just([])
    head: list = [command]
    if command == "new":
        template = st.sampled_from(
            [
                "hgx",
                "torus3d",
                "leaf-spine",
                "fat-tree",
                "nvl72",
                "rail-cluster",
                "superpod",
                "nope",
            ]
        )
        sets = st.lists(SET_PAIRS, max_size=3).map(lambda s: ["--set", *s] if s else [])
        suffix = st.sampled_from([".fabric.json", ".json", ".svg", ""])
        return st.tuples(template, sets, suffix, opts).map(
            lambda t: [command, t[0], *t[1], "-o", f"{out_dir}/n{t[2]}", *t[3]]
        )
    if command == "export":
        suffix = st.sampled_from(
            [".svg", ".graphml", ".json", ".fabric.json", ".pdf", ".png", ".txt"]
        )
        return st.tuples(suffix, opts).map(
            lambda t: [command, design, "-o", f"{out_dir}/e{t[0]}", *t[1]]
        )
    if command == "templates":
        return opts.map(lambda o: head + o)
    return opts.map(lambda o: [command, design, *o])


@pytest.fixture(scope="module")
def design(tmp_path_factory):
    return new_design(tmp_path_factory.mktemp("fuzz"))


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


COMMANDS = {
    "templates": 10,
    "new": 40,
    "validate": 10,
    "info": 10,
    "bom": 10,
    "export": 15,
    "solve": 40,
    "train": 40,
}


@pytest.mark.skipif(sys.platform == "win32", reason="ru_maxrss")
@pytest.mark.parametrize("command", list(COMMANDS))
def test_any_argv_ends_in_an_exit_code_not_an_internal_error(
    command, design, tmp_path_factory, monkeypatch
):
    monkeypatch.setattr("designer.model.templates.MAX_TEMPLATE_GPUS", 2048)
    out_dir = tmp_path_factory.mktemp(f"out-{command}")
    start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    @settings(
        max_examples=COMMANDS[command],
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(_argv(command, str(design), str(out_dir)))
    def check(argv):
        code, _, err = _run(argv)
        assert code in (0, 1, 2), (argv, code, err)
        assert "internal error" not in err and "Traceback" not in err, (argv, err)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start
        assert grown < RSS_BUDGET_KIB, (argv, grown)

    check()


def _single_option_argvs(command: str, design: str, out_dir: str) -> list[list[str]]:
    """Every option of ``command`` alone with every value of `NUMBERS`."""
    head = {
        "new": [command, "torus3d", "-o", f"{out_dir}/n.fabric.json"],
        "export": [command, design, "-o", f"{out_dir}/e.png"],
        "templates": [command],
    }.get(command, [command, design])
    values = NUMBER_VALUES
    out = []
    for flag, takes in _options(command):
        out += [[*head, flag, v] for v in values] if takes else [[*head, flag]]
    if command == "new":
        out += [[*head, "--set", f"{k}={v}"] for k in ("x", "gpus", "bogus") for v in values]
    return out


@pytest.mark.skipif(sys.platform == "win32", reason="ru_maxrss")
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_alone_with_every_value(command, design, tmp_path_factory, monkeypatch):
    monkeypatch.setattr("designer.model.templates.MAX_TEMPLATE_GPUS", 2048)
    out_dir = tmp_path_factory.mktemp(f"one-{command}")
    start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for argv in _single_option_argvs(command, str(design), str(out_dir)):
        code, _, err = _run(argv)
        assert code in (0, 1, 2), (argv, code, err)
        assert "internal error" not in err and "Traceback" not in err, (argv, err)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start
        assert grown < RSS_BUDGET_KIB, (argv, grown)
