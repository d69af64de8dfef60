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

from engram.agents.matching import Matching, codes, verbatim
from engram.projections import lexical

__all__ = ["ID_HELD", "ID_HOLDERS", "ID_LENGTH", "id_floors", "quoted_ids"]

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


def quoted_ids(query: str) -> tuple[str, ...]:
    """Return the ids ``query`` quotes that name one thing, lower-cased: its codes
    (:func:`codes`) of at least :data:`ID_LENGTH` characters, and numbers written after a
    "#" ("PR #4821"; ADR 0117)."""
    named = [c for c in codes(query) if len(c) >= ID_LENGTH]
    return tuple(dict.fromkeys([*named, *(m.group() for m in _REFERENCE.finditer(query))]))


def id_floors(positions: Sequence[int], m: Matching) -> dict[int, float]:
    """Return the least relevance of each candidate holding every id the query quotes
    (:data:`ID_HELD` shared among them), where at most :data:`ID_HOLDERS` do; {} otherwise.

    An id names one thing: the memory holding it verbatim is what the query asks about,
    whatever else their words and meanings share (a vector-near id, "9f2c4e7" for
    "9f2c4e1", is another thing). Reads the texts of the candidates not read yet."""
    if not m.ids:
        return {}
    unread = [p for p in positions if p not in m.texts]
    if unread:
        m.texts.update(lexical.texts(m.conn, unread))
    holders = [
        p for p in positions
        if (text := m.texts.get(p)) and all(verbatim(i, text.casefold()) for i in m.ids)
    ]  # fmt: skip
    if not holders or len(holders) > ID_HOLDERS:
        return {}
    return dict.fromkeys(holders, ID_HELD / len(holders))
