"""What a new memory may replace: supersession detection's candidates (ADRs 0075, 0106,
0109, 0115, 0116).

Among the agent's memories, the candidates of a new one name the same subject (a name, an
unnamed thing by the words both name it by, or, told in the first person, the speaker),
quote the same ids and numbered occurrences, differ from it both ways and are dated no later
than it; each is weighed by the cosine of what the two say of their subject, the subject
taken out of both. :mod:`engram.agents.supersession` decides which one is replaced.
"""

from __future__ import annotations

import re
import sqlite3
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from engram.agents import holders, shapes, speakers, statements
from engram.agents.announcing import (
    FROM_ON,
    announced,
    announced_at,
    announces,
)
from engram.agents.attributes import tells_how_often
from engram.agents.folding import folds, retold
from engram.agents.formats import same_format, value_format
from engram.agents.matching import codes, sold_thing, stem, stems_of
from engram.agents.notes import as_stated, is_task
from engram.agents.occurrences import TIME_OF_DAY, same_occurrences, spaced_times
from engram.agents.quoted import identifiers, keys_apart, names_apart, same_keys
from engram.agents.relations import relative_unsaid
from engram.agents.statements import CHANGE_WORDS
from engram.agents.typed import same_kind
from engram.projections import copies, lexical, semantic, supersession
from engram.projections.errors import ProjectionError

if TYPE_CHECKING:
    from engram.agents.memory import AgentMemory

__all__ = [
    "CHANGE_WORDS", "COMPARED", "Candidate", "announced", "announces", "candidates",
    "same_format", "same_keys", "search", "value_format",
]  # fmt: skip

#: How many candidates, most similar first, are compared without the name.
COMPARED = 5
#: The most content words a memory may hold to be searched by them too (ADR 0187).
ATTRIBUTE_WORDS = 12
_CANDIDATES = 20


class Candidate(NamedTuple):
    """An earlier memory a new one may replace, and the rule's evidence."""

    position: int
    text: str
    similarity: float  # cosine of the two memories' vectors
    said: float  # cosine of what they say of the subject: its name taken out of both
    attribute: frozenset[str]  # content words both hold beyond the names
    values: tuple[frozenset[str], frozenset[str]]  # (the old's own words, the new's own)
    #: Content words both hold beyond the subject's own, other names included ("at Stripe"):
    #: evidence that they speak of one attribute where hash vectors cannot tell (ADR 0119).
    shared: frozenset[str] = frozenset()


def candidates(memory: AgentMemory, position: int, text: str) -> list[Candidate]:
    """Return the earlier memories ``text`` (observed at ``position``) may replace, the most
    alike in what they say of the subject first (:func:`search`)."""
    return search(memory, position, text)[0]


