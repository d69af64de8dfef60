"""The lessons loop: scars become suggestions, a person reviews them, rules are served.

:class:`Lessons` is the loop's API beside an agent's memory stream:

- :meth:`Lessons.propose` appends a ``suggestion.proposed`` (a person's own suggestion);
  :meth:`Lessons.learn` drafts them from the scars waiting (:mod:`engram.agents.learning`);
- :meth:`Lessons.review` appends a ``suggestion.reviewed``: ``applied``, ``refused`` or
  ``modified`` (applied with the reviewer's text). Illegal transitions — an unknown id,
  reviewing twice, applying a refused one, ``modified`` without a text — are refused with a
  :class:`~engram.agents.errors.SuggestionError` and nothing is appended. The check reads the
  suggestions projection caught up to the head, and the append expects the suggestion's
  stream at the version read: of two reviewers racing, the first append wins and the other
  gets :class:`~engram.agents.errors.SuggestionStateError` (ADR 0028);
- applying (or modifying) a suggestion whose destination is a file or folder writes it
  there (:mod:`engram.agents.destinations`) and records the write as ``suggestion.written``;
  a ``rules`` suggestion becomes a rule, served by :meth:`rules` and :meth:`rules_for_query`.

Nothing is applied automatically: a review is always a person's call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import cast

from engram.agents import destinations, guidance
from engram.agents.arguments import check_key, check_name, check_query
from engram.agents.completion import Completer
from engram.agents.errors import (
    DestinationError,
    SuggestionInputError,
    SuggestionStateError,
    UnknownSuggestionError,
)
from engram.agents.learning import DEFAULT_BATCH, MAX_RULE, LearnReport, learn
from engram.ledger import NO_STREAM, ConcurrencyError, Ledger, NewEvent, new_id
from engram.ledger.catalog import (
    Decision,
    Destination,
    FileDiff,
    SuggestionProposed,
    SuggestionReviewed,
    SuggestionWritten,
)
from engram.ledger.events import Expectation
from engram.projections import rules, suggestions
from engram.projections import scars as scar_table
from engram.projections.counts import check_count
from engram.projections.embedding import Embedder
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.rules import Rule, one_line
from engram.projections.suggestions import Suggestion, Waiting

DESTINATIONS = ("rules", "instructions_file", "settings", "notes_inbox", "skill", "task")
DECISIONS = ("applied", "refused", "modified")
#: Where a destination the configuration leaves out is written, under the lessons' home.
DEFAULT_PLACES = {
    "instructions_file": "AGENTS.md",
    "settings": "settings-suggestions.md",
    "notes_inbox": "notes",
    "skill": "skills",
    "task": "tasks",
}
#: The lessons' home when none is given (the runtime gives one beside its data).
DEFAULT_HOME = "~/.local/share/engram/lessons"


class Lessons:
    """The lessons loop over a ledger and its projections.

    ``places`` maps destinations other than ``rules`` to the file or folder they are
    written to (the config file's ``[destinations]`` table); a destination it leaves out
    is written under ``home`` (:data:`DEFAULT_PLACES`), so every destination works without
    configuration. ``completer`` drafts suggestions (default: the offline drafter);
    ``embedder`` finds repeats before drafting (None: words only; ``Memory.lessons()``
    passes the store's embedder).
    """

    def __init__(
        self,
        ledger: Ledger,
        engine: ProjectionEngine,
        *,
        places: Mapping[str, str] | None = None,
        completer: Completer | None = None,
        embedder: Embedder | None = None,
        home: str | None = None,
    ) -> None:
        self.ledger = ledger
        self.engine = engine
        self.embedder = embedder
        given = dict(places or {})
        base = os.path.expanduser(home or DEFAULT_HOME)
        self.places = {d: os.path.join(base, p) for d, p in DEFAULT_PLACES.items()}
        self.places.update(given)
        unknown = sorted(set(given) - set(DESTINATIONS) | ({"rules"} & set(given)))
        if unknown:
            raise SuggestionInputError(
                f"places: {unknown} are not destinations written to files; "
                f"use {list(DESTINATIONS[1:])}"
            )
        self.completer = completer

    # -- reading -------------------------------------------------------------------------

    def suggestion(self, suggestion: str) -> Suggestion:
        """Return the suggestion with this id, or the only one whose id starts with it.

        Raises:
            UnknownSuggestionError: none, or several, match.
        """
        return self._find(suggestion)[0]

    def _find(self, suggestion: str) -> tuple[Suggestion, int]:
        """Return the suggestion and the ledger head the queue had reached when read."""
        try:
            check_key(suggestion, "suggestion", longest=128)
        except QueryError as exc:
            raise SuggestionInputError(f"{exc}: give an id or id prefix") from None
        head = self._caught_up()
        with self.engine.read() as conn:
            found = suggestions.get(conn, suggestion) if isinstance(suggestion, str) else None
            if found is not None:
                return found, head
            if not isinstance(suggestion, str) or not suggestion:
                raise SuggestionInputError(
                    f"suggestion must be an id or id prefix, got {suggestion!r}"
                )
            ids = suggestions.find(conn, suggestion)
            if len(ids) == 1:
                found = suggestions.get(conn, ids[0])
        if found is None:
            several = f"{len(ids)} suggestions start with it" if ids else "no suggestion has it"
            raise UnknownSuggestionError(f"suggestion {suggestion!r}: {several}")
        return found, head

    def suggestions(
        self, status: Sequence[str] | None = None, limit: int | None = None
    ) -> list[Suggestion]:
        """Return suggestions in proposal order, of ``status`` when given."""
        self._caught_up()
        with self.engine.read() as conn:
            return suggestions.listing(conn, status, limit)

    def waiting(self, limit: int | None = None) -> list[Waiting]:
        """Return the learning queue: scars waiting for a suggestion, by importance."""
        self._caught_up()
        with self.engine.read() as conn:
            return suggestions.waiting(conn, limit)

    def ignored(self, suggestion: str | None = None) -> list[tuple[int, str, str]]:
        """Return the lifecycle events the ledger holds but the queue ignored, and why."""
        self._caught_up()
        with self.engine.read() as conn:
            return suggestions.ignored(conn, suggestion)

    def told(self, suggestion: str) -> list[scar_table.Scar]:
        """Return the scars a suggestion cites, in the order it cites them: each telling of
        the mistake (who told it, what happened, the lesson), as a reviewer reads them before
        deciding; a scar the ledger no longer holds is left out.

        Raises:
            SuggestionInputError, UnknownSuggestionError: as :meth:`suggestion`.
        """
        found = self.suggestion(suggestion)
        with self.engine.read() as conn:
            every = [scar_table.get(conn, scar) for scar in found.scars]
        return [s for s in every if s is not None]

    def rules(self) -> list[Rule]:
        """Return the rules every session loads, in the order they were applied."""
        self._caught_up()
        with self.engine.read() as conn:
            return rules.active(conn)

    def rules_for_query(self, query: str, k: int = 5) -> list[Rule]:
        """Return the ``k`` rules that best meet ``query`` by meaning, as context frames rank
        them (:func:`engram.agents.guidance.lookup`: this memory's embedder and the content
        words), each with ``match`` how surely its best piece of evidence applies (0..1);
        they are ordered by ``score``, how the rule's tellings meet the query together, not
        by ``match``.

        Raises:
            QueryError: ``query`` is not a non-empty str (:func:`check_query`), or ``k`` not
                a positive int.
        """
        check_query(query)
        check_count(k, "k")
        self._caught_up()
        with self.engine.read() as conn:
            return guidance.lookup(conn, query, k, self.embedder)

    # -- writing -------------------------------------------------------------------------

    def propose(
        self,
        scars: Sequence[str],
        destination: Destination,
        text: str,
        *,
        diff: FileDiff | None = None,
        drafter: str = "person",
        actor: str = "person",
    ) -> str:
        """Append a suggestion drawn from recorded scars; return its id.

        Raises:
            SuggestionInputError: no scars, an id that is no recorded scar (or an archived
                one), an unknown destination, an empty text, or a rule longer than one line
                of :data:`~engram.agents.learning.MAX_RULE` characters.
        """
        if isinstance(scars, str) or not scars:
            raise SuggestionInputError("scars must be a non-empty list of scar event ids")
        if destination not in DESTINATIONS:
            raise SuggestionInputError(
                f"destination must be one of {list(DESTINATIONS)}, got {destination!r}"
            )
        text = self._checked_text(text, destination)
        self._caught_up()
        with self.engine.read() as conn:
            known = suggestions.known_scars(conn, [s for s in scars if isinstance(s, str)])
        missing = [s for s in scars if s not in known]
        if missing:
            raise SuggestionInputError(f"scars {missing} are no recorded scar events")
        archived = [s for s, gone in known.items() if gone]
        if archived:
            raise SuggestionInputError(f"scars {archived} are archived")
        event_id = new_id()
        event = NewEvent(
            stream=f"suggestion:{event_id}",
            kind="suggestion.proposed",
            payload=SuggestionProposed(
                scars=list(dict.fromkeys(scars)),
                destination=destination,
                text=text,
                diff=diff,
                drafter=drafter,
            ),
            actor=actor,
            id=event_id,
        )
        self.ledger.append(event, expect=NO_STREAM)
        return event_id

    def review(
        self,
        suggestion: str,
        decision: str,
        reviewer: str,
        *,
        note: str = "",
        text: str | None = None,
        always: bool = False,
        destination: Destination | None = None,
    ) -> int:
        """Append a person's review; write the suggestion to its place if applied.

        ``destination`` sends an applied (or modified) suggestion elsewhere than drafted: a
        lesson to the rules, a rule to the notes inbox. ``always`` marks an applied rule
        always-on (tier 1: loaded in every context frame; otherwise it is served when a task
        calls for it). ``text`` is the reviewer's final text, given with ``modified`` only.
        Returns the review's position. A write to a file or folder is planned before the review is
        appended, so a destination that cannot take it refuses the review too.

        Raises:
            SuggestionInputError: a malformed argument (names it).
            UnknownSuggestionError: no suggestion has this id (or prefix).
            SuggestionStateError: the suggestion is reviewed already, or another review
                was appended first.
            DestinationError: the destination cannot be written (see
                :func:`engram.agents.destinations.plan`).
        """
        if decision not in DECISIONS:
            raise SuggestionInputError(
                f"decision must be one of {list(DECISIONS)}, got {decision!r}"
            )
        if not isinstance(reviewer, str) or not reviewer.strip() or len(reviewer) > 512:
            raise SuggestionInputError(
                f"reviewer must be a non-empty name (at most 512 characters), got {reviewer!r}"
            )
        try:
            check_name(reviewer, "reviewer")
        except QueryError as exc:
            raise SuggestionInputError(str(exc)) from None
        if not isinstance(note, str):
            raise SuggestionInputError(f"note must be a str, got {type(note).__name__}")
        if not isinstance(always, bool):
            raise SuggestionInputError(f"always must be a bool, got {always!r}")
        if always and decision == "refused":
            raise SuggestionInputError("always marks an applied rule; a refusal applies nothing")
        if destination is not None:
            if destination not in DESTINATIONS:
                raise SuggestionInputError(
                    f"destination must be one of {list(DESTINATIONS)}, got {destination!r}"
                )
            if decision == "refused":
                raise SuggestionInputError("a refusal sends nothing anywhere; drop destination")
        if decision != "modified" and text is not None:
            raise SuggestionInputError(
                f"text is the reviewer's own text, given with 'modified' only, not {decision!r}"
            )
        found, head = self._find(suggestion)
        if destination is not None and found.status == "pending":
            found = found._replace(destination=destination)
        if always and found.destination != "rules":
            raise SuggestionInputError(
                f"always marks a rule; suggestion {found.id} goes to {found.destination}"
            )
        problem = suggestions.review_problem(found.status, decision, text)
        if problem == "modified without a text":
            raise SuggestionInputError(
                "modified needs the final text: give the text the rule becomes"
            )
        if problem is not None:
            raise SuggestionStateError(f"suggestion {found.id}: {problem}; nothing appended")
        final = None
        if decision == "modified":
            assert text is not None
            final = self._checked_text(text, found.destination)
        elif decision == "applied":
            final = found.text
            if destination is not None:
                final = self._checked_text(final, found.destination)
        write = None
        if final is not None:
            write = destinations.plan(found, final, decision, self.places)
        stream = f"suggestion:{found.id}"
        review = NewEvent(
            stream=stream,
            kind="suggestion.reviewed",
            payload=SuggestionReviewed(
                suggestion=found.id,
                decision=cast(Decision, decision),
                reviewer=reviewer,
                note=note,
                text=final,
                always=always,
                destination=destination,
            ),
            actor=reviewer,
        )
        # The stream's version as the check saw it: a review appended since (by another
        # reviewer) moves the stream on, and this append then fails instead of adding a second.
        expect = self._version(stream, head)
        try:
            (position,) = self.ledger.append(review, expect=expect)
        except ConcurrencyError:
            raise SuggestionStateError(
                f"suggestion {found.id}: another review was appended first; nothing appended"
            ) from None
        if write is not None:
            try:
                destinations.commit(write)
            except DestinationError as exc:  # checked before the append; the disk changed since
                raise DestinationError(
                    f"suggestion {found.id} was {decision} at position {position}, but {exc};"
                    " write it once that is fixed (engram suggestions write)"
                ) from None
            self._record_write(found, write, stream)
        return position

    def apply(
        self,
        suggestion: str,
        reviewer: str,
        *,
        note: str = "",
        always: bool = False,
        destination: Destination | None = None,
    ) -> int:
        """Apply a suggestion with its text (:meth:`review` with ``applied``), where drafted
        or at ``destination``."""
        return self.review(
            suggestion, "applied", reviewer, note=note, always=always, destination=destination
        )

    def refuse(self, suggestion: str, reviewer: str, *, note: str = "") -> int:
        """Refuse a suggestion (:meth:`review` with ``refused``)."""
        return self.review(suggestion, "refused", reviewer, note=note)

    def modify(
        self,
        suggestion: str,
        reviewer: str,
        text: str,
        *,
        note: str = "",
        always: bool = False,
        destination: Destination | None = None,
    ) -> int:
        """Apply a suggestion with the reviewer's text (:meth:`review` with ``modified``);
        ``always`` marks the rule always-on."""
        return self.review(
            suggestion, "modified", reviewer, note=note, text=text, always=always,
            destination=destination,
        )  # fmt: skip

    def write(self, suggestion: str) -> int | None:
        """Write an applied suggestion that was not written yet (after a crash); return the
        ``suggestion.written`` position, or None for a rule.

        Raises:
            SuggestionStateError: the suggestion is not applied, or written already.
        """
        found = self.suggestion(suggestion)
        if found.status not in ("applied", "modified"):
            raise SuggestionStateError(f"suggestion {found.id} is {found.status}, not applied")
        if found.written_position is not None:
            raise SuggestionStateError(
                f"suggestion {found.id} was written at position {found.written_position}"
            )
        assert found.final_text is not None
        write = destinations.plan(found, found.final_text, found.status, self.places)
        if write is None:
            return None
        destinations.commit(write)
        return self._record_write(found, write, f"suggestion:{found.id}")

    def learn(
        self, *, batch: int = DEFAULT_BATCH, limit: int | None = None, dry_run: bool = False
    ) -> LearnReport:
        """Draft suggestions for the scars waiting (:func:`engram.agents.learning.learn`)."""
        return learn(
            self.ledger,
            self.engine,
            self.completer,
            batch=batch,
            limit=limit,
            dry_run=dry_run,
            embedder=self.embedder,
        )

    # -- helpers -------------------------------------------------------------------------

    def _record_write(self, found: Suggestion, write: destinations.Write, stream: str) -> int:
        event = NewEvent(
            stream=stream,
            kind="suggestion.written",
            payload=SuggestionWritten(
                suggestion=found.id,
                destination=found.destination,  # type: ignore[arg-type]
                path=str(write.path),
                mode=write.mode,  # type: ignore[arg-type]
                sha256=write.sha256,
            ),
            actor="lessons",
        )
        return self.ledger.append(event, expect=self._version(stream))[0]

    def _version(self, stream: str, upto: int | None = None) -> Expectation:
        """Return ``stream``'s version counting its events up to position ``upto``."""
        last = 0
        for event in self.ledger.read_stream(stream):
            if upto is not None and event.position > upto:
                break
            last = event.version
        return last or NO_STREAM

    def _caught_up(self) -> int:
        head = self.ledger.head()
        self.engine.wait_for(head)
        return head

    @staticmethod
    def _checked_text(text: str, destination: str) -> str:
        if not isinstance(text, str) or not text.strip():
            raise SuggestionInputError(f"text must be a non-empty str, got {text!r}")
        if destination == "rules":
            folded = one_line(text)
            if folded != text.strip():
                raise SuggestionInputError(
                    "a rule is one line; the text holds line breaks or runs of spaces"
                )
            if len(folded) > MAX_RULE:
                raise SuggestionInputError(
                    f"a rule is at most {MAX_RULE} characters, got {len(folded)}"
                )
            return folded
        return text
