"""The recall quality report: per-question scores, their means, the bootstrap interval, tables.

What :mod:`engram.bench.recall_bench` measures on LoCoMo or BEAM is kept here as one
:class:`Score` per question, mode and ``k``; this module turns them into the report's numbers
(means by category and by conversation, the headline ratio's 95% bootstrap interval, the
per-lever ablation) and its plain-text tables and JSON, for either data set: the categories
(number -> label) are the data set's. It knows nothing of ledgers or recall.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engram.bench import locomo

#: The ``k`` of every recall@k the report gives.
KS = (5, 10, 20)
#: The reference every mode is set against.
REFERENCE = "rank_bm25"
#: Bootstrap resamples of the questions for the headline ratio's interval.
RESAMPLES = 2_000


@dataclass(frozen=True)
class Score:
    """The recall of one question: which conversation, which question, its category."""

    conversation: str
    question: int  # the question's index within its conversation
    category: int
    value: float


class Scores:
    """Per-question recall@k, kept by mode and k; means by category or conversation."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, int], list[Score]] = {}

    def add(self, mode: str, k: int, score: Score) -> None:
        """Record one question's recall@k in ``mode``."""
        self.values.setdefault((mode, k), []).append(score)

    def mean(
        self, mode: str, k: int, category: int | None = None, conversation: str | None = None
    ) -> float | None:
        """Return the mean recall@k of ``mode``, or None if it scored no such question."""
        found = [
            s.value
            for s in self.values.get((mode, k), [])
            if category in (None, s.category) and conversation in (None, s.conversation)
        ]
        return statistics.fmean(found) if found else None

    def by_question(self, mode: str, k: int) -> dict[tuple[str, int], float]:
        """Return ``(conversation, question) -> recall@k`` of ``mode``."""
        return {(s.conversation, s.question): s.value for s in self.values.get((mode, k), [])}

    def conversations(self) -> list[str]:
        """Return the conversation ids in the order they were scored."""
        found = (s.conversation for scores in self.values.values() for s in scores)
        return list(dict.fromkeys(found))

    def modes(self) -> list[str]:
        """Return the modes that scored at least one question, the reference first."""
        names = [REFERENCE, *(mode for mode, _ in self.values)]
        return [n for n in dict.fromkeys(names) if self.mean(n, 10) is not None]


@dataclass(frozen=True)
class Interval:
    """A mode's recall@k against rank_bm25's on the same questions, with bootstrap bounds."""

    mode: str
    k: int
    questions: int
    resamples: int  # those whose reference mean was 0 are left out of the ratio's bounds
    seed: int
    ratio: float  # mean recall of the mode / mean recall of rank_bm25
    ratio_low: float  # 2.5th percentile over the resamples
    ratio_high: float  # 97.5th percentile
    difference: float  # mean per-question difference, mode minus rank_bm25
    difference_low: float
    difference_high: float
    better: int  # questions where the mode found more evidence than rank_bm25
    worse: int
    tied: int

    def as_json(self) -> dict[str, Any]:
        """Return the fields as a JSON object."""
        return dataclasses.asdict(self)


def bootstrap(
    scores: Scores, mode: str, k: int = 10, *, seed: int, resamples: int = RESAMPLES
) -> Interval | None:
    """Return the 95% bootstrap interval of ``mode``'s recall@k over rank_bm25's.

    The questions both scored are resampled with replacement (``seed``); in each resample
    both means are recomputed on the same questions, so the interval is of the paired
    ratio. None when no question was scored by both or rank_bm25 found no evidence at all.
    """
    import numpy as np

    ours, theirs = scores.by_question(mode, k), scores.by_question(REFERENCE, k)
    keys = [key for key in theirs if key in ours]
    engram = np.array([ours[key] for key in keys], dtype=np.float64)
    reference = np.array([theirs[key] for key in keys], dtype=np.float64)
    if not keys or reference.sum() == 0:
        return None
    picks = np.random.default_rng(seed).integers(0, len(keys), size=(resamples, len(keys)))
    means, reference_means = engram[picks].mean(axis=1), reference[picks].mean(axis=1)
    defined = reference_means > 0
    low, high = np.percentile(means[defined] / reference_means[defined], [2.5, 97.5])
    difference_low, difference_high = np.percentile(means - reference_means, [2.5, 97.5])
    gap = engram - reference
    return Interval(
        mode,
        k,
        len(keys),
        int(defined.sum()),
        seed,
        float(engram.mean() / reference.mean()),
        float(low),
        float(high),
        float(gap.mean()),
        float(difference_low),
        float(difference_high),
        int((gap > 0).sum()),
        int((gap < 0).sum()),
        int((gap == 0).sum()),
    )


def interval_text(interval: Interval) -> str:
    """Describe the headline ratio and its interval in one sentence."""
    return (
        f"{interval.mode} / {REFERENCE} recall@{interval.k} = {interval.ratio:.3f}, 95% CI "
        f"[{interval.ratio_low:.3f}, {interval.ratio_high:.3f}] ({interval.resamples:,} "
        f"bootstrap resamples of {interval.questions} questions, seed {interval.seed}); per "
        f"question {interval.difference:+.3f} [{interval.difference_low:+.3f}, "
        f"{interval.difference_high:+.3f}], more evidence on {interval.better}, less on "
        f"{interval.worse}, as much on {interval.tied}"
    )


