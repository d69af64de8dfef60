"""The lexical index's read side: BM25 searches, query terms, and the rows' other reads.

Every search filters visibility and type in the statement that ranks (an agent finds its own
items and public ones, never another agent's private ones), leaves archived rows out except
``as_of`` a time before the archival (ADR 0019), and prunes uninformative query words before
rescoring the pool with every word (ADR 0026). The write side, what is indexed and how, is
:mod:`engram.projections.lexical.index`; the counts, stems and frequencies the read side
works from are :mod:`engram.projections.lexical.vocabulary`.

Each hit carries its raw BM25 score and ``match``, the IDF-weighted share of the query's
words the item contains (0..1): a number that means the same for every query, where BM25's
scale depends on the query and the corpus.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, NamedTuple

from engram.projections.counts import check_count
from engram.projections.errors import QueryError, UnknownProjectionError
from engram.projections.lexical.index import (
    lowered_words,
    tokens,
)
from engram.projections.lexical.memories import live_table as _table
from engram.projections.lexical.vocabulary import (
    averages,
    frequencies,
    known_terms,
    varint,
)
from engram.projections.store import ProjectionStore, physical

#: ADR 0026's rule, kept as an ablation (``prune="share"``): a query word held by more than
#: this share of the rows is not searched. It prunes by a share of the rows, so on an index
#: of a few hundred long rows it drops nearly every word (ADR 0053); the default prunes by
#: postings instead.
PRUNE_SHARE = 0.02
#: When fewer query words than this are chosen, this many of the rarest are searched.
MIN_TERMS = 2
#: A search ranks at most about this many postings (rows holding a searched word): the
#: query's words are searched rarest first while their rows add up to no more, the rarest
#: always. FTS5 scores every posting of the words it searches, so this bounds the
#: statement's cost whatever the index's size (ADR 0044). It is the only reason to leave a
#: word out of the search, so it is sized by the tightest latency goal (100k memories,
#: 15 ms at the median): about 2.5 us a posting makes 4,000 postings 10 ms of the statement.
#: An index small enough to rank every posting within it is searched exactly (ADR 0053).
MAX_POSTINGS = 4_000
#: The pruning rules :func:`terms` knows: ``"budget"`` (the default, ``prune=True``: the
#: postings budget alone, ADR 0053) and ``"share"`` (ADR 0026's 2% share, then the budget).
PRUNING = ("budget", "share")
#: A pruned search ranks this many times ``k`` rows by the informative words, then scores
#: them with every word (ADR 0026).
POOL = 4
#: FTS5's BM25 constants (its bm25() defaults), for scoring a pruned search's pool.
BM25_K1 = 1.2
BM25_B = 0.75


class Hit(NamedTuple):
    """A lexical match: the event position, its BM25 score (higher is better) and its match.

    ``match`` is the IDF-weighted share of the query's distinct words found in the item, in
    0..1; IDF as BM25 computes it over the indexed rows.
    """

    position: int
    score: float
    agent: str
    type: str
    visibility: str
    text: str
    match: float = 0.0


def match_expression(query: str) -> str | None:
    """Turn free text into a safe FTS5 expression: every word quoted, OR-ed (None if empty)."""
    return _expression(list(dict.fromkeys(tokens(query))))


def _expression(words: Sequence[str]) -> str | None:
    return " OR ".join(f'"{w}"' for w in words) if words else None


class Terms(NamedTuple):
    """A query's distinct words as the index sees them (:func:`terms`).

    ``weights`` holds every word's IDF (what ``match`` weighs); ``searched`` the words the
    search ORs, in query order: the informative ones, or all that occur when not pruned;
    ``present`` every word some row holds; ``stems`` each word's terms in the index;
    ``average`` the mean number of words per row (BM25's average document length).
    """

    weights: dict[str, float]
    searched: tuple[str, ...]
    present: tuple[str, ...]
    stems: dict[str, tuple[str, ...]]
    average: float

    @property
    def expression(self) -> str | None:
        """Return the FTS5 expression the search runs (None: nothing to search)."""
        return _expression(self.searched)

    @property
    def pruned(self) -> bool:
        """Say whether the search leaves out words some row holds."""
        return self.searched != self.present


def terms(
    conn: sqlite3.Connection, query: str, *, prune: bool | str = True, agent: str | None = None
) -> Terms:
    """Return the query words' IDF and the words worth searching (ADR 0026, ADR 0053).

    Document frequencies come from the index's vocabulary, each word stemmed by the index's
    own tokenizer. A word that no row holds is not searched. With ``prune`` (``True`` or
    ``"budget"``), the words are searched rarest first while the rows holding them add up to
    at most :data:`MAX_POSTINGS`, the rarest always; a word held by half the rows or more is
    left out first, as BM25 gives it no weight (FTS5 floors its IDF near 0: a speaker's name
    in a two-person conversation, "the"), unless fewer than :data:`MIN_TERMS` words are
    left, when the :data:`MIN_TERMS` rarest are kept. The postings are what a search costs,
    whatever the index's size, so a small index of long rows is searched with every word and
    a large one with its rarest, which are the ones that put a row at the top of BM25.
    ``prune="share"`` first keeps only the words held by at most :data:`PRUNE_SHARE` of the
    rows (ADR 0026's rule, for the ablation). The search then scores what the searched
    words found with every word's BM25 (:func:`search`).

    With ``agent``, a word that only rows ``agent`` may not see hold (another agent's private
    memories) counts as held by none, its weight and presence those of a word no memory
    holds: what recall says of it then tells nothing of the private rows (:func:`seen_by`).
    The words are looked at rarest first while the rows holding them add up to at most
    :data:`MAX_POSTINGS` (the rarest always), so the lookups cost no more than a search; a
    word more common than that counts as held.
    """
    if prune not in (True, False, *PRUNING):
        raise QueryError(f"prune must be a bool or one of {list(PRUNING)}, got {prune!r}")
    words = list(dict.fromkeys(tokens(query)))
    if not words:
        return Terms({}, (), (), {}, 0.0)
    table = _table(conn)
    total, average, state = averages(conn, table)
    counts, stems = frequencies(conn, table, words, state)
    if agent is not None:  # rarest first, within the search's own budget of postings
        held: list[str] = []
        spent = 0
        for w in sorted((w for w in words if counts[w] > 0), key=lambda w: counts[w]):
            spent += counts[w]
            if held and spent > MAX_POSTINGS:
                break
            held.append(w)
        for w in set(held) - set(seen_by(conn, held, agent)):
            counts[w] = 0
    weights = {w: max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6) for w, n in counts.items()}
    present = tuple(w for w in words if counts[w] > 0)
    searched = present
    if prune:
        rarest = sorted(present, key=lambda w: counts[w])  # ties keep the query's order
        if prune == "share":
            telling = [w for w in rarest if counts[w] <= PRUNE_SHARE * total]
        else:  # BM25's IDF is 0 or less for a word in half the rows or more
            telling = [w for w in rarest if 2 * counts[w] < total]
        if len(telling) < MIN_TERMS:
            telling = rarest[:MIN_TERMS]
        chosen: list[str] = []
        spent = 0
        for word in telling:  # the rarest always; the others within the budget
            if chosen and spent + counts[word] > MAX_POSTINGS:
                break
            chosen.append(word)
            spent += counts[word]
        searched = tuple(w for w in present if w in chosen)
    return Terms(weights, searched, present, stems, average)


def search(
    conn: sqlite3.Connection,
    query: str,
    k: int,
    *,
    agent: str,
    types: Sequence[str] | None = None,
    as_of_us: int | None = None,
    query_terms: Terms | None = None,
    prune: bool | str = True,
    match: bool = True,
) -> list[Hit]:
    """Return the ``k`` best BM25 matches ``agent`` may see (its own and public items).

    With ``as_of_us`` (epoch microseconds), only what was known then: items observed at or
    before it and not archived at or before it. The search ORs the query's informative words
    (:func:`terms`; all its words without ``prune``); ``query_terms`` are the query's terms
    when the caller has them already. ``match=False`` leaves each hit's ``match`` at 0.0,
    for a caller that computes it (:func:`share`) only for the hits it keeps.
    """
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}")
    check_count(k, "k")
    if query_terms is None:
        query_terms = terms(conn, query, prune=prune)
    expression = query_terms.expression
    if expression is None:
        return []
    table = _table(conn)
    visible, shown = _visible(agent, types, as_of_us)
    if not query_terms.pruned:
        sql = (
            f"SELECT rowid, -bm25({table}), agent, type, visibility, text FROM {table}"
            f" WHERE {table} MATCH ?{visible} ORDER BY bm25({table}), rowid LIMIT ?"
        )
        rows = conn.execute(sql, [expression, *shown, k]).fetchall()
    else:
        rows = _rescored(
            conn, table, query_terms, _pool(conn, table, expression, k, visible, shown)
        )
        rows = rows[:k]
    if not match:
        return [Hit(*row) for row in rows]
    weights = query_terms.weights
    return [
        Hit(position, score, author, kind, visibility, text, share(weights, text))
        for position, score, author, kind, visibility, text in rows
    ]


_Row = tuple[int, float, str, str, str, str]


def _pool(
    conn: sqlite3.Connection,
    table: str,
    expression: str,
    k: int,
    visible: str,
    shown: list[object],
) -> list[_Row]:
    """Return the visible rows among the :data:`POOL` x ``k`` the informative words rank best.

    FTS5 ranks the matches before any row's columns are read, so only the pool's rows are;
    when fewer than ``k`` of them are visible, a pool four times larger is ranked.
    """
    limit = POOL * k
    sql = (
        f"SELECT t.rowid, -r, agent, type, visibility, text, (1{visible}) FROM (SELECT rowid"
        f" AS id, rank AS r FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT ?)"
        f" JOIN {table} t ON t.rowid = id ORDER BY r, id"
    )
    while True:
        rows = conn.execute(sql, [*shown, expression, limit]).fetchall()
        kept: list[_Row] = [row[:6] for row in rows if row[6]]
        if len(kept) >= k or len(rows) < limit:
            return kept
        limit *= 4


def _rescored(conn: sqlite3.Connection, table: str, query: Terms, rows: list[_Row]) -> list[_Row]:
    """Score ``rows`` with the BM25 of every query word, as FTS5 would; best first.

    BM25 is a sum over the query's words, so a row's score is the BM25 FTS5 gave it for the
    words searched (its rank) plus the terms of the words left out. For those, each row's
    words are counted under the stems the index's tokenizer gives them (those it has not
    seen yet go through it once), its length is the index's own, and IDF and the average
    length are the index's. A left-out word the tokenizer splits (``foo_bar``) counts as
    often as its rarest part.
    """
    searched = set(query.searched)
    rest = [w for w in query.present if w not in searched]
    if not rows or not rest:
        return sorted(rows, key=lambda r: (-r[1], r[0]))
    # Each row's words (lowercased as share() does), and which of all the pool's words
    # count for a left-out word: those the index's tokenizer turns into one of its terms.
    lists = [lowered_words(row[5]) for row in rows]
    sets = [set(words) for words in lists]
    seen: set[str] = set().union(*sets)
    known = known_terms(conn, table, seen)
    useful: dict[str, list[str]] = {}
    for term in {s for word in rest for s in query.stems[word]}:
        for w in seen.intersection(known.words.get(term, ())):
            useful.setdefault(w, []).append(term)
    counted: list[dict[str, int]] = []
    for words, present in zip(lists, sets, strict=True):
        found: dict[str, int] = {}
        for w in present.intersection(useful):
            n = words.count(w)
            for s in useful[w]:
                found[s] = found.get(s, 0) + n
        counted.append(found)
    holding = [row[0] for row, found in zip(rows, counted, strict=True) if found]
    lengths = _lengths(conn, table, holding) if holding else {}
    terms = [(query.weights[w], query.stems[w]) for w in rest]
    average = query.average or 1.0
    k1, b, boost = BM25_K1, BM25_B, BM25_K1 + 1
    scored = []
    for row, found in zip(rows, counted, strict=True):
        score = row[1]
        if found:
            norm = k1 * (1 - b + b * lengths.get(row[0], 0) / average)
            for weight, parts in terms:
                # most words are one term: their count without a generator (ADR 0101)
                if len(parts) == 1:
                    tf = found.get(parts[0], 0)
                else:
                    tf = min(found.get(s, 0) for s in parts)
                if tf:
                    score += weight * tf * boost / (tf + norm)
        scored.append((row[0], score, *row[2:]))
    scored.sort(key=lambda r: (-r[1], r[0]))
    return scored


def _lengths(conn: sqlite3.Connection, table: str, rowids: Sequence[int]) -> dict[int, int]:
    """Return the length in terms of each row, as the index recorded it (its docsize)."""
    docsize = table[:-1] + '_docsize"'
    marks = ",".join("?" * len(rowids))
    rows = conn.execute(f"SELECT id, sz FROM {docsize} WHERE id IN ({marks})", list(rowids))
    # a length under 128 is its varint's one byte, read without the decoder's call
    return {
        int(i): (size[0] if size[0] < 0x80 else varint(size, 0)[0]) if size else 0
        for i, size in rows
    }


def share(weights: dict[str, float], text: str) -> float:
    """Return the IDF-weighted share of the query words (``weights``, from :func:`idf`) in
    ``text``: 1 when it holds them all, 0 when none, whatever the query."""
    total = sum(weights.values())
    if not total:
        return 0.0
    return share_of(weights, share_words(text), total)


def share_words(text: str) -> frozenset[str]:
    """Return the words :func:`share` looks the query's words up in: ``text``'s distinct
    words, lowercased (the whole text first: :func:`lowered_words`)."""
    return frozenset(lowered_words(text))


def share_of(weights: Mapping[str, float], present: AbstractSet[str], total: float) -> float:
    """Return :func:`share` of a text whose :func:`share_words` are ``present``; ``total``
    is ``sum(weights.values())``, not 0 (worked out once for many texts)."""
    return min(sum(w for word, w in weights.items() if word in present) / total, 1.0)


def idf(conn: sqlite3.Connection, words: Sequence[str]) -> dict[str, float]:
    """Return each distinct word's inverse document frequency as FTS5's BM25 computes it.

    ``ln((N - n + 0.5) / (n + 0.5))`` over the N indexed rows, n of which hold the word,
    floored at a tiny positive value as FTS5 floors words found in more than half the rows.
    """
    return terms(conn, " ".join(words), prune=False).weights


def texts(conn: sqlite3.Connection, positions: Sequence[int]) -> dict[int, str]:
    """Return the indexed text of each of ``positions`` the index holds (archived included).

    Read from the index's content table (FTS5's ``_content`` shadow table, the text in
    ``c0``), where a row by rowid is a plain b-tree lookup: the virtual table takes about
    twice as long a row (ADR 0096)."""
    return {p: str(t) for p, t in _content_rows(conn, positions, "c0")}


def own_texts(conn: sqlite3.Connection, positions: Sequence[int], agent: str) -> dict[int, str]:
    """Return the indexed text of each of ``positions`` that ``agent`` owns (archived
    included), read as :func:`texts` reads."""
    agent_ = _CONTENT_COLUMNS["agent"]
    rows = _content_rows(conn, positions, "c0", f" AND {agent_} = ?", (agent,))
    return {p: str(t) for p, t in rows}


def visible_to(conn: sqlite3.Connection, positions: Sequence[int], agent: str) -> set[int]:
    """Return those of ``positions`` the index holds that ``agent`` may see: public rows and
    its own (archived included), read from the content table as :func:`texts` reads."""
    agent_, visibility = _CONTENT_COLUMNS["agent"], _CONTENT_COLUMNS["visibility"]
    where = f" AND ({visibility} = 'public' OR {agent_} = ?)"
    return {p for p, _ in _content_rows(conn, positions, "NULL", where, (agent,))}


def servable(
    conn: sqlite3.Connection,
    positions: Sequence[int],
    agent: str,
    types: Sequence[str],
    as_of_us: int | None = None,
) -> set[int]:
    """Return those of ``positions`` a recall of ``agent`` over ``types`` may serve: rows it
    may see, of those types, observed by ``as_of_us`` and not archived then (None: now)."""
    c, at = _CONTENT_COLUMNS, _NEVER if as_of_us is None else as_of_us
    where = (
        f" AND ({c['visibility']} = 'public' OR {c['agent']} = ?) AND {c['type']} IN"
        f" ({','.join('?' * len(types))}) AND {c['observed_us']} <= ?"
        f" AND ({c['archived_us']} IS NULL OR {c['archived_us']} > ?)"
    )
    return {p for p, _ in _content_rows(conn, positions, "NULL", where, [agent, *types, at, at])}


#: Later than any time a row holds: "now" for a read that asks of no time.
_NEVER = 2**62


def _content_rows(
    conn: sqlite3.Connection,
    positions: Sequence[int],
    column: str,
    where: str = "",
    params: Sequence[object] = (),
) -> Iterator[tuple[int, Any]]:
    """Yield ``(id, column)`` of the content table's rows at ``positions`` that meet
    ``where`` (with ``params``), 500 positions a statement."""
    content = _table(conn)[:-1] + '_content"'
    wanted = sorted(set(positions))
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        yield from conn.execute(
            f"SELECT id, {column} FROM {content} WHERE id IN ({marks}){where}", [*chunk, *params]
        )


def row_count(conn: sqlite3.Connection) -> int:
    """Return how many rows the index holds (FTS5's own count, one small read)."""
    return averages(conn, _table(conn))[0]


def seen_by(conn: sqlite3.Connection, words: Sequence[str], agent: str) -> tuple[str, ...]:
    """Return those of ``words`` (as :func:`terms` gives them) that a row ``agent`` may see
    holds: public rows and its own, archived included, as the index's vocabulary counts
    them (one lookup a word, the first visible row ending it)."""
    table = _table(conn)
    sql = (
        f"SELECT 1 FROM {table} WHERE {table} MATCH ?"
        " AND (visibility = 'public' OR agent = ?) LIMIT 1"
    )
    return tuple(w for w in words if conn.execute(sql, [f'"{w}"', agent]).fetchone())


def archived_after(
    conn: sqlite3.Connection,
    as_of_us: int,
    *,
    agent: str,
    types: Sequence[str] | None = None,
) -> list[tuple[int, str]]:
    """Return (position, text) of the items ``agent`` may see that were known at ``as_of_us``
    and archived after it."""
    table = _table(conn)
    sql = (
        f"SELECT rowid, text FROM {table} WHERE archived_us > ? AND observed_us <= ?"
        " AND (visibility = 'public' OR agent = ?)"
    )
    params: list[object] = [as_of_us, as_of_us, agent]
    if types:
        sql += f" AND type IN ({','.join('?' * len(types))})"
        params += list(types)
    return [(int(r[0]), str(r[1])) for r in conn.execute(sql + " ORDER BY rowid", params)]


def neighbours(
    conn: sqlite3.Connection,
    positions: Sequence[int],
    radius: int,
    *,
    agent: str,
    gap_us: int,
    types: Sequence[str] | None = None,
    as_of_us: int | None = None,
) -> dict[int, list[tuple[int, int]]]:
    """Return, for each of ``positions``, the memories formed next to it in its episode.

    Up to ``radius`` items before and after it (by position) that ``agent`` may see, of the
    given ``types``, known and not archived (as of ``as_of_us`` when given), each paired with
    its distance (1: adjacent); the walk stops at an item observed more than ``gap_us`` away
    from the position's own time. A position the index does not hold has no neighbours.

    The walk reads the index's content table (FTS5's ``_content`` shadow table: a plain
    table by rowid, its columns ``c0``.. in declaration order), where a range by rowid is a
    b-tree walk rather than a virtual table's scan. Every position's window of
    ``radius + 1`` rows each side is read in one statement, with whether ``agent`` may see
    each row; a side whose window holds fewer than ``radius`` such rows is walked on by a
    statement of its own (ADR 0096).
    """
    if not isinstance(radius, int) or isinstance(radius, bool) or radius < 0:
        raise QueryError(f"radius must be an int >= 0, got {radius!r}")
    content = _table(conn)[:-1] + '_content"'
    visible, params = _visible(agent, types, as_of_us, columns=_CONTENT_COLUMNS)
    wanted = sorted(set(positions))
    reach = radius + _SPARE
    rows: dict[int, tuple[int, bool]] = {}  # position: (observed_us, shown to agent)
    for start in range(0, len(wanted), 200):
        chunk = wanted[start : start + 200]
        ranges = " OR ".join(["id BETWEEN ? AND ?"] * len(chunk))
        bounds = [b for p in chunk for b in (p - reach, p + reach)]
        sql = f"SELECT id, c4, (1{visible}) FROM {content} WHERE {ranges}"
        for other, observed, shown in conn.execute(sql, [*params, *bounds]):
            rows[int(other)] = (int(observed), bool(shown))
    sides = [
        f"SELECT id, c4 FROM {content} WHERE id {sign} ?{visible} ORDER BY id {order} LIMIT ?"
        for sign, order in (("<", "DESC"), (">", "ASC"))
    ]
    around: dict[int, list[tuple[int, int]]] = {}
    for position in positions:
        if position not in rows:
            continue
        own = rows[position][0]
        near: list[tuple[int, int]] = []
        for sql, step in zip(sides, (-1, 1), strict=True):
            window = range(position + step, position + step * (reach + 1), step)
            seen = [(q, rows[q][0]) for q in window if q in rows and rows[q][1]][:radius]
            if len(seen) < radius:  # the window ran out: walk on beyond it
                seen = [
                    (int(q), int(observed))
                    for q, observed in conn.execute(sql, [position, *params, radius])
                ]
            for distance, (other, observed) in enumerate(seen, start=1):
                if abs(observed - own) > gap_us:
                    break
                near.append((other, distance))
        around[position] = near
    return around


#: Rows beyond ``radius`` each side of a position that :func:`neighbours` reads in its one
#: statement, for the rows ``agent`` may not see: a side needs a statement of its own only
#: when its window holds more such rows than this.
_SPARE = 1


#: The lexical table's columns as its ``_content`` shadow table names them.
_CONTENT_COLUMNS = {
    "agent": "c1",
    "visibility": "c2",
    "type": "c3",
    "observed_us": "c4",
    "archived_us": "c5",
}
_COLUMNS = {name: name for name in _CONTENT_COLUMNS}


def latest_archival(conn: sqlite3.Connection) -> int:
    """Return the time (epoch microseconds) of the latest archival the index holds, 0 if none."""
    (value,) = conn.execute(f"SELECT max(archived_us) FROM {_table(conn)}").fetchone()
    return int(value or 0)


def _visible(
    agent: str,
    types: Sequence[str] | None,
    as_of_us: int | None,
    *,
    columns: Mapping[str, str] = _COLUMNS,
) -> tuple[str, list[object]]:
    """Return the conditions (after an ``AND``) and parameters that keep the rows ``agent``
    may see, of ``types``, known and not archived (as of ``as_of_us`` when given).

    ``columns`` names the lexical table's columns where the conditions read them."""
    agent_, visibility, type_ = columns["agent"], columns["visibility"], columns["type"]
    observed, archived = columns["observed_us"], columns["archived_us"]
    sql = f" AND ({visibility} = 'public' OR {agent_} = ?)"
    params: list[object] = [agent]
    if as_of_us is None:
        sql += f" AND {archived} IS NULL"
    else:
        sql += f" AND {observed} <= ? AND ({archived} IS NULL OR {archived} > ?)"
        params += [as_of_us, as_of_us]
    if types:
        sql += f" AND {type_} IN ({','.join('?' * len(types))})"
        params += list(types)
    return sql, params


def concept_ids(conn: sqlite3.Connection, positions: Sequence[int]) -> dict[int, str]:
    """Return the concept id of each of ``positions`` that holds a concept's newest upsert."""
    table = physical(_generation(conn), "lexical_concepts")
    found: dict[int, str] = {}
    wanted = sorted(set(positions))
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        rows = conn.execute(
            f"SELECT position, id FROM {table} WHERE position IN ({','.join('?' * len(chunk))})",
            chunk,
        )
        found.update((int(p), str(i)) for p, i in rows)
    return found


def _generation(conn: sqlite3.Connection) -> int:
    generation = ProjectionStore.live_generation(conn, "lexical")
    if generation is None:
        raise UnknownProjectionError("projection 'lexical' is not in this store")
    return generation
