"""Lay context items out in frames and cut them to a token budget: the prompt contract
(ADR 0037, ADR 0082).

Six frames, in this order: ``identity`` (who asks, as of when), ``problem`` (the query and
the task), ``knowledge`` (the chosen concepts as an HDoD: a nested dictionary keyed by path
segment, each concept's fields under ``_``), ``episodic`` (memories, scars and reflections: the
last steps and their outcomes, in ledger order), ``constraints`` (the applied rules) and
``scratchpad`` (the agent's pending signals). Each entry of a list frame names its ledger
position (``pos``).

Shares of the budget: the rules are taken first, the always-on ones within the whole budget,
the situational ones within :data:`RULE_SHARE` of what the always-on ones leave (ADR 0057,
ADR 0142); then
every other item, best first, while its frame stays within its share (:data:`SHARES`:
knowledge at most half the budget, the scratchpad a fifth) and the whole within the budget.
Each node type keeps at most its top k (:data:`TOP_K`). A long text keeps its lead in
``text`` and the rest in ``details`` (:mod:`engram.agents.details`): when an item does not fit
whole, its details are summarised to the room left, or left out (an ellipsis says so).

The budget is met on the frames' JSON as the token counter counts it: items go in while each
one's own cost (by the estimate, which errs high) fits; the frames are then counted whole by
the counter and, until the count is within the budget, the weakest item with details has
them halved, else the weakest item leaves (rules last). The problem's text is shortened (word
by word from the end) only when the empty frames would not fit otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from engram.agents import details as _details
from engram.agents.tokens import Estimate, TokenCounter
from engram.ledger import Event
from engram.projections import concepts
from engram.projections.errors import QueryError

FRAMES = ("identity", "problem", "knowledge", "episodic", "constraints", "scratchpad")
_FRAME_OF = {"concept": "knowledge", "rule": "constraints", "signal": "scratchpad"}
#: The share of the budget kept for the situational rules, of what the always-on rules leave:
#: rules are taken first, and never trimmed to make room for memories (ADR 0057). At 500
#: tokens it holds three situational rules of a short line each, beside the always-on ones,
#: however many a reviewer marked (ADR 0142: three always-on rules had used the share up).
RULE_SHARE = 0.4
#: The most of the budget a frame may take (ADR 0082). Knowledge at most half: the seed's
#: 40-60%, so the last steps and outcomes always have room beside it; the scratchpad (pending
#: signals) a fifth. Episodic takes what is left.
SHARES: dict[str, float] = {"knowledge": 0.5, "scratchpad": 0.2}
#: How many items of each node type a frame keeps at most, the best first (ADR 0082): a
#: concept counts by its own type, anything else by its item type. Short, self-contained
#: types an agent uses many at a time (snippets, observations) keep more; abstract ones it
#: applies one at a time (patterns, plans, reflections) fewer.
TOP_K: dict[str, int] = {
    # knowledge: concepts by their type
    "snippet": 10, "fact": 8, "concept": 8, "skill": 6, "tool": 6, "pattern": 4,
    "episode": 4, "task": 4, "persona": 2,
    # episodic: memories, scars, reflections
    "observation": 10, "thought": 6, "plan": 4, "failure": 4, "victory": 4, "reflection": 4,
    # constraints and scratchpad
    "rule": 8, "signal": 8,
}  # fmt: skip
#: The top k of a node type :data:`TOP_K` does not name.
DEFAULT_TOP_K = 8
#: Tokens allowed per entry for the separators the whole frames add around it.
_SEPARATOR = 2
#: Tokens the ``details`` key and its quotes take in an entry.
_DETAILS_KEY = 5
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
    replaced_by: int | None = None  # the memory that replaced this one (ADR 0052, 0106)
    always: bool = False  # an always-on rule (tier 1): taken first, placed first, kept last
    refused: bool = False  # a scar whose lesson a reviewer refused: what happened only

    @property
    def node_type(self) -> str:
        """Return the type its top k counts by: a concept's own type, else the item type."""
        if self.frame == "knowledge":
            return str(self.event.payload.type)
        return self.type


@dataclass
class _Shown:
    """A chosen candidate and the details it shows ("" left out, None: it has none)."""

    candidate: Candidate
    details: str | None


def frame_of(item_type: str) -> str:
    """Return the frame an item type goes to (memories, scars, reflections: ``episodic``)."""
    return _FRAME_OF.get(item_type, "episodic")


