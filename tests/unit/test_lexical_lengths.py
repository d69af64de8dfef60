"""Rescoring reads each row's length as FTS5 recorded it (its docsize varint): a length under
128 is the varint's one byte, read without the decoder (ADR 0101); longer ones decoded."""

from __future__ import annotations

import sqlite3

from engram.projections.lexical.read import _lengths


def test_every_length_is_the_row_s_word_count() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute('CREATE VIRTUAL TABLE "rows" USING fts5(text)')
    counts = {1: 0, 2: 1, 3: 127, 4: 128, 5: 129, 6: 300, 7: 16_383, 8: 16_384, 9: 40_000}
    for rowid, n in counts.items():
        conn.execute('INSERT INTO "rows" (rowid, text) VALUES (?, ?)', (rowid, "w " * n))
    assert _lengths(conn, '"rows"', list(counts)) == counts
