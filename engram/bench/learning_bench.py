"""The learning loop, measured by what it changes: scripted multi-agent workloads.

Three workloads (:data:`WORKLOADS`): the one the thresholds were calibrated on
(:mod:`engram.bench.learning_workload`, twelve kinds of mistake), a check workload never
tuned on (:mod:`engram.bench.learning_check`, ten other kinds, other words), whose figures
are the ones to quote (ADR 0077), and a fresh one written apart from both, in other domains
(:mod:`engram.bench.learning_fresh`, ADR 0118). In each, six agents share a ledger; every
kind of mistake is recorded two or three times, by different agents, in their own words; the
learning step runs twice (after the first recordings, and after the repeats), a reviewer
applies the drafts (refusing two kinds of lesson and marking one rule always-on), then a new
agent asks for context frames on held-apart tasks worded differently again, and on unrelated
ones.
Each runs once with the hash embedder and once with MiniLM (the ``onnx`` or ``embeddings`` extra).

Figures (each beside its reference measured in the same run, the loop as it was before
ADR 0056/0057, where one exists):

- **repeat groups merged**: kinds of mistake whose scars all went into one suggestion that
  cites no other kind's scar (reference: one suggestion per scar); the duplicate rate is
  ``1 - kinds / suggestions``; a false merge is a suggestion citing two kinds;
- **dream groups found**: kinds with three or more scars that the dream's grouping finds
  whole and pure (reference: the former rule, cosine >= 0.85 and word overlap >= 0.5);
- **rule served for a task it applies to** (budget 2000; reference: the former BM25 match
  over every word) and at budget 500;
- **the right rule is the task's best match**: the embedder's ceiling, the tasks whose
  best-ranked situational rule, in the serving's own order (ADR 0098), is the right one (or
  whose right rule is always-on);
- **share of served rules that apply**: situational rules served for a task they apply to,
  over all situational rules served (unrelated tasks included);
- **drafts whose destination works with no config** and is served where its tier says;
- **refused lesson reaching an agent**: contexts whose frames carry a refused lesson's text;
- **margin serving** (ADR 0077): the same three serving figures had the rules been served
  as before the background test became the default (ADR 0092), with
  ``guidance.serve(..., clear=None)``, on the frame's own rules and query.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any, NamedTuple, cast

import numpy as np

from engram.agents import guidance
from engram.agents.context import build_context
from engram.agents.errors import AgentError
from engram.agents.lessons import Lessons
from engram.agents.meaning import calibration_for, content_words
from engram.agents.memory import AgentMemory
from engram.agents.scars import Scars
from engram.bench import learning_check, learning_fresh, learning_workload
from engram.bench.common import Config, Figure, log, remove_tree
from engram.bench.learning_workload import Mistake
from engram.bench.recall_bench import minilm
from engram.jobs import dream
from engram.ledger import Ledger, default_registry
from engram.projections import rules as rulebook
from engram.projections.base import Projection
from engram.projections.concepts import Concepts
from engram.projections.embedding import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    HashEmbedder,
    OnnxEmbedder,
)
from engram.projections.embedding.onnx_provider import ready as onnx_ready
from engram.projections.engine import ProjectionEngine
from engram.projections.inbox import Inbox
from engram.projections.lexical import LexicalIndex, tokens
from engram.projections.rules import RuleBook
from engram.projections.salience import SalienceIndex
from engram.projections.scars import ScarsTable
from engram.projections.semantic import SemanticIndex, VectorSearcher
from engram.projections.suggestions import SuggestionQueue

AGENTS = ("planner", "coder", "tester", "ops", "reviewer", "analyst")
WORKER = "newcomer"
NOW = datetime(2026, 11, 20, tzinfo=UTC)
#: The issue's goals, by figure.
GOALS = {
    "merged": 0.9,
    "dream": 1.0,
    "served": 0.95,
    "precision": 0.8,
    "served500": 1.0,
    "destinations": 1.0,
    "refused": 0.0,
}


class Workload(NamedTuple):
    """One scripted workload: its mistakes, tasks and memories, and the reviewer's choices."""

    name: str
    mistakes: tuple[Mistake, ...]
    unrelated: tuple[str, ...]
    noise: tuple[str, ...]
    refused: tuple[str, ...]
    always: str


