"""The whole tokens a prefix stands for in what an agent may see (ADR 0129).

People quote a commit, a build or an object by the first characters of its hash
("b9854c189d" for "b9854c189dfd359b…"), as git does; the index holds the whole token, and
a term matches only whole. :func:`completions` finds, through an FTS5 prefix query, the
visible rows holding a token that starts with the prefix, and returns those tokens.
"""

from __future__ import annotations

import re
import sqlite3

from engram.projections.lexical.memories import live_table
from engram.projections.lexical.read import _visible

__all__ = ["completions"]


def completions(
    conn: sqlite3.Connection, prefix: str, agent: str, *, limit: int = 4
) -> tuple[str, ...]:
    """Return up to ``limit`` distinct whole tokens starting with ``prefix`` (letters and
    digits, lower case) held by rows ``agent`` may see, in the order first found; () when
    none is, or more than ``limit`` rows would have to be read."""
    if not prefix.isalnum() or not prefix.isascii():
        return ()
    table = live_table(conn)
    visible, shown = _visible(agent, None, None)
    rows = conn.execute(
        f"SELECT text FROM {table} WHERE {table} MATCH ?{visible} LIMIT ?",
        [f'"{prefix.lower()}"*', *shown, 4 * limit + 1],
    ).fetchall()
    if len(rows) > 4 * limit:
        return ()  # a prefix that common names nothing
    whole = re.compile(rf"(?<![0-9a-z]){re.escape(prefix.lower())}[0-9a-z]*(?![0-9a-z])")
    found: dict[str, None] = {}
    for (text,) in rows:
        for token in whole.findall(text.lower()):
            found[token] = None
    return tuple(found)[:limit]
