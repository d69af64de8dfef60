"""The rules: applied suggestions whose destination is ``rules``, loaded by every session.

The "reflex" tier of memory: short, one line each (the final text with its whitespace
folded), each with the suggestion and the scars it came from and who applied it. A rule
exists from the first legal review that applies or modifies its suggestion — the same rule
as the suggestions queue (:func:`engram.projections.suggestions.review_problem`), so an
illegal review that reached the ledger (a second one, one after a refusal) never changes or
adds a rule.

A reviewer may mark a rule *always-on* (tier 1, ``always`` on the review): it is loaded in
every context frame. The others are *situational*: served when a task calls for them
(ADR 0057). ``suggestion.joined`` adds later scars to a proposal and to its rule.

A review's ``destination`` (the reviewer's choice) wins over the drafted one: a suggestion
sent to the rules becomes a rule, a rules suggestion sent elsewhere does not.

Tables: ``proposals`` (every suggestion, its destination and status), ``rules`` (one row per
rule) and ``rules_text`` (FTS5 over the rules' text, keyed by the review's position) for
:func:`rules_for_query`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from engram.ledger import Event
from engram.projections.base import Projection, Tables
from engram.projections.counts import check_count
from engram.projections.errors import QueryError, UnknownProjectionError
from engram.projections.lexical import TOKENIZER, match_expression, tokens
from engram.projections.salience import micros
from engram.projections.store import ProjectionStore, physical
from engram.projections.suggestions import review_problem

NAME = "rules"


class Rule(NamedTuple):
    """One rule: its text, where it came from, and (from a query) how well it matched."""

    position: int  # the applying review's position
    text: str
    suggestion: str
    scars: list[str]
    reviewer: str
    # For a query: by rules_for_query here, BM25 (higher is better) and the share of the
    # query's distinct words the rule holds (0..1); by meaning (the agents' lookup), the
    # score the frames rank the rules by (0..1, the order given) and how surely the rule
    # applies by its best piece of evidence (0..1).
    score: float = 0.0
    match: float = 0.0
    always: bool = False  # always-on (tier 1): the reviewer marked it so


def one_line(text: str) -> str:
    """Fold a text's whitespace (line breaks included) into single spaces."""
    return " ".join(text.split())