def top_k(node_type: str) -> int:
    """Return the default top k of a node type."""
    return TOP_K.get(node_type, DEFAULT_TOP_K)


def encode(frames: Mapping[str, object]) -> str:
    """Return the frames as the compact JSON that is counted and saved."""
    return msgspec.json.encode(frames).decode()


def sections(frames: Mapping[str, object], counter: TokenCounter) -> dict[str, int]:
    """Return each frame's size in tokens, as ``counter`` counts its content's JSON."""
    return {name: counter.count(encode({name: content})) for name, content in frames.items()}


def assemble(
    agent: str,
    query: str,
    task: str,
    when: datetime,
    candidates: Sequence[Candidate],
    budget: int,
    counter: TokenCounter,
    *,
    cap: Callable[[str], int] = top_k,
    query_weights: Mapping[str, float] | None = None,
) -> tuple[dict[str, object], list[Candidate], int]:
    """Return the frames within ``budget`` tokens, the candidates in them (best first), and
    their token count.

    ``cap`` gives each node type's top k; ``query_weights`` (the query's words and their
    IDF) choose what a summary of details keeps.

    Raises:
        QueryError: even the empty frames with an empty problem exceed the budget.
    """
    weights = dict(query_weights or {})
    kept: dict[str, int] = {}
    ranked: list[Candidate] = []
    # Best first, the always-on rules before all (no type's cap leaves one out).
    for c in sorted(candidates, key=lambda c: (not c.always, -c.score, -c.event.position)):
        node = c.node_type
        if kept.get(node, 0) < cap(node):
            kept[node] = kept.get(node, 0) + 1
            ranked.append(c)
    identity = {"agent": agent, "as_of": when.isoformat(timespec="seconds")}
    problem = _fitting_problem(identity, query, task, budget, counter)
    used = counter.count(encode(render(identity, problem, [])))
    shown: list[_Shown] = []
    spent = dict.fromkeys(FRAMES, 0)
    # The rules go first: the always-on ones within the whole budget, the situational ones
    # within the rules' reserved share of what the always-on ones leave (ADR 0142); the rest
    # fill what is left.
    reserve: int | None = None
    rules = [c for c in ranked if c.frame == "constraints"]
    for c in rules + [c for c in ranked if c.frame != "constraints"]:
        if c.always:
            room = budget - used
        else:
            if reserve is None:  # the always-on rules are placed (ranked first)
                reserve = used + int(max(budget - used, 0) * RULE_SHARE)
            room = (min(reserve, budget) if c.frame == "constraints" else budget) - used
        if c.frame in SHARES:
            room = min(room, int(budget * SHARES[c.frame]) - spent[c.frame])
        fitted = _fit(c, room, weights)
        if fitted is not None:
            shown.append(fitted[0])
            used += fitted[1]
            spent[c.frame] += fitted[1]
    frames = _render(identity, problem, shown)
    tokens = counter.count(encode(frames))
    while tokens > budget and shown:
        _shrink(shown, weights)
        frames = _render(identity, problem, shown)
        tokens = counter.count(encode(frames))
    return frames, [s.candidate for s in shown], tokens


def _fit(c: Candidate, room: int, weights: dict[str, float]) -> tuple[_Shown, int] | None:
    """Return ``c`` as it fits in ``room`` tokens (whole, its details summarised, or its
    lead alone) and its estimated cost, or None when not even its lead fits."""
    # The estimate errs high, so the one count of the whole frames seldom trims after.
    full = _parts(c)[1]
    whole = _cost(c, full)
    if whole <= room:
        return _Shown(c, full), whole
    if not full:
        return None
    lead = _cost(c, "")
    if lead > room:
        return None
    extract = _details.summarise(full, room - lead - _DETAILS_KEY, weights)
    if extract:
        cost = _cost(c, extract)
        if cost <= room:
            return _Shown(c, extract), cost
    return _Shown(c, ""), lead


def _shrink(shown: list[_Shown], weights: dict[str, float]) -> None:
    """Make the frames smaller by one step: halve the weakest item's details, else drop the
    weakest item (``shown`` is rules first, then best first; rules leave last)."""
    others = [i for i, s in enumerate(shown) if s.candidate.frame != "constraints"]
    detailed = [i for i in others if shown[i].details]
    if detailed:
        s = shown[detailed[-1]]
        full = _parts(s.candidate)[1]
        half = _ESTIMATE.count(s.details or "") // 2
        s.details = _details.summarise(full, half, weights)
        return
    shown.pop(others[-1] if others else -1)