def _workload(name: str, module: ModuleType) -> Workload:
    return Workload(
        name,
        module.MISTAKES,
        module.UNRELATED,
        module.NOISE,
        module.REFUSED,
        module.ALWAYS,
    )


#: The workload the thresholds were calibrated on, the check workload never tuned on (ADR
#: 0077), and the fresh one written apart from both (ADR 0118): the last two's figures are
#: the honest ones.
WORKLOADS = (
    _workload("tuned", learning_workload),
    _workload("check", learning_check),
    _workload("fresh", learning_fresh),
)


@dataclass
class Outcome:
    """One embedder's figures (numerators and denominators) and their references."""

    embedder: str
    values: dict[str, tuple[int, int]] = field(default_factory=dict)
    references: dict[str, tuple[int, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def share(self, key: str, reference: bool = False) -> float:
        """Return a figure as a share (0 when its denominator is 0)."""
        n, d = (self.references if reference else self.values).get(key, (0, 0))
        return n / d if d else 0.0


def run(config: Config) -> list[Figure]:
    """Run each workload under the hash embedder and MiniLM; return the figures."""
    embedders: list[tuple[str, Embedder]] = [("hash", HashEmbedder())]
    model = minilm_or_none(config.embedding_cache)
    if model is None:
        log("  learning: MiniLM skipped (pip install 'engram[onnx]' or 'engram[embeddings]')")
    else:
        embedders.append(("MiniLM", model))
    outcomes = [
        _measure(config, name if w is WORKLOADS[0] else f"{name} {w.name}", embedder, w)
        for w in WORKLOADS
        for name, embedder in embedders
    ]
    print(table(outcomes), flush=True)
    return _figures(outcomes)


_LABELS = {
    "merged": "repeat groups merged into one suggestion",
    "pairs": "kinds recorded twice that merged",
    "false": "suggestions citing two kinds (false merges)",
    "dream": "dream: kinds with >= 3 scars found whole",
    "served": "applied rule served for a task it applies to",
    "meaning": "... of which matched on meaning (not stop words)",
    "ceiling": "... the right rule is the task's best match",
    "precision": "share of served situational rules that apply",
    "unrelated": "unrelated tasks given a situational rule",
    "margin_served": "margin serving: rule served where it applies",
    "margin_precision": "margin serving: served rules that apply",
    "margin_unrelated": "margin serving: unrelated tasks given a rule",
    "served500": "applied rule served at budget 500",
    "destinations": "drafts whose destination works with no config",
    "refused": "contexts carrying a refused lesson's text",
}


def table(outcomes: Sequence[Outcome]) -> str:
    """Return the figures as a text table: one row per figure, one column per embedder."""
    head = f"{'learning figure':48} " + " ".join(f"{o.embedder:>16}" for o in outcomes)
    lines = [head + f" {'goal':>8}", "-" * len(head + " " * 9)]
    for key, label in _LABELS.items():
        cells = []
        for o in outcomes:
            n, d = o.values.get(key, (0, 0))
            cell = f"{n}/{d}"
            if key in o.references:
                rn, rd = o.references[key]
                cell += f" (was {rn}/{rd})"
            cells.append(f"{cell:>16}")
        goal = GOALS.get(key)
        goal_text = "" if goal is None else (f">= {goal:.2f}" if key != "refused" else "0")
        lines.append(f"{label:48} " + " ".join(cells) + f" {goal_text:>8}")
    for o in outcomes:
        for text in o.notes:
            lines.append(f"  [{o.embedder}] {text}")
    return "\n".join(lines)


def minilm_or_none(cache_path: str | None) -> Embedder | None:
    """Return MiniLM: sentence-transformers' where installed, else the ONNX runtime's (the
    same vectors and fingerprint, ADR 0061), cached in ``cache_path`` if given; or None."""
    model = minilm(cache_path)
    if model is not None or not onnx_ready():
        return model
    onnx = OnnxEmbedder(model="all-MiniLM-L6-v2")
    if cache_path is None:
        return onnx
    return CachedEmbedder(onnx, EmbeddingCache(cache_path))


def _figures(outcomes: Sequence[Outcome]) -> list[Figure]:
    out = []
    for o in outcomes:
        for key, label in _LABELS.items():
            n, d = o.values.get(key, (0, 0))
            reference = "the loop before ADR 0056/0057" if key in o.references else "-"
            figure = Figure(f"learning ({o.embedder}): {label}", "recall", reference, None)
            figure.engram_samples.append(o.share(key))
            if key in o.references:
                figure.reference_samples.append(o.share(key, reference=True))
            goal = GOALS.get(key)
            met = ""
            if goal is not None:
                ok = o.share(key) <= goal if key == "refused" else o.share(key) >= goal
                sign = "<=" if key == "refused" else ">="
                met = f"; goal {sign} {goal}: {'met' if ok else 'NOT met'}"
            figure.note = f"{n}/{d}{met}"
            out.append(figure)
    return out


def _measure(config: Config, name: str, embedder: Embedder, workload: Workload) -> Outcome:
    root = os.path.join(config.scratch, f"learning-{name.replace(' ', '-')}")
    outcome = Outcome(name)
    projections = projections_for(embedder)
    try:
        with (
            Ledger.open(f"{root}.db", default_registry()) as ledger,
            ProjectionEngine(ledger, f"{root}.store", projections) as engine,
        ):
            searcher = VectorSearcher(
                f"{root}.store", embedder.dimension, str(embedder.fingerprint)
            )
            kinds = record(ledger, engine, embedder, outcome, root, workload)
            lessons = Lessons(ledger, engine, embedder=embedder, home=f"{root}-home")
            outcome.references["merged"] = (0, len(workload.mistakes))
            review(lessons, kinds, outcome, workload)
            worker = AgentMemory(WORKER, ledger, engine, embedder=embedder, searcher=searcher)
            _tasks(worker, lessons, kinds, outcome, workload)
    finally:
        remove_tree(f"{root}.store")
    log(f"  learning ({name}): done")
    return outcome


def projections_for(embedder: Embedder) -> list[Projection]:
    """The projections a learning workload's ledger keeps (one fresh set per ledger)."""
    return [
        SalienceIndex(),
        LexicalIndex(),
        SemanticIndex(embedder),
        Inbox(),
        Concepts(),
        ScarsTable(),
        SuggestionQueue(),
        RuleBook(),
    ]


def record(
    ledger: Ledger,
    engine: ProjectionEngine,
    embedder: Embedder,
    outcome: Outcome,
    root: str,
    workload: Workload,
) -> dict[str, str]:
    """Record the noise and the scars in two rounds with a learning step after each; return
    each scar's kind of mistake by id, and measure the grouping figures."""
    at = NOW - timedelta(days=10)
    for i, text in enumerate(workload.noise):
        AgentMemory(AGENTS[i % len(AGENTS)], ledger, engine).observe(text, at=at)
    lessons = Lessons(ledger, engine, embedder=embedder, home=f"{root}-home")
    kinds: dict[str, str] = {}
    rounds: list[list[tuple[int, int]]] = [[], []]
    for m, mistake in enumerate(workload.mistakes):
        for t in range(len(mistake.scars)):
            # The first telling, and the second of every other kind, before the first step.
            early = t == 0 or (t == 1 and m % 2 == 0)
            rounds[0 if early else 1].append((m, t))
    told = 0
    for step, chosen in enumerate(rounds):
        for m, t in chosen:
            agent = AGENTS[(m + 2 * t) % len(AGENTS)]
            scar = workload.mistakes[m].scars[t]
            at = NOW - timedelta(days=5 - step, minutes=told)
            told += 1
            position = Scars(agent, ledger, engine).record("failure", scar.what, scar.lesson, at=at)
            (event,) = ledger.get([position])
            kinds[event.id] = workload.mistakes[m].key
        lessons.learn()
    drafted = lessons.suggestions()
    _grouping(drafted, kinds, outcome, workload.mistakes)
    _dream(ledger, engine, embedder, kinds, outcome, workload.mistakes)
    return kinds


def _grouping(
    drafted: Sequence[object],
    kinds: dict[str, str],
    outcome: Outcome,
    mistakes: Sequence[Mistake],
) -> None:
    by_kind: dict[str, list[set[str]]] = {}
    false_merges = 0
    for s in drafted:
        cited = {kinds[c] for c in s.scars if c in kinds}  # type: ignore[attr-defined]
        if len(cited) > 1:
            false_merges += 1
        for kind in cited:
            by_kind.setdefault(kind, []).append(set(s.scars))  # type: ignore[attr-defined]
    merged = pairs = pairs_merged = 0
    for mistake in mistakes:
        own = {i for i, k in kinds.items() if k == mistake.key}
        groups = by_kind.get(mistake.key, [])
        whole = len(groups) == 1 and own <= groups[0]
        clean = whole and all(kinds.get(c) == mistake.key for c in groups[0])
        merged += clean
        if len(mistake.scars) == 2:
            pairs += 1
            pairs_merged += clean
    outcome.values["merged"] = (merged, len(mistakes))
    outcome.values["pairs"] = (pairs_merged, pairs)
    outcome.values["false"] = (false_merges, len(drafted))
    duplicate = 1 - len(mistakes) / len(drafted) if drafted else 0.0
    outcome.notes.append(
        f"{len(drafted)} suggestions for {len(mistakes)} kinds of mistake "
        f"({len(kinds)} scars): duplicate rate {duplicate:.2f} (was "
        f"{1 - len(mistakes) / len(kinds):.2f}, one suggestion per scar)"
    )


def _dream(
    ledger: Ledger,
    engine: ProjectionEngine,
    embedder: Embedder,
    kinds: dict[str, str],
    outcome: Outcome,
    mistakes: Sequence[Mistake],
) -> None:
    """Group every scar as the dream groups its candidates; count whole, pure groups."""
    ids = list(kinds)
    events = ledger.get(sorted(e.position for e in ledger.read(kinds=["scar.recorded"])))
    by_id = {e.id: e for e in events}
    texts = [f"{by_id[i].payload.what} {by_id[i].payload.lesson}" for i in ids]
    vectors = embedder.embed(texts)
    candidates = [
        dream.Candidate(
            by_id[i].position,
            i,
            by_id[i].payload.lesson,
            np.asarray(v, dtype=np.float32),
            by_id[i].payload.what,
        )
        for i, v in zip(ids, vectors, strict=True)
    ]
    settings = dream.DreamSettings()
    found = dream.cluster(candidates, calibration_for(embedder), settings.threshold, embedder)
    former = _former_dream(candidates)
    big = [m.key for m in mistakes if len(m.scars) >= settings.min_size]
    for key, groups in (("dream", found), ("former", former)):
        hits = 0
        for kind in big:
            own = {i for i, k in kinds.items() if k == kind}
            hits += any({c.id for c in g} == own for g in groups)
        if key == "dream":
            outcome.values["dream"] = (hits, len(big))
        else:
            outcome.references["dream"] = (hits, len(big))


def _former_dream(candidates: Sequence[dream.Candidate]) -> list[list[dream.Candidate]]:
    """The dream's former grouping: leader clusters, cosine >= 0.85 and lesson Jaccard >= 0.5."""
    leaders: list[list[dream.Candidate]] = []
    for c in sorted(candidates, key=lambda c: c.position):
        v = np.asarray(c.vector)
        words = set(tokens(c.lesson))
        for group in leaders:
            lead = group[0]
            lv = np.asarray(lead.vector)
            cosine = float(v @ lv / (np.linalg.norm(v) * np.linalg.norm(lv) or 1.0))
            lw = set(tokens(lead.lesson))
            if cosine >= 0.85 and len(words & lw) / max(len(words | lw), 1) >= 0.5:
                group.append(c)
                break
        else:
            leaders.append([c])
    return leaders


def review(lessons: Lessons, kinds: dict[str, str], outcome: Outcome, workload: Workload) -> None:
    """Review every draft: refuse the refused kinds, mark one rule always-on, apply the rest
    (with no destination configured); count the destinations that worked."""
    worked = 0
    drafted = lessons.suggestions(["pending"])
    for s in drafted:
        kind = Counter(kinds[c] for c in s.scars if c in kinds).most_common(1)[0][0]
        try:
            if kind in workload.refused:
                lessons.refuse(s.id, "reviewer")
                worked += 1
                continue
            always = kind == workload.always and s.destination == "rules"
            lessons.apply(s.id, "reviewer", always=always)
            worked += 1
        except AgentError as error:
            outcome.notes.append(f"review of {s.id[:8]} ({s.destination}) failed: {error}")
    outcome.values["destinations"] = (worked, len(drafted))
    destinations = Counter(s.destination for s in drafted)
    outcome.notes.append(f"destinations drafted: {dict(destinations)}")


def _tasks(
    worker: AgentMemory,
    lessons: Lessons,
    kinds: dict[str, str],
    outcome: Outcome,
    workload: Workload,
) -> None:
    """Build the newcomer's frames for every task; count what the rules part did."""
    rule_kind: dict[int, str] = {}
    for r in lessons.rules():
        cited = Counter(kinds[c] for c in r.scars if c in kinds)
        if cited:
            rule_kind[r.position] = cited.most_common(1)[0][0]
    always = {r.position for r in lessons.rules() if r.always}
    refused_texts = [
        text
        for s in lessons.suggestions(["refused"])
        for text in [s.text, *(_lesson_of(lessons, c) for c in s.scars)]
        if text
    ]
    served = served500 = applicable = 0
    served_situational = served_right = 0
    unrelated_given = reached = contexts = 0
    former_served = former_meaning = 0
    texts = {r.position: r.text for r in lessons.rules()}
    tasks: list[tuple[str | None, str]] = [(m.key, t) for m in workload.mistakes for t in m.tasks]
    tasks += [(None, t) for t in workload.unrelated]
    in_force = [r for r in lessons.rules() if not r.always]
    evidence = evidence_of(lessons, in_force)
    best = 0
    margin = {"served": 0, "right": 0, "given": 0, "unrelated": 0}
    for kind, task in tasks:
        wanted = {p for p, k in rule_kind.items() if k == kind}
        for budget in (2000, 500):
            frame = build_context(worker, task, budget=budget, save=False)
            contexts += 1
            given = {e["pos"] for e in cast(list[dict[str, Any]], frame.frames["constraints"])}
            if _carries(frame.frames, refused_texts):
                reached += 1
            if budget == 2000:
                situational = given - always
                served_situational += len(situational)
                served_right += sum(rule_kind.get(p) == kind for p in situational)
                if kind is None and situational:
                    unrelated_given += 1
                _margin(margin, lessons.rules(), task, evidence, worker, rule_kind, kind)
            if kind is None or not wanted:
                continue
            if budget == 2000:
                applicable += 1
                best += _best_is(in_force, task, evidence, worker.embedder, wanted)
                served += bool(wanted & given)
                former = wanted & _former_rules(worker, task)
                former_served += bool(former)
                former_meaning += any(content_words(task) & content_words(texts[p]) for p in former)
            else:
                served500 += bool(wanted & given)
    outcome.values["served"] = (served, applicable)
    outcome.references["served"] = (former_served, applicable)
    # Served situational rules need content words or a calibrated cosine: all by meaning.
    outcome.values["meaning"] = (served, applicable)
    outcome.references["meaning"] = (former_meaning, applicable)
    outcome.values["served500"] = (served500, applicable)
    outcome.values["precision"] = (served_right, served_situational)
    outcome.values["ceiling"] = (best, applicable)
    outcome.values["unrelated"] = (unrelated_given, len(workload.unrelated))
    outcome.values["refused"] = (reached, contexts)
    outcome.values["margin_served"] = (margin["served"], applicable)
    outcome.values["margin_precision"] = (margin["right"], margin["given"])
    outcome.values["margin_unrelated"] = (margin["unrelated"], len(workload.unrelated))


def _margin(
    counts: dict[str, int],
    rules: Sequence[rulebook.Rule],
    task: str,
    evidence: dict[str, list[str]],
    worker: AgentMemory,
    rule_kind: dict[int, str],
    kind: str | None,
) -> None:
    """Count what the margin serving (ADR 0077) would serve for ``task``: the frame's own
    rules and query, ``clear=None``."""
    served = guidance.serve(rules, f"{task} ", evidence, worker.embedder, clear=None)
    given = {s.rule.position for s in served}
    situational = {s.rule.position for s in served if not s.rule.always}
    counts["given"] += len(situational)
    counts["right"] += sum(rule_kind.get(p) == kind for p in situational)
    counts["unrelated"] += kind is None and bool(situational)
    wanted = {p for p, k in rule_kind.items() if k == kind}
    counts["served"] += kind is not None and bool(wanted & given)


def evidence_of(lessons: Lessons, rules: Sequence[rulebook.Rule]) -> dict[str, list[str]]:
    """Return each rule's scars' texts by suggestion id, as the context frames read them."""
    from engram.projections.suggestions import scar_texts

    with lessons.engine.read() as conn:
        texts = scar_texts(conn, list(dict.fromkeys(s for r in rules for s in r.scars)))
    return {r.suggestion: [t for s in r.scars if s in texts for t in texts[s]] for r in rules}


def _best_is(
    rules: Sequence[rulebook.Rule],
    task: str,
    evidence: dict[str, list[str]],
    embedder: Embedder | None,
    wanted: set[int],
) -> bool:
    """Say whether the situational rule that matches ``task`` best (as the serving ranks
    them: by the situation score under the background test, by the typical one under the
    margin, ADR 0092) is a wanted one, or an always-on rule is wanted: the most any
    threshold on the match could serve."""
    if not wanted & {r.position for r in rules}:
        return bool(wanted)
    found = guidance.scores(rules, task, evidence, embedder)
    if guidance.stands_apart(embedder):
        top = max(range(len(rules)), key=lambda i: (found[i].situation, found[i].best, -i))
    else:
        top = max(range(len(rules)), key=lambda i: (found[i].typical, found[i].best))
    return found[top].best > 0 and rules[top].position in wanted


def _lesson_of(lessons: Lessons, scar: str) -> str:
    with lessons.engine.read() as conn:
        from engram.projections.suggestions import scar_texts

        found = scar_texts(conn, [scar])
    return found[scar][1] if scar in found else ""


def _carries(frames: object, texts: Sequence[str]) -> bool:
    """Say whether the frames hold one of ``texts`` as guidance (a rule, or a scar's lesson)."""
    blob = str(frames)
    return any(t and t in blob for t in texts)


def _former_rules(worker: AgentMemory, task: str) -> set[int]:
    """The rules the former constraints frame matched: BM25 over every word, any match."""
    with worker.engine.read() as conn:
        return {r.position for r in rulebook.rules_for_query(conn, task, 32)}


__all__ = [
    "GOALS",
    "WORKLOADS",
    "Outcome",
    "Workload",
    "evidence_of",
    "minilm_or_none",
    "projections_for",
    "record",
    "review",
    "run",
    "table",
]