def search(
    memory: AgentMemory, position: int, text: str, only: int | None = None
) -> tuple[list[Candidate], list[tuple[int, str]]]:
    """Return the memories ``text`` (observed at ``position``) may replace, the most alike in
    what they say of the subject first, and those that passed every rule but their time: the
    ones dated after it, each with its text, the most alike first.

    Candidates are the agent's memories (``only`` that one, where given) naming the same
    subject, quoting the same ids and
    numbered occurrences (:func:`_labels`), not replaced already, dated no later than the new
    memory, whose content differs from the new memory's both ways; the :data:`COMPARED` most
    similar (cosine of the stored vectors) are compared again with the subject's name taken
    out of both texts, since the name alone makes any two sentences about one person alike
    (ADR 0075). A memory its speaker tells in the first person ("I moved to Berlin") also
    meets the first-person memories of the same speaker, compared without their first-person
    words (ADR 0116).
    """
    if memory.embedder is None or not statements.statement(text):
        return [], []
    memory.engine.wait_for(max(position, only or 0))
    with memory.engine.read() as conn:
        try:
            # A common word capitalised by its sentence names nothing: what the memory
            # speaks of is an unnamed thing's, found by the words both memories share
            # (ADR 0157).
            subject = _valued(text, statements.subject(conn, text) or "")
            said = _Said(text, announced(text), statements.state_values(text, now=True), subject)
            # A transcript's speaker label names who spoke, not what the turn speaks of: a
            # turn speaks of its speaker in the first person alone, which the speaker's path
            # below compares (ADR 0126).
            labelled = bool(subject) and subject in lexical.tokens(speakers.label(text))
            # A public memory may replace any agent's public ones: a team's shared memory is
            # corrected by whoever learns of the change (ADR 0166); a private one, its own.
            shared = memory.ledger.get([position])[0].payload.visibility == "public"
            held = [] if labelled else _of_subject(memory, conn, position, said, subject, shared)
            # A sale names the thing sold, never a value given (ADR 0185).
            if not held and not labelled and subject and said.change and not sold_thing(text):
                # The name a change gives may be its new value, not what changed ("From 1
                # January lashing is contracted to PortCrew Marine"): where nothing earlier
                # names it, what changed is looked for as an unnamed thing's, by the words
                # both memories share (ADR 0149).
                unnamed = _Said(text, said.change, said.values, "")
                held = _of_subject(memory, conn, position, unnamed, "", shared, False)
                # Named before the change word, it is what changed (or who took a role over):
                # "Extractor hire is now £8" is not of "the wax melter is £3" (ADR 0185).
                ph = unnamed.phrases
                held = [
                    h for h in held if holders.of_changed(text, h.text, subject, ph[h.position])
                ]
                if held:
                    said, subject = unnamed, ""
            # Spoken of in the first person, and of nothing the memories name alike ("We
            # moved the shipper to eu-west-1" speaks of the shipper), the subject is the
            # speaker, whose name the text does not say; like an unnamed thing's, its change
            # must be said (ADR 0116), or one value given anew (ADR 0123: _of_speaker).
            person = speakers.first_person(text)
            spoken = (
                _of_speaker(memory, conn, position, said, person)
                if person is not None and not held
                else []
            )
        except (ProjectionError, sqlite3.Error):
            return [], []
        kinds = {h.position: "person" for h in spoken} | {h.position: "subject" for h in held}
        pool = {h.position: h.text for h in (*spoken, *held) if only is None or h.position == only}
        if not pool:
            return [], []
        # A memory told late of an earlier time ("moved to Berlin", dated March, observed
        # after "lives in Paris", dated May) replaces nothing dated after it: what is true is
        # what was true last, by the time each memory is of, not the order they were told.
        told = {e.position: e.at for e in memory.ledger.get([position, *pool])}
        later = {p: t for p, t in pool.items() if told[p] > told[position]}
        pool = {p: t for p, t in pool.items() if told[p] <= told[position]}
        stored = semantic.vectors_of(conn, [*pool, *later])
        replaced = set(supersession.replacements(conn, [*pool, *later]))
    vector = np.asarray(memory.embedder.embed([text])[0], dtype=np.float32)

    def alike(texts: dict[int, str]) -> list[tuple[float, int, str]]:
        return sorted(
            (
                (float(np.frombuffer(stored[p], dtype=np.float32) @ vector), p, t)
                for p, t in texts.items()
                if p in stored and p not in replaced
            ),
            reverse=True,
        )[:COMPARED]

    near, after = alike(pool), [(p, t) for _, p, t in alike(later)]
    if not near:
        return [], after
    # What a statement says without its subject is in no ledger: kept by no cache.
    pairs = [
        side for _, old, old_text in near
        for side in _bare(text, old_text, kinds[old], subject, said.phrases.get(old, ()))
    ]  # fmt: skip
    bare = np.asarray(memory.embedder.embed_transient(pairs), dtype=np.float32)
    cosines = [float(bare[2 * i] @ bare[2 * i + 1]) for i in range(len(near))]
    mine, names = statements.content(text), statements.names(text)
    # The subject's own words: its name, and the kind of thing it names ("the Jennings
    # matter"), which two memories of it share whatever attributes they give (ADR 0123).
    named = (
        statements.content(statements.name_run(text, subject))
        | ({statements.kind(text, subject)} - {""})
        if subject
        else frozenset()
    )
    found = []
    for i, (similarity, old, old_text) in enumerate(near):
        theirs = statements.content(old_text)
        own = named if kinds[old] == "subject" else frozenset()
        # The numbered labels and codes both quote name what they speak of ("Mr Davies in
        # bed 12", "Ward 7B"), no attribute both give (ADR 0157).
        quoted = (said.labels & statements.labels(old_text)) | (said.ids & set(codes(old_text)))
        found.append(
            Candidate(
                old, old_text, similarity, cosines[i],
                (mine & theirs) - names - statements.names(old_text),
                (theirs - mine, mine - theirs),
                (mine & theirs) - own - frozenset(said.phrases.get(old, ()))
                - statements.content(" ".join(quoted)) - _modal(text, old_text),
            )
        )  # fmt: skip
    return sorted(found, key=lambda c: (-c.said, -c.similarity, -c.position)), after


