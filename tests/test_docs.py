"""The documentation stays true to the code: the CLI reference is the parser's, its
examples still print what they show, the shortcut table is the action table's, and every
relative link and image in ``docs/*.md`` and ``README.md`` points at a file (and a
heading) that exists."""

from __future__ import annotations

import importlib.util
import math
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]


def _tool(name: str):
    """A module of ``tools/`` (a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"tools_{name}", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ CLI reference
def test_cli_reference_is_generated_from_the_parser():
    from designer.cli import build_parser

    cli_reference = _tool("cli_reference")
    committed = (DOCS / "cli.md").read_text(encoding="utf-8")
    reference = committed.split(cli_reference.EXAMPLES_MARKER, 1)[0]
    expected = cli_reference.reference_markdown(build_parser()) + "\n"
    assert reference == expected, (
        "docs/cli.md does not match designer.cli.build_parser(); regenerate it with "
        f"`{cli_reference.REGENERATE}` and commit the result")


def test_cli_reference_documents_every_command_and_option():
    from designer.cli import COMMANDS, build_parser

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert set(sub.choices) == set(COMMANDS)
    for name, command in sub.choices.items():
        assert f"### `{name}`" in text
        for action in command._actions:
            for flag in action.option_strings:
                assert flag in text, f"{name} {flag} missing from docs/cli.md"


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _same_output(shown: str, printed: str) -> str | None:
    """Why ``printed`` differs from ``shown`` (None when it does not): words must match;
    numbers may differ by 1 % (another CPU may round a last digit otherwise); wall-clock
    ``timing (ms):`` lines are not compared."""
    a = [ln for ln in shown.splitlines() if not ln.startswith("timing (ms):")]
    b = [ln for ln in printed.splitlines() if not ln.startswith("timing (ms):")]
    if len(a) != len(b):
        return f"{len(b)} lines printed, {len(a)} shown"
    for x, y in zip(a, b, strict=True):
        if _NUMBER.sub("#", x) != _NUMBER.sub("#", y):
            return f"shown {x!r}, printed {y!r}"
        for u, v in zip(_NUMBER.findall(x), _NUMBER.findall(y), strict=True):
            fu, fv = float(u.replace(",", "")), float(v.replace(",", ""))
            if not math.isclose(fu, fv, rel_tol=1e-2, abs_tol=0.011):
                return f"shown {x!r}, printed {y!r}"
    return None


def test_cli_examples_still_print_what_the_reference_shows(tmp_path, monkeypatch):
    cli_reference = _tool("cli_reference")
    runs = cli_reference.parse_examples((DOCS / "cli.md").read_text(encoding="utf-8"))
    assert len(runs) >= 8, "the examples of docs/cli.md are missing"
    monkeypatch.chdir(tmp_path)
    for command, shown, code in runs:
        printed, got = cli_reference.run_example(command)
        why = _same_output(shown, printed.rstrip("\n"))
        assert why is None and got == code, (
            f"`fabric-designer {command}` no longer prints what docs/cli.md shows ({why}; "
            f"exit code {got}, shown {code}); regenerate with "
            f"`{cli_reference.REGENERATE}`")


def test_output_comparison_can_fail():
    assert _same_output("busbw 356.87 GB/s", "busbw 356.90 GB/s") is None
    assert _same_output("busbw 356.87 GB/s", "busbw 300.00 GB/s") is not None
    assert _same_output("ring/Simple", "tree/Simple") is not None
    assert _same_output("a\ntiming (ms): load 1.0", "a\ntiming (ms): load 9.9") is None


# ------------------------------------------------------------------ shortcuts
def test_shortcut_table_matches_the_action_table(qapp):
    shortcuts = _tool("shortcuts")
    table = shortcuts.table_in((DOCS / "user-guide.md").read_text(encoding="utf-8"))
    assert table is not None, "docs/user-guide.md lost its shortcut table markers"
    assert table == shortcuts.markdown_table(), (
        "the shortcut table in docs/user-guide.md does not match designer/gui/actions.py; "
        f"regenerate it with `{shortcuts.REGENERATE}`")


def test_shortcut_table_lists_every_bound_action(qapp):
    from designer.gui.actions import ACTIONS

    shortcuts = _tool("shortcuts")
    names = [name for name, _keys, _tip in shortcuts.shortcut_rows()]
    bound = [text.replace("&", "").rstrip("…") for text, key, _ in ACTIONS.values() if key]
    assert names == bound
    rows = {name: keys for name, keys, _tip in shortcuts.shortcut_rows()}
    assert rows["Link Tool"] == "L" and "Ctrl+=" in rows["Zoom In"]


def test_shortcut_table_binds_each_key_once_and_redo_to_both_keys(qapp):
    # The X11 window itself is checked in tests/gui/test_shortcuts.py; this is the page.
    shortcuts = _tool("shortcuts")
    table = shortcuts.table_in((DOCS / "user-guide.md").read_text(encoding="utf-8"))
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    keys = [k.strip("`") for row in rows for k in row[1].split(", ")]
    assert len(keys) == len(set(keys)), "a key is listed for two commands"
    by_name = {row[0].lstrip("| "): row[1] for row in rows}
    assert by_name["Redo"] == "`Ctrl+Y`, `Ctrl+Shift+Z`"
    assert by_name["Duplicate"] == "`Ctrl+D`" and by_name["Delete"] == "`Del`"


# ------------------------------------------------------------------ links and images
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HTML = re.compile(r"""(?:src|href)=["']([^"']+)["']""")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes.

    >>> slug("6. A/B comparison"), slug("### `solve`".lstrip("# "))
    ('6-ab-comparison', 'solve')
    """
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The heading anchors of a markdown file (duplicates numbered as GitHub does)."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        base = slug(line.lstrip("#"))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def _targets(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # code blocks hold no links
    return _LINK.findall(text) + _HTML.findall(text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_and_images_point_at_existing_files(page):
    broken = []
    for target in _targets(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target} (no file {os.path.relpath(dest, ROOT)})")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no heading #{anchor} in {dest.name})")
    assert not broken, f"{page.relative_to(ROOT)}: broken links: {', '.join(broken)}"


def test_the_docs_are_linked_and_their_pictures_exist():
    guide = (DOCS / "user-guide.md").read_text(encoding="utf-8")
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", guide)
    assert len(pictures) >= 12
    for name in pictures:
        data = (DOCS / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name
    for page in ("model.md", "cli.md", "file-format.md"):
        assert f"]({page}" in guide, f"the user guide does not link {page}"


def test_link_check_can_fail(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [bad](missing.md) ![pic](nope.png) [x](#none)\n"
                    "```\n[in code](ignored.md)\n```\n", encoding="utf-8")
    assert anchors(page) == {"title"}
    targets = _targets(page)
    assert targets == ["#title", "missing.md", "nope.png", "#none"]


# ------------------------------------------------------------------ claims about commands
def test_the_guide_does_not_deny_commands_the_menus_have():
    """Arrange > Group makes groups by hand and File > Design Properties names the design:
    the guide says so, and no longer that groups only come from templates."""
    from designer.gui.actions import ACTIONS

    prose = " ".join((DOCS / "user-guide.md").read_text(encoding="utf-8").split())
    assert {"group", "design_properties"} <= set(ACTIONS)
    assert "no command to create a new group" not in prose
    assert "**Arrange > Group**" in prose
    assert "**File > Design Properties**" in prose