def _cost(c: Candidate, details: str | None) -> int:
    return _ESTIMATE.count(encode(_entry(c, details))) + _SEPARATOR


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
    """Lay ``chosen`` out in the six frames, each with its whole details."""
    return _render(identity, problem, [_Shown(c, _parts(c)[1]) for c in chosen])


def _render(
    identity: dict[str, Any], problem: dict[str, str], shown: Sequence[_Shown]
) -> dict[str, object]:
    knowledge: dict[str, Any] = {}
    lists: dict[str, list[dict[str, Any]]] = {"episodic": [], "constraints": [], "scratchpad": []}
    # In a frame by position, but the always-on rules first.
    for s in sorted(shown, key=lambda s: (not s.candidate.always, s.candidate.event.position)):
        if s.candidate.frame == "knowledge":
            _merge(knowledge, _entry(s.candidate, s.details))
        elif s.candidate.frame in lists:
            lists[s.candidate.frame].append(_entry(s.candidate, s.details))
    return {
        "identity": identity,
        "problem": problem,
        "knowledge": knowledge,
        "episodic": lists["episodic"],
        "constraints": lists["constraints"],
        "scratchpad": lists["scratchpad"],
    }


def _merge(tree: dict[str, Any], branch: dict[str, Any]) -> None:
    """Merge a one-concept tree into ``tree`` (paths are distinct concepts' ids)."""
    for key, value in branch.items():
        if key in tree and isinstance(tree[key], dict) and key != concepts.SELF:
            _merge(tree[key], value)
        else:
            tree[key] = value


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
        # What replaced it is the supersessions' to say again, as its text is the ledger's.
        return {k: v for k, v in entry.items() if k not in ("text", "details", "replaced_by")}
    return entry


def _parts(c: Candidate) -> tuple[str, str]:
    """Return what an item shows first and its details ("" when it is short)."""
    if c.frame == "knowledge":
        payload = dict(c.event.payload.payload)
        if len(encode(payload)) <= _details.LEAD_CHARS:
            return c.event.payload.label, ""
        return c.event.payload.label, _details.clip("\n".join(_flat(payload)))
    return _details.split(c.text)


def _flat(value: object, key: str = "") -> list[str]:
    """Return a concept's payload as ``key: value`` lines, depth first."""
    if isinstance(value, dict):
        return [line for k, v in value.items() for line in _flat(v, f"{key}.{k}" if key else k)]
    if isinstance(value, list):
        return [line for v in value for line in _flat(v, key)]
    return [f"{key}: {value}" if key else str(value)]


def _entry(c: Candidate, details: str | None = None) -> dict[str, Any]:
    """Return the candidate's entry in its frame (a one-concept tree for knowledge), with
    ``details`` as given ("" when they were left out)."""
    lead, full = _parts(c)
    if c.frame == "knowledge":
        node = concepts.tree([_concept(c.event)])
        if full:
            leaf = node
            for segment in c.event.payload.id.split("."):
                leaf = leaf[segment]
            own = leaf[concepts.SELF]
            del own["payload"]
            own["details"] = details or _details.MARK
        return node
    if full and not details and not lead.endswith(_details.MARK):
        lead += " " + _details.MARK
    entry: dict[str, Any] = {"pos": c.event.position, "type": c.type, "text": lead}
    if details:
        entry["details"] = details
    if c.frame == "episodic":
        entry["agent"] = getattr(c.event.payload, "agent", c.event.actor)  # a note: its reviewer
        entry["at"] = c.event.at.isoformat(timespec="seconds")
    if c.replaced_by is not None:
        entry["replaced_by"] = c.replaced_by
    if c.refused:  # its text is what happened only: marked, as recall marks it (ADR 0133)
        entry["refused"] = True
    if c.always:  # a reviewer's hard rule, in every frame: said so, beside the situational
        entry["always"] = True
    return entry


def _concept(event: Event) -> concepts.Concept:
    p = event.payload
    return concepts.Concept(
        p.id, p.type, p.label, p.agent, p.visibility, dict(p.payload), event.position, 0, 0, 1
    )