class RuleBook(Projection):
    """The rules every session loads."""

    name = NAME
    version = 2
    kinds = ("suggestion.proposed", "suggestion.joined", "suggestion.reviewed")
    tables = ("proposals", "rules", "rules_text")

    def create(self, db: Tables) -> None:
        """Create the tables."""
        # One statement per execute: executescript would commit the engine's transaction.
        script = f"""
            CREATE TABLE {db["proposals"]} (
                id TEXT PRIMARY KEY, position INTEGER NOT NULL, text TEXT NOT NULL,
                scars TEXT NOT NULL, status TEXT NOT NULL, destination TEXT NOT NULL);
            CREATE TABLE {db["rules"]} (
                position INTEGER PRIMARY KEY, suggestion TEXT NOT NULL UNIQUE,
                text TEXT NOT NULL, scars TEXT NOT NULL, reviewer TEXT NOT NULL,
                applied_us INTEGER NOT NULL, always INTEGER NOT NULL DEFAULT 0);
            CREATE VIRTUAL TABLE {db["rules_text"]} USING fts5(text, tokenize = '{TOKENIZER}');
            """
        for statement in script.split(";"):
            if statement.strip():
                db.conn.execute(statement)

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Keep the ``rules`` proposals; turn their first legal applying review into a rule."""
        for e in events:
            p = e.payload
            if e.kind == "suggestion.proposed":
                # Every proposal: a reviewer may send one of another destination to the rules.
                db.conn.execute(
                    f"INSERT INTO {db['proposals']} (id, position, text, scars, status,"
                    " destination) VALUES (?, ?, ?, ?, 'pending', ?)",
                    (e.id, e.position, p.text, json.dumps(p.scars), p.destination),
                )
                continue
            if e.kind == "suggestion.joined":
                self._joined(db, p.suggestion, p.scars)
                continue
            row = db.conn.execute(
                f"SELECT status, text, scars, destination FROM {db['proposals']} WHERE id = ?",
                (p.suggestion,),
            ).fetchone()
            if row is None or review_problem(row[0], p.decision, p.text) is not None:
                continue  # unknown, or illegal: the suggestions queue lists it
            db.conn.execute(
                f"UPDATE {db['proposals']} SET status = ? WHERE id = ?",
                (p.decision, p.suggestion),
            )
            if p.decision == "refused" or (p.destination or row[3]) != "rules":
                continue
            text = one_line(row[1] if p.decision == "applied" else p.text)
            db.conn.execute(
                f"INSERT INTO {db['rules']} (position, suggestion, text, scars, reviewer,"
                " applied_us, always) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (e.position, p.suggestion, text, row[2], p.reviewer, micros(e.at), int(p.always)),
            )
            db.conn.execute(
                f"INSERT INTO {db['rules_text']} (rowid, text) VALUES (?, ?)", (e.position, text)
            )

    @staticmethod
    def _joined(db: Tables, suggestion: str, scars: Sequence[str]) -> None:
        for table, key in (("proposals", "id"), ("rules", "suggestion")):
            row = db.conn.execute(
                f"SELECT scars FROM {db[table]} WHERE {key} = ?", (suggestion,)
            ).fetchone()
            if row is not None:
                joined = list(dict.fromkeys([*json.loads(row[0]), *scars]))
                db.conn.execute(
                    f"UPDATE {db[table]} SET scars = ? WHERE {key} = ?",
                    (json.dumps(joined), suggestion),
                )

    def digest(self, db: Tables) -> str:
        """Digest the tables' rows, the FTS5 rowids included."""
        h = hashlib.sha256()
        for table, columns in (
            ("proposals", "*"),
            ("rules", "*"),
            ("rules_text", "rowid, text"),
        ):
            h.update(table.encode())
            for row in db.conn.execute(f"SELECT {columns} FROM {db[table]} ORDER BY 1"):
                h.update(msgspec.json.encode(row))
        return h.hexdigest()


def active(conn: sqlite3.Connection) -> list[Rule]:
    """Return every rule, in the order they were applied."""
    table = _table(conn, "rules")
    return [
        Rule(int(pos), str(text), str(sug), json.loads(scars), str(rev), always=bool(always))
        for pos, text, sug, scars, rev, always in conn.execute(
            f"SELECT position, text, suggestion, scars, reviewer, always FROM {table}"
            " ORDER BY position"
        )
    ]


def rules_for_query(conn: sqlite3.Connection, query: str, k: int) -> list[Rule]:
    """Return the ``k`` rules that best match ``query`` (BM25), with their match (0..1)."""
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}")
    check_count(k, "k")
    expression = match_expression(query)
    if expression is None:
        return []
    fts, rules = _table(conn, "rules_text"), _table(conn, "rules")
    rows = conn.execute(
        f"SELECT r.position, r.text, r.suggestion, r.scars, r.reviewer, -bm25({fts}), r.always"
        f" FROM {fts} JOIN {rules} AS r ON r.position = {fts}.rowid"
        f" WHERE {fts} MATCH ? ORDER BY bm25({fts}), r.position LIMIT ?",
        (expression, k),
    ).fetchall()
    wanted = set(tokens(query))
    out = []
    for pos, text, sug, scars, rev, score, always in rows:
        held = len(wanted & set(tokens(text))) / len(wanted)
        out.append(
            Rule(
                int(pos),
                str(text),
                str(sug),
                json.loads(scars),
                str(rev),
                score,
                held,
                bool(always),
            )
        )
    return out


def _table(conn: sqlite3.Connection, table: str) -> str:
    generation = ProjectionStore.live_generation(conn, NAME)
    if generation is None:
        raise UnknownProjectionError(f"projection {NAME!r} is not in this store")
    return physical(generation, table)
