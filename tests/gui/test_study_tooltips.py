"""The Resilience panel's error tooltips: an element the study did not solve itself
(its class's representative stood for it) must not show the representative's error as
its own, which names the representative's GPU, not the one this element cuts off."""

from __future__ import annotations

from designer.model.templates import build_template


def test_a_class_members_tooltip_names_its_representative(window, qtbot):
    window.document.replace(build_template("leaf-spine"))
    panel = window.studies.panel
    with qtbot.waitSignal(panel.runner.result_ready, timeout=60_000) as got:
        assert panel.run("all")
    report = got.args[0]
    by_id = {e.id: e for e in report.elements}
    ids = panel.element_ids()
    tips = {ident: panel.table.item(r, 0).toolTip() for r, ident in enumerate(ids)}
    stood_for = [e for e in report.elements if e.error and not e.solved]
    assert stood_for, "the design has class members that cut ranks off"
    for e in report.elements:
        if not e.error:
            continue
        if e.solved:
            assert tips[e.id] == e.error
            continue
        # Its class's solved members: the one whose error it carries is named with it.
        solved = [o for o in report.elements if o.cls == e.cls and o.solved and o.error]
        named = [o for o in solved if o.id in tips[e.id]]
        assert named, tips[e.id]
        assert named[0].error in tips[e.id]
        assert not tips[e.id].startswith(named[0].error)  # not presented as its own
        assert by_id[named[0].id].error == named[0].error