def details(
    scores: Scores,
    headline: str | None,
    interval: Interval | None,
    categories: Mapping[int, str] = locomo.CATEGORIES,
) -> dict[str, Any]:
    """Return the whole quality report as JSON: modes, categories, conversations, interval."""
    modes = {
        name: {
            "recall": {f"@{k}": scores.mean(name, k) for k in KS},
            "categories": {
                label: {f"@{k}": scores.mean(name, k, category) for k in KS}
                for category, label in categories.items()
                if _asked(scores, category)
            },
        }
        for name in scores.modes()
    }
    return {
        "headline_mode": headline,
        "modes": modes,
        "questions_per_category": _category_counts(scores, categories),
        "conversations": [] if headline is None else conversation_rows(scores, headline),
        "interval": None if interval is None else interval.as_json(),
        "ablation": ablation_rows(scores),
    }


def conversation_rows(scores: Scores, mode: str) -> list[dict[str, Any]]:
    """Return one row per conversation: its questions, rank_bm25's and ``mode``'s recall@10."""
    rows = []
    for conversation in scores.conversations():
        reference = scores.mean(REFERENCE, 10, conversation=conversation)
        engram = scores.mean(mode, 10, conversation=conversation)
        count = sum(
            1 for s in scores.values.get((REFERENCE, 10), []) if s.conversation == conversation
        )
        ratio = engram / reference if engram is not None and reference else None
        rows.append(
            {
                "conversation": conversation,
                "questions": count,
                REFERENCE: reference,
                mode: engram,
                "ratio": ratio,
            }
        )
    return rows


def conversation_table(scores: Scores, mode: str) -> str:
    """Recall@10 per conversation, ``mode`` beside rank_bm25, as plain text."""
    rows = [["conversation", "questions", REFERENCE, mode, "ratio"]]
    for row in conversation_rows(scores, mode):
        cells = [row[REFERENCE], row[mode], row["ratio"]]
        rows.append(
            [
                row["conversation"],
                str(row["questions"]),
                *("-" if v is None else f"{v:.3f}" for v in cells),
            ]
        )
    return _text(rows)


#: Each lever of the ablation: its name, the mode with it, the mode without it.
LEVERS = (
    ("pruning (lexical)", "lexical", "lexical, no pruning"),
    ("pruning (hybrid)", "hybrid (minilm)", "hybrid (minilm), no pruning"),
    ("budget pruning (lexical; vs 2% share)", "lexical", "lexical, 2% pruning"),
    ("budget pruning (hybrid; vs 2% share)", "hybrid (minilm)", "hybrid (minilm), 2% pruning"),
    ("passages (minilm; vs whole text)", "minilm, passages", "minilm"),
    ("passages (hybrid; vs whole text)", "hybrid (minilm), passages", "hybrid (minilm)"),
    ("hybrid (vs minilm alone)", "hybrid (minilm)", "minilm"),
    ("hybrid (vs lexical alone)", "hybrid (minilm)", "lexical"),
    ("bloom (hybrid)", "hybrid (minilm)", "hybrid (minilm), no bloom"),
    ("porter stems (lexical)", "lexical", "lexical, unicode61"),
    ("porter stems (hybrid)", "hybrid (minilm)", "hybrid (minilm), unicode61"),
    ("RRF k=10 (hybrid; vs k=60)", "hybrid (minilm)", "hybrid (minilm), RRF k=60"),
    ("engram fusion (vs textbook RRF)", "hybrid (minilm)", "hybrid (minilm), textbook RRF"),
    ("recency + importance", "full", "hybrid (minilm)"),
)


def ablation_rows(scores: Scores) -> list[dict[str, Any]]:
    """Return, per lever, recall@5/10/20 with it and without it and the relative change."""
    rows = []
    for lever, on, off in LEVERS:
        for k in KS:
            with_it, without = scores.mean(on, k), scores.mean(off, k)
            if with_it is None or without is None:
                continue
            change = with_it / without - 1 if without else None
            rows.append({"lever": lever, "k": k, "on": with_it, "off": without, "change": change})
    return rows


def ablation_table(scores: Scores) -> str:
    """One lever off at a time: recall@k with and without it, and what it changes."""
    rows = [["lever", "@k", "with", "without", "change"]]
    for row in ablation_rows(scores):
        change = "-" if row["change"] is None else f"{row['change']:+.1%}"
        rows.append([row["lever"], str(row["k"]), f"{row['on']:.3f}", f"{row['off']:.3f}", change])
    return _text(rows)


def detail_table(
    scores: Scores, categories: Mapping[int, str] = locomo.CATEGORIES, title: str = "LoCoMo"
) -> str:
    """Recall@5/10/20 overall and per category, one row per mode, as plain text."""
    columns: list[tuple[str, int, int | None]] = [(f"@{k}", k, None) for k in KS]
    columns += [
        (f"{label}@10", 10, number)
        for number, label in categories.items()
        if _asked(scores, number)
    ]
    rows = [[f"{title} evidence recall", *(c[0] for c in columns)]]
    for name in scores.modes():
        cells = [scores.mean(name, k, category) for _, k, category in columns]
        rows.append([name, *("-" if v is None else f"{v:.3f}" for v in cells)])
    return f"{_text(rows)}\nquestions per category: {_category_counts(scores, categories)}"


def _text(rows: list[list[str]]) -> str:
    """Lay rows out as columns: the first left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    )


def _category_counts(scores: Scores, categories: Mapping[int, str]) -> dict[str, Any]:
    values = scores.values.get((REFERENCE, 10), [])
    return {
        label: sum(1 for s in values if s.category == number)
        for number, label in categories.items()
        if _asked(scores, number)
    }


def _asked(scores: Scores, category: int) -> bool:
    """Say whether the reference scored a question of ``category`` (BEAM's abstention has
    none: no evidence to find)."""
    return any(s.category == category for s in scores.values.get((REFERENCE, 10), []))
