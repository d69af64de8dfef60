"""Where recall's candidates come from: each path's ranked hits, fused, and bloom.

The lexical path (FTS5 over the query's informative words, ADR 0026) and the semantic path
(the FAISS index, or the vectors known as of a cut) each rank their hits; reciprocal rank
fusion adds them up, each path's own rank kept beside the fused one (ADR 0091), and the
strongest candidates cue their episode neighbours (bloom, :mod:`engram.agents.contiguity`,
ADR 0025). With neither index readable, a scan of the ledger's last observations serves.
:class:`engram.agents.memory.AgentMemory` gathers through this base; scoring and the
result are its own.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.agents import contiguity
from engram.agents.calibration import Calibration, calibration_for
from engram.agents.folding import replaced_among
from engram.agents.matching import (
    Candidate,
    Matching,
    note_absent,
    without_names,
)
from engram.agents.quoted import ID_HOLDERS, quoted_codes, quoted_ids, short_hashes
from engram.ledger import Ledger
from engram.projections import lexical, salience, semantic
from engram.projections.embedding import Embedder
from engram.projections.errors import ProjectionError, QueryError
from engram.projections.lexical.prefixes import completions
from engram.projections.semantic import VectorHit, VectorSearcher
from engram.projections.timetravel import check_as_of

__all__ = ["FALLBACK_WINDOW", "Gathering"]

#: How many of the ledger's last events the fallback scans when no index can be read.
FALLBACK_WINDOW = 5000


class Gathering:
    """Gather and fuse recall's candidates for one agent (the state a memory sets up)."""

    agent: str
    ledger: Ledger
    embedder: Embedder | None
    searcher: VectorSearcher | None
    fusion: dict[str, float]
    rrf_k: int
    bloom: bool
    prune: bool | str
    calibration: Calibration | None

    def _candidates(
        self,
        conn: sqlite3.Connection,
        known: sqlite3.Connection,
        query: str,
        fetch: int,
        types: Sequence[str] | None,
        paths: frozenset[str],
        cut: int | None,
    ) -> tuple[dict[int, Candidate], str | None, Matching | None]:
        """Gather each path's ranked hits and fuse them; ``known`` holds salience as of the cut.

        Returns the candidates, why the fallback served (None: it did not), and what working
        out their ``match`` needs (None: the fallback set it)."""
        found: dict[str, list[tuple[int, float]]] = {}  # path: (position, raw score), ranked
        problems: list[str] = []
        query = self._completed(conn, query) if "lexical" in paths else query
        # The query's codes and the identifiers it writes, digits or none (ADR 0119): each
        # held only by a text holding it whole ("E_CONN_RESET" is not held by "E_CONN_RESETS").
        matching = Matching(conn, self.fusion, codes=quoted_codes(query), ids=quoted_ids(query))
        if "lexical" in paths:
            try:
                terms = lexical.terms(conn, query, prune=self.prune, agent=self.agent)
                hits = lexical.search(
                    conn,
                    query,
                    fetch,
                    agent=self.agent,
                    types=types,
                    as_of_us=cut,
                    query_terms=terms,
                    match=False,
                )
                found["lexical"] = [(h.position, h.score) for h in hits]
                matching.weights, matching.average = terms.weights, terms.average
                note_absent(matching, terms, query)
                matching.texts = {h.position: h.text for h in hits}
                if matching.ids:  # the memories holding a quoted id are candidates whatever
                    # the query's other words rank first (ADR 0129)
                    held = {p for p, _ in found["lexical"]}
                    for h in lexical.search(
                        conn, " ".join(matching.ids), ID_HOLDERS + 1, agent=self.agent,
                        types=types, as_of_us=cut, prune=False, match=False,
                    ):  # fmt: skip
                        if h.position not in held:
                            found["lexical"].append((h.position, h.score))
                            matching.texts[h.position] = h.text
            except (ProjectionError, sqlite3.Error) as exc:
                problems.append(f"lexical index unavailable ({exc})")
        if matching.weights is not None:
            matching.share_weights = matching.weights
        else:  # the content share is a feature of relevance whichever paths ran
            try:
                every = lexical.terms(conn, query, prune=False, agent=self.agent)
                matching.share_weights, matching.average = every.weights, every.average
                note_absent(matching, every, query)
            except (ProjectionError, sqlite3.Error):
                matching.share_weights = None
        if "semantic" in paths and (self.embedder is None or self.searcher is None):
            problems.append("no embedder configured")
        elif "semantic" in paths:
            try:
                vector, near = self._semantic(conn, known, query, fetch, types, cut, matching)
                found["semantic"] = [(h.position, h.score) for h in near]
                matching.vector = vector
            except Exception as exc:  # a model or index failure degrades, never fails recall
                problems.append(f"semantic index unavailable ({type(exc).__name__}: {exc})")
        if not found:
            why = "; ".join(problems) + ": keyword overlap on recent items"
            return self._fallback(query, fetch, types, cut), why, None
        fused: dict[int, Candidate] = {}
        for path, ranked in found.items():
            for rank, (position, raw) in enumerate(ranked, start=1):
                c = fused.setdefault(position, Candidate())
                c.fused += self.fusion[path] / (self.rrf_k + rank)
                c.via = (*c.via, path)
                own = (self.rrf_k + 1) / (self.rrf_k + rank)
                if path == "lexical":
                    c.bm25, c.lexical_rank = raw, own
                else:
                    c.cosine, c.semantic_rank = raw, own
        if self.bloom:
            self._bloom(conn, fused, types, cut)
        return fused, None, matching

    def _replacements(
        self,
        conn: sqlite3.Connection,
        fused: dict[int, Candidate],
        types: Sequence[str] | None,
        cut: int | None,
        valid_us: int,
        *,
        bring: bool = True,
    ) -> dict[int, int]:
        """Return ``old -> new`` for the candidates replaced by ``valid_us`` as the store knew
        it at ``cut`` (:func:`~engram.agents.folding.replaced_among`). With ``bring``, first
        add to ``fused`` what replaced a candidate, to the end of each chain, where the agent
        may see it and the recall may serve it (its types, known and not archived by the
        cut): a replaced memory recall serves brings what replaced it, which its words may
        not have found (ADR 0152)."""
        wanted = lexical.memory_types(types)
        replaced: dict[int, int] = {}
        asked = list(fused)
        while asked:
            found = replaced_among(conn, asked, cut, valid_us, self.agent)
            replaced.update(found)
            newer = [n for n in dict.fromkeys(found.values()) if n not in fused]
            if not bring or not newer:
                break
            try:
                served = lexical.servable(conn, newer, self.agent, wanted, cut)
            except (ProjectionError, sqlite3.Error):
                break
            asked = [n for n in newer if n in served]
            for n in asked:
                fused[n] = Candidate(via=("replacement",))
        return dict(sorted(replaced.items()))

    def _completed(self, conn: sqlite3.Connection, query: str) -> str:
        """Return ``query`` with each hash it quotes by its first characters in place of
        the whole ones the agent's visible memories hold (ADR 0129): "what does commit
        b9854c189d do" asks of the memory holding "b9854c189dfd359b…", which no term of
        the short one matches."""
        for short in short_hashes(query):
            try:
                found = completions(conn, short, self.agent)
            except (ProjectionError, sqlite3.Error):
                return query
            if found and short not in found:  # a memory holding the short one is asked of
                # Letters and digits only: no backslash a replacement string would read.
                query = re.sub(rf"(?i)\b{short}\b", " ".join(found), query)
        return query

    def _bloom(
        self,
        conn: sqlite3.Connection,
        fused: dict[int, Candidate],
        types: Sequence[str] | None,
        cut: int | None,
    ) -> None:
        """Let the strongest candidates cue their episode neighbours (agents.contiguity)."""
        scores = {p: c.fused for p, c in fused.items()}
        try:
            around = lexical.neighbours(
                conn,
                contiguity.seeds(scores),
                contiguity.RADIUS,
                agent=self.agent,
                gap_us=contiguity.EPISODE_GAP_US,
                types=types,
                as_of_us=cut,
            )
        except (ProjectionError, sqlite3.Error):
            return  # without the lexical index there is no episode to walk: recall as fused
        for position, score in contiguity.bloom(scores, around).items():
            c = fused.setdefault(position, Candidate())
            if not c.via:
                c.via = ("bloom",)
            c.fused = score

    def _semantic(
        self,
        conn: sqlite3.Connection,
        known: sqlite3.Connection,
        query: str,
        fetch: int,
        types: Sequence[str] | None,
        cut: int | None,
        matching: Matching,
    ) -> tuple[npt.NDArray[np.float32], list[VectorHit]]:
        """Return the query vector and the nearest vectors; as of a cut, those known then.

        Where the calibration weighs the query's detail (ADR 0095) and the query writes
        names, the query without them is embedded in the same call (``matching.masked``):
        one batch of two costs about a quarter more than the query alone, two calls double.
        """
        embedder, searcher = self.embedder, self.searcher
        if embedder is None or searcher is None:
            raise QueryError("no embedder configured")
        searcher.sync(conn)
        rest = without_names(query) if self._calibration().detail else None
        embedded = embedder.embed_transient([query] if rest is None else [query, rest])
        vector = np.ascontiguousarray(embedded[0], dtype=np.float32)
        if rest is not None:
            matching.masked = np.ascontiguousarray(embedded[1], dtype=np.float32)
        if cut is None or known is conn:  # nothing changed since the cut: the index holds it
            return vector, searcher.search(vector, fetch, agent=self.agent, types=types)
        # Memories archived after the cut left the index; score them as the index would.
        gone = lexical.archived_after(conn, cut, agent=self.agent, types=types)
        scores = semantic.similarities(embedder, vector, [text for _, text in gone])
        extra = [VectorHit(p, s) for (p, _), s in zip(gone, scores, strict=True)]
        want = fetch
        while True:
            hits = searcher.search(vector, want, agent=self.agent, types=types)
            pool = sorted([*hits, *extra], key=lambda h: (-h.score, h.position))
            facts = salience.memory_facts(known, [h.position for h in pool])
            live = [h for h in pool if (f := facts.get(h.position)) and not f.archived]
            if len(live) >= fetch or len(hits) < want:
                return vector, live[:fetch]
            want *= 4

    def _calibration(self) -> Calibration:
        """Return the calibration a recall the vectors take part in scores with."""
        if self.calibration is not None:
            return self.calibration
        provider = self.embedder.fingerprint.provider if self.embedder is not None else ""
        return calibration_for(provider, True)

    def _fallback(
        self, query: str, fetch: int, types: Sequence[str] | None, cut: int | None
    ) -> dict[int, Candidate]:
        words = set(lexical.tokens(query))
        head = self.ledger.head()
        scored: list[tuple[float, int, float]] = []
        archived: set[int] = set()
        window = self.ledger.read(
            max(head - FALLBACK_WINDOW, 0), kinds=["memory.observed", "memory.archived"]
        )
        for event in window:
            if cut is not None and check_as_of(event.at) > cut:
                continue
            p = event.payload
            if event.kind == "memory.archived":
                # As the projections read it: an archive reaches the observations before it.
                archived.update(position for position in p.positions if position < event.position)
                continue
            if p.visibility != "public" and p.agent != self.agent:
                continue
            if types and p.type not in types:
                continue
            overlap = len(words & set(lexical.tokens(p.text)))
            if overlap:
                share = overlap / (len(words) or 1)
                scored.append((overlap / math.sqrt(len(words) or 1), event.position, share))
        scored = [s for s in scored if s[1] not in archived]
        scored.sort(key=lambda s: (-s[0], -s[1]))
        return {
            position: Candidate(fused=score, via=("fallback",), match=share)
            for score, position, share in scored[:fetch]
        }