class _Said:
    """What detection reads of the new memory once: its text, whether it announces a change,
    the state values it gives now, its content words, ids and labels; and, found on the
    way, the phrase it shares with each unnamed candidate."""

    def __init__(
        self, text: str, change: bool, values: frozenset[str], subject: str | None = None
    ) -> None:
        self.text, self.change, self.values = text, change, values
        self.content = statements.content(text)
        self.ids, self.labels = set(codes(text)), statements.labels(text)
        self.timed = self.ids | spaced_times(text)  # "11 am" is a time as "10:30" is (0185)
        # The ids before the word announcing the change name what changed ("Commit 355b349
        # bumped the logging library"), where the ones after it may be the values it gives
        # ("moved the gateway to port 9090"): an old memory without them is another thing.
        before = text[: announced_at(text)]
        #: Where the change is announced: what follows is the value it gives (ADR 0160).
        self.given_at = len(before) if change else None
        if FROM_ON.match(text, len(before)):
            before = ""  # "opens at 10am from May": the values come before it (ADR 0160)
        word = _WORD.match(text, len(before))
        if change and word is not None and not _WORD.search(text, word.end()):
            # A change word last ("The build agents are on Python 3.12 now") follows the
            # values: what the sentence names comes before its copula (ADR 0126).
            copula = re.search(r"\b(?:is|are|was|were)\b", text, re.IGNORECASE)
            before = text[: copula.start()] if copula else ""
        if change and word is not None and not before.strip() and not _SINCE.match(text):
            # A change word opening the text ("Transferred batch 233 of Harbour Pale to FV2")
            # names what changed in its object, up to where the value starts (ADR 0143).
            value = _VALUE_AT.search(text, word.end())
            before = text[word.end() : value.start() if value else len(text)]
        self.named = {*codes(before), *identifiers(before)} if change else set()
        # So do the occurrences numbered before it: "Ticket #88413: customer cannot change
        # email" speaks of ticket 88413, not of a ticket renumbered (ADR 0122).
        self.numbered = statements.labels(before) if change else frozenset()
        self.phrases: dict[int, tuple[str, ...]] = {}
        self.digest = copies.digest(text)
        self.identifiers = identifiers(text)
        run = " ".join(statements.name_run(text, subject).split()) if subject else ""
        #: The subject's full name, where it is a run of two or more words ("Marta Silva").
        self.full_name = run if " " in run else ""
        self._anew: dict[str, bool] = {}

    def given_after(self, phrase: tuple[str, ...]) -> int | None:
        """Return where the value the change gives starts (:attr:`given_at`) when the words
        before the change word are the thing both memories name (``phrase``), in a word
        more at most ("Vegan main changed to a harissa aubergine"); else None: a turn whose
        change word comes late ("Nate: Yeah actually - I'm currently playing ...") names
        more than its subject before it (ADR 0160)."""
        if self.given_at is None or not phrase:
            return None
        before = [w for w in statements.content_stems(self.text[: self.given_at]) if w]
        return self.given_at if set(phrase) <= set(before) <= set(phrase) | {before[0]} else None

    def given_as_value(self, phrase: tuple[str, ...]) -> bool:
        """Say whether the change gives ``phrase`` as its value, never naming it before its
        change word: "graphic novels have been moved to the ground floor" shares "ground
        floor" with "large print books are on the ground floor", where both put it, not
        what both speak of (ADR 0178)."""
        if self.given_at is None or not phrase:
            return False
        if set(phrase) <= set(statements.content_stems(self.text[: self.given_at])):
            return False
        # The value follows its change word after a preposition ("moved to the ground
        # floor"); right after the change word the phrase is what changed ("put adult
        # membership up to £135"), further on what it says of something else ("is back in
        # service after its motor repair").
        after = lexical.tokens(self.text[self.given_at :])
        at = next((i for i, w in enumerate(after) if stem(w) == phrase[0]), len(after))
        between = [w for w in after[1:at] if w not in _ARTICLES]
        return len(between) == 1 and _VALUE_AT.fullmatch(between[0]) is not None

    def named_by(self, old: str) -> bool:
        """Say whether ``old`` names the subject by the new memory's full name ("Marta
        Silva"): one person, whatever other names each gives (ADR 0122)."""
        return bool(self.full_name) and self.full_name in statements.name_runs(old)

    def anew(self, old: str) -> bool:
        """Say whether the new memory is ``old`` with one value given anew
        (:func:`shapes.value_anew`), a number that labels no occurrence ("bed 12" is
        another bed than "bed 9"): a change, announced or not (ADR 0123)."""
        if old not in self._anew:  # asked by the search's filter and by may_replace
            # An event told in the past tense with one number anew ("received a shipment of
            # 20 kits", "... of 12 kits") is another event, not a value set anew (ADR 0143).
            self._anew[old] = (
                shapes.value_anew(self.text, old)
                and statements.labels(old) == self.labels
                and not shapes.told_event(self.text)
                # So is a record of one occurrence with a day or a count anew ("Stunt
                # rehearsal for the car chase on 11 March", "... on 10 March"; ADR 0153).
                and not (shapes.recorded_occurrence(self.text) and shapes.recorded_occurrence(old))
            )
        return self._anew[old]

    def told_apart(self, old: str) -> bool:
        """Say whether, no change announced, the new memory and ``old`` tell things of other
        shapes (ADR 0123): a plan beside a state, one value of two attributes, an event told
        in the past tense, the old value given again, an attribute named on one side only; a
        recorded occurrence, a relation held with many values (ADR 0143)."""
        return (
            shapes.planned(self.text) != shapes.planned(old)
            or shapes.same_value(self.text, old)
            or shapes.told_event(self.text)
            # An event that announces a change ("gave up the harp for the trumpet", "got a
            # new number") tells a state's change, which a later state may replace.
            or (shapes.told_event(old) and not announces(old))
            # A record of one occurrence beside another, or beside a state (ADR 0143).
            or shapes.recorded_occurrence(self.text)
            or (shapes.recorded_occurrence(old) and not announces(old))
            or shapes.many_valued(self.text, old)
            or shapes.dated_apart(self.text, old)
            or shapes.dated_one_sided(self.text, old)
            or shapes.counted_apart(self.text, old)
            or shapes.keeps_names(self.text, old)
            or shapes.additive(self.text)
            # How often a thing is done beside a state of it (ADR 0174).
            or tells_how_often(self.text) != tells_how_often(old)
            or (
                shapes.attribute_one_sided(self.text, old)
                and not announces(old)
                and not same_kind(self.text, old)
                and not same_format(self.text, old)
            )
        )

    def may_replace(self, position: int, old: _Held) -> bool:
        """Say whether ``old`` may be replaced as far as its shape (a statement), its content
        and its ids go: the subject, the owner and the time are weighed apart."""
        theirs = identifiers(old.text)
        change = self.change or self.anew(old.text)
        return (
            old.position != position and statements.statement(old.text)
            # A time of day is one value: "until 4pm" differs from "until 4:30pm" (0187).
            and differs(
                self.content | _times(self.text), statements.content(old.text) | _times(old.text),
                change,
            )
            and same_occurrences(self.timed, self.labels, old.text, change, self.values)
            and all(
                n in theirs or n in codes(old.text) or _written_apart(n, old.text)
                for n in self.named
            )
            and self.numbered <= statements.labels(old.text)
            and same_keys(self.text, old.text)
            and (change or theirs == self.identifiers)
            and (change or self.named_by(old.text) or not statements.named_apart(
                self.text, old.text
            ))
            and (change or not self.told_apart(old.text))
            and not names_apart(self.text, old.text)  # 'Bloodgood', 'Osakazuki' (ADR 0139)
            and not keys_apart(self.text, old.text)  # "Booking BKG-PPJQY", "BKG-PPWQY"
            and not shapes.said_of_another(self.text, old.text)
            and not statements.others_named(self.text, old.text)
            and not relative_unsaid(self.text, old.text)  # "Kofi's mother" (ADR 0187)
            and not speakers.changed_unsaid(self.text, old.text)  # his broadband (0187)
            and not shapes.attributes_apart(self.text, old.text)
            and not (change and shapes.attribute_unsaid(self.text, old.text))
            and copies.digest(old.text) != self.digest  # a copy replaces nothing
            and not retold(self.text, old.text)
            and not is_task(self.text)  # a task to do changes nothing yet (ADR 0178)
            and not folds(self.text, old.text)  # recall's copies (ADR 0143)
        )  # fmt: skip


