"""Lay context items out in frames and cut them to a token budget (ADR 0037).

Six frames, in this order: ``identity`` (who asks, as of when), ``problem`` (the query and
the task), ``knowledge`` (the chosen concepts as an HDoD: a nested dictionary keyed by path
segment, each concept's fields under ``_``), ``episodic`` (memories, scars and reflections, in
ledger order), ``constraints`` (the applied rules) and ``scratchpad`` (the agent's pending
signals). Each entry of a list frame names its ledger position (``pos``).

The budget is met on the frames' JSON as the token counter counts it: the best items go in
first while each one's own cost (by the estimate, which errs high) fits; the frames are then
counted whole by the counter and the weakest items leave until the count is within the
budget. The problem's text is shortened (word by word
from the end) only when the empty frames would not fit otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from engram.agents.tokens import Estimate, TokenCounter
from engram.ledger import Event
from engram.projections import concepts
from engram.projections.errors import QueryError

FRAMES = ("identity", "problem", "knowledge", "episodic", "constraints", "scratchpad")
#: A list entry's text is cut to this many characters (an ellipsis marks the cut).
MAX_ITEM_CHARS = 1_000
_FRAME_OF = {"concept": "knowledge", "rule": "constraints", "signal": "scratchpad"}
#: The share of the budget kept for the rules (constraints): they are taken first, and never
#: trimmed to make room for memories (ADR 0057). At 500 tokens it holds an always-on rule and
#: three situational ones of a short line each.
RULE_SHARE = 0.4
#: Tokens allowed per entry for the separators the whole frames add around it.
_SEPARATOR = 2
_ESTIMATE = Estimate()


@dataclass(frozen=True)
class Candidate:
    """An item that may enter the frames: its event, type, frame, score and components."""

    event: Event
    type: str
    frame: str
    score: float
    components: dict[str, float]
    hop: int
    text: str


def frame_of(item_type: str) -> str:
    """Return the frame an item type goes to (memories, scars, reflections: ``episodic``)."""
    return _FRAME_OF.get(item_type, "episodic")


def encode(frames: dict[str, object]) -> str:
    """Return the frames as the compact JSON that is counted and saved."""
    return msgspec.json.encode(frames).decode()


def assemble(
    agent: str,
    query: str,
    task: str,
    when: datetime,
    candidates: Sequence[Candidate],
    budget: int,
    per_type: int,
    counter: TokenCounter,
) -> tuple[dict[str, object], list[Candidate], int]:
    """Return the frames within ``budget`` tokens, the candidates in them (best first), and
    their token count.

    Raises:
        QueryError: even the empty frames with an empty problem exceed the budget.
    """
    kept: dict[str, int] = {}
    ranked: list[Candidate] = []
    for c in sorted(candidates, key=lambda c: (-c.score, -c.event.position)):
        if kept.get(c.type, 0) < per_type:
            kept[c.type] = kept.get(c.type, 0) + 1
            ranked.append(c)
    identity = {"agent": agent, "as_of": when.isoformat(timespec="seconds")}
    problem = _fitting_problem(identity, query, task, budget, counter)
    used = counter.count(encode(render(identity, problem, [])))
    chosen: list[Candidate] = []
    # The rules go first, within their reserved share; the rest fill what is left.
    reserve = used + int(budget * RULE_SHARE)
    rules = [c for c in ranked if c.frame == "constraints"]
    for c in rules + [c for c in ranked if c.frame != "constraints"]:
        # The estimate errs high, so the one count of the whole frames seldom trims after.
        cost = _ESTIMATE.count(encode(_entry(c))) + _SEPARATOR
        limit = min(reserve, budget) if c.frame == "constraints" else budget
        if used + cost <= limit:
            chosen.append(c)
            used += cost
    frames = render(identity, problem, chosen)
    tokens = counter.count(encode(frames))
    while tokens > budget and chosen:
        # The weakest memory leaves first (chosen is best first, rules ahead); rules last.
        others = [i for i, c in enumerate(chosen) if c.frame != "constraints"]
        chosen.pop(others[-1] if others else -1)
        frames = render(identity, problem, chosen)
        tokens = counter.count(encode(frames))
    return frames, chosen, tokens


def _fitting_problem(
    identity: dict[str, Any], query: str, task: str, budget: int, counter: TokenCounter
) -> dict[str, str]:
    words = {"query": query.split(), "task": task.split()}
    while True:
        problem = {"query": " ".join(words["query"]), "task": " ".join(words["task"])}
        if counter.count(encode(render(identity, problem, []))) <= budget:
            return problem
        longer = max(words, key=lambda k: len(words[k]))
        if not words[longer]:
            raise QueryError(
                f"budget {budget} is too small for the empty frames; give a larger budget"
            )
        del words[longer][max(len(words[longer]) // 2, 1) * -1 :]


def render(
    identity: dict[str, Any], problem: dict[str, str], chosen: Sequence[Candidate]
) -> dict[str, object]:
    """Lay ``chosen`` out in the six frames."""
    knowledge = concepts.tree(_concept(c.event) for c in chosen if c.frame == "knowledge")
    lists: dict[str, list[dict[str, Any]]] = {"episodic": [], "constraints": [], "scratchpad": []}
    for c in sorted(chosen, key=lambda c: c.event.position):
        if c.frame in lists:
            lists[c.frame].append(_entry(c))
    return {
        "identity": identity,
        "problem": problem,
        "knowledge": knowledge,
        "episodic": lists["episodic"],
        "constraints": lists["constraints"],
        "scratchpad": lists["scratchpad"],
    }


def for_ledger(frames: Mapping[str, object]) -> dict[str, object]:
    """Return ``frames`` as ``context.saved`` keeps them: ledger text by position, never copied.

    A list entry that names its ledger position (``pos``) keeps the position and what
    describes it (type, agent, time) but not its text, which the ledger holds once, sealed
    under its subject's key: forgetting that subject then forgets the quote too. The problem
    frame's query and task are left out; they are the record's own ``query`` and ``task``,
    sealed under the viewing agent's key (ADR 0045). Anything else is kept as it is.
    """
    kept: dict[str, object] = {}
    for name, content in frames.items():
        if name == "problem" and isinstance(content, Mapping):
            content = {k: v for k, v in content.items() if k not in ("query", "task")}
        elif isinstance(content, list):
            content = [_by_position(entry) for entry in content]
        kept[name] = content
    return kept


def split_written(frames: Mapping[str, object]) -> tuple[dict[str, object], str]:
    """Split frames an agent saves into what quotes the ledger and what it wrote itself.

    The first part keeps the list entries that quote a ledger position, as ``{"pos": n}``
    (their text, type, agent and time are the ledger's at that position). The second is
    every other content (a scratchpad, a plan, an entry with no position) as compact JSON,
    for ``context.saved``'s ``notes``: a personal field, sealed under the agent's key, so
    forgetting the agent forgets what it wrote (ADR 0046). :func:`saved_frames` puts the
    two together again.
    """
    quoted: dict[str, object] = {}
    written: dict[str, object] = {}
    for name, content in for_ledger(frames).items():
        if isinstance(content, list):
            # A quote keeps its position only: what describes it is the ledger's to say.
            by_position = [{"pos": e["pos"]} for e in content if _quotes(e)]
            rest = [e for e in content if not _quotes(e)]
            if by_position:
                quoted[name] = by_position
            if rest or not by_position:
                written[name] = rest
        else:
            written[name] = content
    return quoted, encode(written) if written else ""


def saved_frames(frames: Mapping[str, object], notes: str) -> dict[str, object]:
    """Return the frames a ``context.saved`` holds: its quotes by position and its notes.

    ``notes`` that were forgotten (or are not JSON) are shown as they read, under ``notes``.
    """
    merged: dict[str, object] = {
        k: list(v) if isinstance(v, list) else v for k, v in frames.items()
    }
    if not notes:
        return merged
    try:
        written = msgspec.json.decode(notes)
    except msgspec.DecodeError:
        written = None
    if not isinstance(written, dict):
        merged["notes"] = notes
        return merged
    for name, content in written.items():
        have = merged.get(name)
        if isinstance(have, list) and isinstance(content, list):
            merged[name] = [*have, *content]
        else:
            merged[name] = content
    return merged


#: The keys of a list entry that quotes the ledger (its text already left out).
_QUOTE_KEYS = frozenset({"pos", "type", "agent", "at"})


def _quotes(entry: object) -> bool:
    return (
        isinstance(entry, Mapping) and type(entry.get("pos")) is int and set(entry) <= _QUOTE_KEYS
    )


def _by_position(entry: object) -> object:
    if isinstance(entry, Mapping) and type(entry.get("pos")) is int and "text" in entry:
        return {k: v for k, v in entry.items() if k != "text"}
    return entry


def _entry(c: Candidate) -> dict[str, Any]:
    """Return the candidate's entry in its frame (a one-concept tree for knowledge)."""
    if c.frame == "knowledge":
        return concepts.tree([_concept(c.event)])
    text = c.text if len(c.text) <= MAX_ITEM_CHARS else c.text[: MAX_ITEM_CHARS - 1] + "…"
    entry: dict[str, Any] = {"pos": c.event.position, "type": c.type, "text": text}
    if c.frame == "episodic":
        entry["agent"] = getattr(c.event.payload, "agent", c.event.actor)  # a note: its reviewer
        entry["at"] = c.event.at.isoformat(timespec="seconds")
    return entry


def _concept(event: Event) -> concepts.Concept:
    p = event.payload
    return concepts.Concept(
        p.id, p.type, p.label, p.agent, p.visibility, dict(p.payload), event.position, 0, 0, 1
    )
