"""A control character an agent wrote is shown in a table, never obeyed by the terminal."""

from __future__ import annotations

import io
import json

from engram.cli.render import render

RETITLE = "ev\x1b]0;owned\x07il"


def test_a_table_shows_control_characters_escaped_and_json_keeps_the_text() -> None:
    records = [{"actor": RETITLE, "what": "\x1b[31mred\x9b2J", "n": 1}]
    table = io.StringIO()
    render(records, "table", table)
    shown = table.getvalue()
    assert "\x1b" not in shown
    assert "\x07" not in shown
    assert "\x9b" not in shown
    assert "ev\\x1b]0;owned\\x07il" in shown
    assert "\\x1b[31mred\\x9b2J" in shown
    out = io.StringIO()
    render(records, "jsonl", out)
    assert json.loads(out.getvalue())["actor"] == RETITLE  # data formats carry it as it is