def differs(new: frozenset[str], old: frozenset[str], change: bool = False) -> bool:
    """Say whether two memories say different things: each holds content the other lacks,
    or, when the new one announces a change, it adds to the old ("is no longer allergic to
    peanuts" of "is allergic to peanuts"; ADR 0106)."""
    return bool(new - old) and (change or bool(old - new))


def _times(text: str) -> frozenset[str]:
    """Return the times of day ``text`` writes, each one word ("4:30pm", "9am")."""
    return frozenset(t.lower().replace(".", "") for t in TIME_OF_DAY.findall(text))


class _Held(Protocol):
    """An earlier memory as a search finds it."""

    @property
    def position(self) -> int: ...

    @property
    def text(self) -> str: ...


def _of_subject(
    memory: AgentMemory,
    conn: sqlite3.Connection,
    position: int,
    said: _Said,
    subject: str | None,
    shared: bool = False,
    by_codes: bool = True,
) -> list[_Held]:
    """Return the earlier memories that name the subject of the new one (a name, or an
    unnamed thing by the words both name it by) and may be replaced by it: the agent's own,
    and, ``shared`` (the new memory is public), other agents' public ones. With
    ``by_codes``, a code both quote names what two unnamed memories speak of; not where the
    memory was named, by the value its change gives (ADR 0170: "Samir Nasser replaced the
    work laptop with a ThinkPad X1" speaks of no X1 another memory uses)."""
    # Unnamed, the new memory must say that something changed, give a state's value anew
    # ("is on release 2.5.0"; ADR 0109), or be an earlier memory with one value given anew
    # ("The open playtest has 500 slots" of "... 200 slots"; ADR 0123).
    if subject is None:
        return []
    plain = subject == "" and not (said.change or said.values)
    # An index small enough to search whole is searched with every word: pruning leaves out
    # the words half its rows hold, which in a young store are the very words the new memory
    # shares with what it replaces (ADR 0112).
    # A subject named by many memories is searched with what the new one says of it too:
    # its name alone ranks twenty of them by chance; the others found so share two words
    # beyond names with the new one at least. A short memory's words are what it says of
    # its subject; a long one's, its topic (a chat turn's), found in every turn (ADR 0187).
    worded = subject and len(said.content) <= ATTRIBUTE_WORDS
    queries = [subject, f"{subject} {said.text}"] if worded else [subject or said.text]
    prune = lexical.row_count(conn) > lexical.MAX_POSTINGS
    beyond = said.content - statements.names(said.text)
    hits = {
        h.position: h._replace(text=as_stated(h.text))  # (ADR 0158)
        for n, query in enumerate(queries)
        for h in lexical.search(
            conn, query, _CANDIDATES, agent=memory.agent, types=lexical.MEMORY_TYPES, prune=prune
        )
        if not n or len(beyond & statements.content(h.text)) > 1
    }.values()  # fmt: skip
    held: list[_Held] = [
        h for h in hits
        if (h.agent == memory.agent or (shared and h.visibility == "public"))
        # ... or give a value of one kind in place of another ("Emergency contact: 07700
        # 900835" of "... number is 07700 900461"; ADR 0158).
        and (not plain or said.anew(h.text) or same_kind(said.text, h.text))
        and said.may_replace(position, h)
    ]  # fmt: skip
    if not subject:
        # Unnamed, what both speak of is the longest run of words they share (ADR 0106), or
        # the one noun both open with as their subject ("The trial is on 3 June", "The trial
        # was pushed back to 12 June"; ADR 0155).
        said.phrases.update({
            h.position: _subject_phrase(said, statements.shared_phrase(said.text, h.text))
            or holders.opening_head(said.text, h.text)
            # A role handed over, whose holder alone the old memory gives (ADR 0160).
            or (holders.held_role(said.text, h.text) if said.change else ())
            or speakers.changed_object(said.text, h.text)  # "We moved the van ..." (0184)
            # A code of letters and digits both quote names what both speak of: "Flight
            # NS412 departs at 06:50" / "From 30 March NS412 departs at 07:15" (ADR 0170).
            or (_shared_codes(said.text, h.text) if by_codes else ())
            for h in held
        })  # fmt: skip
    # Two things named by the same words with their own modifiers stay two things: the
    # nightly and the weekly backup job, the staging and the production API (ADR 0109).
    named = (stem(subject),) if subject else ()
    return [
        h for h in held
        if (not subject or (
            statements.written_as_name(h.text, subject)
            and statements.one_named(said.text, h.text, subject)
            and not statements.kinds_apart(said.text, h.text, subject)
            and _speaks_of(conn, h.text, said.text, subject)
        ))
        and (subject or (
            (said.phrases[h.position] or said.anew(h.text))
            # The one value given anew is no thing of its own ("The site manager is Dave
            # Morgan" -> "... is Priti Patel": two names, one manager; ADR 0143).
            # Where a change is announced, the names are the values it gives: two holders of
            # one role, not two things (ADR 0150).
            and (said.anew(h.text)
                 or not holders.other_things(
                     said.text, h.text, names_given=said.change,
                     given_at=said.given_after(said.phrases[h.position]),
                 ))
        ))
        and not statements.modified_apart(
            said.text, h.text, named or said.phrases[h.position], heads=not subject
        )
        and not statements.topic_only(h.text, named or said.phrases[h.position])
    ]  # fmt: skip


