"""The ids a question quotes, and the memories that hold them (ADR 0117).

An id names one thing: the memory holding a quoted id verbatim is what the question asks
about, whatever else their words and meanings share. Recall's calibration, fitted on
conversations that quote almost none, reads a low cosine and a middling share as little
evidence; :func:`id_floors` puts a floor under the relevance of the few memories that hold
them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engram.agents.matching import Matching, cased, codes, holds

__all__ = [
    "ID_HELD",
    "ID_HOLDERS",
    "ID_LENGTH",
    "id_floors",
    "identifier",
    "quoted_codes",
    "quoted_ids",
    "runs",
    "written_ids",
]

#: The least relevance of the memory holding every id a query quotes, where it is the only
#: candidate that does: as likely as not to be what is asked for (ADR 0117). Where several
#: hold them (at most :data:`ID_HOLDERS`), each has its share of it.
ID_HELD = 0.5
#: The most candidates that may hold a query's ids for the ids to single them out.
ID_HOLDERS = 3
#: The fewest characters of a code that names one thing: "inc0012345", "9f2c4e1",
#: "err-4471-b"; shorter codes are ordinals and measures as often ("18th", "5k", "ga4").
ID_LENGTH = 5
_REFERENCE = re.compile(r"(?<![\w#])#\d{3,}\b")  # an issue's or a request's number: "#4821"
#: What may open or close a quoted identifier in prose: quotes, brackets, a sentence's stop.
_AROUND = "\"'`‘’“”()[]{}<>,;!?"
_PLAIN = re.compile(r"[^\W\d_]+")
_CAMEL = re.compile(r"[a-z][a-z0-9]*[A-Z]")
_PATH_START = re.compile(r"^(?:~?/|\./|[A-Za-z]:\\)")


def identifier(token: str) -> bool:
    """Say whether ``token`` (a run without spaces) is written as a programmer names one
    thing, digits or none: words joined by "_" (``E_CONN_RESET``,
    ``flow_log_retention_days``), a lower camel case name (``hydrateCartSummary``), a file
    or key name of dotted parts (``api.conf``, ``checkout.enable_split_tender``) or a path
    (``/etc/nginx/api.conf``, ``C:\\ProgramData\\Acme``). Prose joins words with "-" and
    "/" ("follow-up", "and/or", "e.g."), not so (ADR 0119)."""
    if len(token) < ID_LENGTH or (_PLAIN.fullmatch(token) and not _CAMEL.match(token)):
        return False
    if _PATH_START.match(token):
        return sum(token.count(c) for c in "/\\") >= 2
    if "_" in token.strip("_"):
        return True
    if _CAMEL.match(token) and _PLAIN.fullmatch(token):
        return len(token) >= 8
    parts = token.split(".")
    return len(parts) >= 2 and all(len(p) >= 2 and re.fullmatch(r"[\w-]+", p) for p in parts)


def runs(text: str) -> list[str]:
    """Return ``text``'s runs without spaces, stripped of the quotes, brackets and stops
    that prose puts around them (a path keeps its inner dots and colons); a setting written
    ``KEY=value`` is two runs, the key and its value."""
    return [
        t
        for raw in text.split()
        for part in raw.split("=")
        if (t := part.strip(_AROUND).rstrip(".:"))
    ]


def written_ids(text: str) -> tuple[str, ...]:
    """Return the identifiers and opaque keys ``text`` writes (:func:`identifier`,
    :func:`cased`), lower-cased but the keys, which keep their case."""
    found = (t if cased(t) else t.casefold() for t in runs(text) if identifier(t) or cased(t))
    return tuple(dict.fromkeys(found))


def quoted_codes(text: str) -> tuple[str, ...]:
    """Return what ``text`` quotes that names one thing whole: its identifiers and opaque
    keys (:func:`written_ids`), then its codes (:func:`codes`) but those a key written in
    both cases stands for, its case aside (ADR 0119)."""
    written = written_ids(text)
    keys = {w.casefold() for w in written if cased(w)}
    return tuple(dict.fromkeys((*written, *(c for c in codes(text) if c not in keys))))


def quoted_ids(query: str) -> tuple[str, ...]:
    """Return the ids ``query`` quotes that name one thing: its codes (:func:`codes`) of at
    least :data:`ID_LENGTH` characters, numbers written after a "#" ("PR #4821"; ADR 0117),
    and identifiers written as a programmer writes them, digits or none (:func:`identifier`,
    ADR 0119). Each is lower-cased but an opaque key written in both cases (:func:`cased`),
    which keeps its case."""
    written = set(written_ids(query))
    named = [c for c in quoted_codes(query) if c in written or len(c) >= ID_LENGTH]
    return tuple(dict.fromkeys([*named, *(m.group() for m in _REFERENCE.finditer(query))]))


def id_floors(positions: Sequence[int], m: Matching) -> dict[int, float]:
    """Return the least relevance of each candidate holding every id the query quotes
    (:data:`ID_HELD` shared among them), where at most :data:`ID_HOLDERS` do; {} otherwise.

    An id names one thing: the memory holding it verbatim is what the query asks about,
    whatever else their words and meanings share (a vector-near id, "9f2c4e7" for
    "9f2c4e1", is another thing). Reads the texts of the candidates not read yet."""
    if not m.ids:
        return {}
    m.read(positions)
    holders = [
        p for p in positions
        if (text := m.texts.get(p))
        and all(holds(i, text, text.casefold()) for i in m.ids)
    ]  # fmt: skip
    if not holders or len(holders) > ID_HOLDERS:
        return {}
    return dict.fromkeys(holders, ID_HELD / len(holders))
