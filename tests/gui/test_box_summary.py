"""A collapsed box's member summary: whole on one line, else on two at a smaller size,
else elided (`designer.gui.canvas.groups.summary_lines`)."""

from __future__ import annotations

from designer.gui.canvas.groups import BOX_FONT, MIN_SUMMARY_PX, _sized, summary_lines

SUMMARY = "1024 GPU · 1024 NIC · 512 NVSwitch · 16 leaf"


def _width(text: str, px: int) -> float:
    return _sized(BOX_FONT, px)[1].horizontalAdvance(text)


def test_a_summary_that_fits_is_one_line_at_its_size(qapp):
    assert summary_lines(SUMMARY, _width(SUMMARY, 12) + 1, 20, 12) == (12, [SUMMARY])


def test_a_summary_too_wide_for_one_line_is_two_whole_lines(qapp):
    width = _width(SUMMARY, 12) * 0.6
    px, lines = summary_lines(SUMMARY, width, 40, 12)
    assert len(lines) == 2 and " · ".join(lines) == SUMMARY
    assert MIN_SUMMARY_PX <= px <= 12
    assert all(_width(line, px) <= width for line in lines)
    assert 2 * _sized(BOX_FONT, px)[1].height() <= 40


def test_no_room_for_two_lines_elides_one(qapp):
    width = _width(SUMMARY, 12) * 0.6
    px, (line,) = summary_lines(SUMMARY, width, 10, 12)
    assert px == 12 and line.endswith("…") and _width(line, 12) <= width