def _modal(text: str, old: str) -> frozenset[str]:
    """Return "may" where both texts write it as the modal only, no month ("Members may hire
    the clubhouse", "Members may keep trailers"): a word both share that names no attribute
    (ADR 0180)."""
    return frozenset() if "May" in text or "May" in old else frozenset({"may"})


def _subject_phrase(said: _Said, phrase: tuple[str, ...]) -> tuple[str, ...]:
    """Return ``phrase``, the run of words two unnamed memories share, unless the change
    gives it as its value (:meth:`_Said.given_as_value`)."""
    return () if said.given_as_value(phrase) else phrase


def _speaks_of(conn: sqlite3.Connection, old: str, text: str, subject: str) -> bool:
    """Say whether ``old`` speaks of the new memory's named ``subject``, not of a thing of
    its own ("The Hamlet production's director is Farouk Nakamura" speaks of the
    production, not of Farouk Nakamura, whom "Farouk Nakamura plays the lead in Hamlet"
    speaks of; "Acme Corp's account manager is Priya Nair" of Acme): its own subject, where
    it names one, is a word of the subject's name (ADR 0123). A subject read from a verb
    opening the old memory ("Send Umbrella Health's invoices ...") that the new one writes
    as a plain word is no subject of its own."""
    own = statements.subject(conn, old)
    if not own or own in lexical.tokens(statements.name_run(text, subject)):
        return True
    if subject in lexical.tokens(statements.name_run(old, own)):
        return True  # the subject's fuller name: "Hybrid H3" of "H3" (ADR 0176)
    # Another subject of its own: a name the new memory writes beside its subject, or does
    # not write at all ("Farid has a dog called Pepper" is not "I have a cat called Pepper");
    # a word the new memory writes as a plain word was never a name ("Send ...").
    named = any(own in lexical.tokens(run) for run in statements.name_runs(text))
    # By its stem: "Bins at Oakfield Court ..." is spoken of by "bin collection at Oakfield
    # Court ..." (ADR 0139).
    return not named and stem(own) in stems_of(text).every


