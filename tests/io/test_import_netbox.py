"""NetBox devices + cables CSVs, as the exporter writes them, import into the same
design: nodes (names, kinds, models, positions), links (ends, technology, count) and
failures; unknown models and cables to unknown devices are one-line errors."""

from __future__ import annotations

import csv
import io

import pytest

from designer.cli import main
from designer.io.exports import export
from designer.io.exports.common import unique_names
from designer.io.fabric_json import FileFormatError
from designer.io.imports import is_import, read_design
from designer.model.templates import build_template


def _nodes(t, names):
    return sorted(
        (names[n.id], n.kind, n.model, round(n.x, 6), round(n.y, 6), n.failed) for n in t.nodes()
    )


def _links(t, names):
    return sorted(
        (*sorted((names[lk.a], names[lk.b])), lk.tech, lk.count, lk.failed) for lk in t.links()
    )


@pytest.mark.parametrize("template, options", [("hgx", {}), ("superpod", {"sus": 2})])
def test_netbox_round_trip(tmp_path, template, options):
    t = build_template(template, **options)
    some = next(iter(t.links()))
    t.update_link(some.id, failed=True)
    export(t, tmp_path / "dc.netbox")
    back = read_design(tmp_path / "dc.netbox")
    names = unique_names(t)
    own = {n.id: n.name for n in back.nodes()}
    assert _nodes(back, own) == _nodes(t, names)
    assert _links(back, own) == _links(t, names)
    # The devices CSV alone names the pair too.
    again = read_design(tmp_path / "dc.netbox" / "devices.csv")
    assert _links(again, {n.id: n.name for n in again.nodes()}) == _links(t, names)


def _rewrite(path, column, old, new):
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    for row in rows:
        if row[column] == old:
            row[column] = new
            break
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    path.write_text(out.getvalue())


def test_netbox_import_errors_are_one_line(tmp_path):
    t = build_template("rail-cluster")
    export(t, tmp_path / "a.netbox")
    devices = tmp_path / "a.netbox" / "devices.csv"
    first = next(csv.DictReader(io.StringIO(devices.read_text())))
    _rewrite(devices, "device_type", first["device_type"], "H999")
    with pytest.raises(FileFormatError, match=r"devices\.csv: row 2: .*unknown model 'H999'") as e:
        read_design(tmp_path / "a.netbox")
    assert "\n" not in str(e.value)

    export(t, tmp_path / "b.netbox")
    cables = tmp_path / "b.netbox" / "cables.csv"
    name = next(csv.DictReader(io.StringIO(cables.read_text())))["side_a_device"]
    _rewrite(cables, "side_a_device", name, "ghost-7")
    with pytest.raises(FileFormatError, match=r"side_a_device 'ghost-7' is not in devices\.csv"):
        read_design(tmp_path / "b.netbox")


def test_cli_and_open_take_netbox(tmp_path, capsys):
    export(build_template("hgx"), tmp_path / "h.netbox")
    assert is_import(tmp_path / "h.netbox") and is_import("site-devices.csv")
    out = tmp_path / "h.fabric.json"
    assert main(["export", str(tmp_path / "h.netbox" / "devices.csv"), "-o", str(out)]) == 0
    assert main(["info", str(out)]) == 0
    assert "8" in capsys.readouterr().out