def _bare(
    text: str, old: str, kind: str, subject: str | None, phrase: tuple[str, ...]
) -> tuple[str, str]:
    """Return the two texts whose cosine says what they say of their subject: without the
    speaker's first-person words, without the subject's name, or without the phrase two
    unnamed memories share."""
    if kind == "person":
        return speakers.impersonal(text), speakers.impersonal(old)
    if subject:
        name = statements.name_run(text, subject)
        return statements.without(text, name, subject), statements.without(old, name, subject)
    return statements.dropped(text, phrase), statements.dropped(old, phrase)


class _Spoken(NamedTuple):
    """An earlier memory of the agent's as the first-person search finds it."""

    position: int
    text: str


def _of_speaker(
    memory: AgentMemory, conn: sqlite3.Connection, position: int, said: _Said, person: str
) -> list[_Held]:
    """Return the agent's earlier memories nearest in meaning to the one at ``position`` that
    speak of the same speaker in the first person (:func:`speakers.first_person`) and may
    be replaced by it: their words for the subject are pronouns, which name nothing a word
    search could find (ADR 0116)."""
    searcher = memory.searcher
    vector = semantic.vectors_of(conn, [position]).get(position)
    if searcher is None or vector is None:
        return []
    searcher.sync(conn)
    found = searcher.search(
        np.frombuffer(vector, dtype=np.float32), _CANDIDATES, agent=memory.agent,
        types=lexical.MEMORY_TYPES,
    )  # fmt: skip
    others = [h.position for h in found if h.position != position]
    own = lexical.own_texts(conn, others, memory.agent)
    spoken = [_Spoken(p, t) for p, t in sorted(own.items())]
    return [
        h for h in spoken
        if speakers.first_person(h.text) == person and said.may_replace(position, h)
        and not speakers.possessed_unsaid(said.text, h.text)  # another thing (0182, 0184)
        and (said.change or said.values or said.anew(h.text))
    ]  # fmt: skip


def _shared_codes(text: str, other: str) -> tuple[str, ...]:
    """Return the codes of letters and digits both texts quote ("ns412"), sorted."""
    both = set(codes(text)) & set(codes(other))
    return tuple(sorted(c for c in both if any(ch.isalpha() for ch in c)))


def _written_apart(name: str, text: str) -> bool:
    """Say whether ``text`` writes the hyphenated ``name`` as words apart: "free-delivery"
    is the "free delivery" of "Minimum order for free delivery" (ADR 0167)."""
    parts = name.split("-")
    if len(parts) < 2 or any(not p.isalpha() for p in parts):
        return False
    return re.search(r"\b" + r"[\s-]+".join(map(re.escape, parts)) + r"\b", text, re.I) is not None


_ARTICLES = frozenset(("the", "a", "an"))
#: Where a change's value starts after its object: "... to FV2", "... into tank 3".
_VALUE_AT = re.compile(r"\b(?:to|into|onto|from|over|at|as)\b", re.IGNORECASE)


_WORD = re.compile(r"[^\W_]+")
#: A time a value holds from, opening the text ("From April the milk price is 40.2p"): the
#: word announcing the change, not a verb whose object names what changed (ADR 0155).
_SINCE = re.compile(r"\s*(?:from|since)\b", re.IGNORECASE)


def _valued(text: str, subject: str | None) -> str | None:
    """Return ``subject``, or "" (an unnamed thing's) where it is a code given as the value
    after the word announcing a change ("The confocal microscope was relocated to room
    C102": the microscope is spoken of, C102 is where it went; ADR 0139)."""
    if not subject or not any(c.isdigit() for c in subject):
        return subject
    at = announced_at(text)
    if at == len(text) or subject not in lexical.tokens(text[at:]):
        return subject
    return "" if subject not in lexical.tokens(text[:at]) else subject
