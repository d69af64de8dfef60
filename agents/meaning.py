"""How alike two texts of the lessons loop are: an embedder's cosine, calibrated, and words.

Two questions are asked of texts in the lessons loop, with one answer each (ADR 0056):

- **repeat**: do two scars tell the same mistake? (:func:`repeat_score`)
- **applies**: does a lesson apply to a task? (:func:`applies_score`)

Each answer combines the embedder's cosine, read against that embedder's own calibration
(:class:`Calibration`: where its paraphrases sit, where unrelated texts sit), with the words
that carry meaning: lowercased, stop words dropped, lightly stemmed (:func:`content_words`).
A cosine is mapped onto 0..1 between the embedder's "unrelated" and "paraphrase" levels, so
one threshold on the mapped score means the same thing for every embedder; a text pair that
shares enough content words counts whatever the embedder says. Scores are pure functions of
their inputs (no model is called here: vectors are given).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engram.projections.embedding import Embedder

__all__ = [
    "APPLIES",
    "CALIBRATIONS",
    "COHESION",
    "DEFAULT_CALIBRATION",
    "REPEAT",
    "STOPWORDS",
    "Calibration",
    "VectorCache",
    "applies_score",
    "calibration_for",
    "calibration_of",
    "content_words",
    "mapped",
    "overlap",
    "repeat_score",
]

#: Mapped scores at or above these mean "a repeat" and "applies" (ADR 0056, 0067).
REPEAT = 0.6
APPLIES = 0.4
#: No pair inside a group of repeats may score below this (a group's cohesion, ADR 0067).
COHESION = 0.35
#: The share of content words two lessons share (their Dice coefficient) that makes them
#: repeats by their words alone (ADR 0145).
HALF = 0.5

_STOPWORD_TEXT = """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could did didn do does doesn doing
    don down during each even ever every few for from further get gets getting go goes going
    got had has hasn have haven having he her here hers herself him himself his how i if in
    into is isn it its itself just let like ll made make makes me might more most much must
    my myself need needs no nor not now of off often on once one only or other our ours
    ourselves out over own same so some still such than that the their theirs them
    themselves then there these they this those though through to too under until up us use
    used using very was wasn way we well were weren what when where which while who whom why
    will with without won would yet you your yours yourself yourselves ve re s t d m
    always never should shall may first before whenever instead every any all each just
    sure ensure make made things thing something anything new old also because since lets
    keep kept avoid remember prefer try take put
    actually really simply quite basically literally definitely certainly probably already
    """
#: Function words and the words of any instruction ("always", "make sure", "keep",
#: "avoid"), and the adverbs that only stress ("actually", "really"): they say how, not
#: what about.
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# A light suffix stripper (Porter's step 1 in spirit): "backups", "backed", "backing" meet.
_SUFFIXES = ("ies", "ing", "ed", "es", "ly", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            if suffix == "ies":
                return stem + "y"
            if suffix in ("ing", "ed") and len(stem) > 3 and stem[-1] == stem[-2]:
                stem = stem[:-1]  # "logged" -> "log"
            return stem
    return word


def content_words(text: str) -> frozenset[str]:
    """Return the words of ``text`` that carry meaning: no stop words, digits or 1-2 letters."""
    out = set()
    for raw in _WORD.findall(text.lower()):
        if len(raw) < 3 or raw.isdigit() or raw in STOPWORDS:
            continue
        out.add(_stem(raw))
    return frozenset(out)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Return the Dice coefficient of two word sets (0 when either is empty)."""
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))


@dataclass(frozen=True)
class Calibration:
    """Where one embedder's cosines sit: unrelated texts near ``floor``, paraphrases at
    ``paraphrase`` and above (measured, ADR 0056)."""

    floor: float
    paraphrase: float

    def __post_init__(self) -> None:
        if not -1.0 <= self.floor < self.paraphrase <= 1.0:
            raise ValueError(f"calibration needs -1 <= floor < paraphrase <= 1, got {self}")


#: Calibrations by (provider, model); the default is used for an embedder not listed.
CALIBRATIONS: dict[tuple[str, str], Calibration] = {
    ("hash", "*"): Calibration(floor=0.15, paraphrase=0.65),
    ("sentence-transformers", "sentence-transformers/all-MiniLM-L6-v2"): Calibration(
        floor=0.15, paraphrase=0.55
    ),
}
DEFAULT_CALIBRATION = Calibration(floor=0.15, paraphrase=0.60)


def calibration_for(embedder: Embedder | None) -> Calibration | None:
    """Return the calibration of ``embedder`` (None without one: words only)."""
    if embedder is None:
        return None
    return calibration_of(embedder.fingerprint.provider, embedder.fingerprint.model)


def calibration_of(provider: str, model: str) -> Calibration:
    """Return the calibration of the embedder ``provider`` / ``model`` (the default if unknown)."""
    for (known, name), calibration in CALIBRATIONS.items():
        if provider == known and name in ("*", model):
            return calibration
    return DEFAULT_CALIBRATION


def mapped(cosine: float, calibration: Calibration) -> float:
    """Return ``cosine`` on 0..1 between the calibration's floor (0) and paraphrase (1)."""
    value = (cosine - calibration.floor) / (calibration.paraphrase - calibration.floor)
    return float(min(max(value, 0.0), 1.0))


def _cosine(a: npt.NDArray[np.float32] | None, b: npt.NDArray[np.float32] | None) -> float:
    if a is None or b is None:
        return 0.0
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return 0.0
    return float(a @ b) / (na * nb)


def repeat_score(
    words_a: frozenset[str],
    words_b: frozenset[str],
    vector_a: npt.NDArray[np.float32] | None = None,
    vector_b: npt.NDArray[np.float32] | None = None,
    calibration: Calibration | None = None,
    lesson_a: npt.NDArray[np.float32] | None = None,
    lesson_b: npt.NDArray[np.float32] | None = None,
    what_a: npt.NDArray[np.float32] | None = None,
    what_b: npt.NDArray[np.float32] | None = None,
) -> float:
    """Return how surely two scars tell one mistake (0..1), from their lessons' content words
    (``words_*``), their whole vectors (what happened and the lesson), their lessons' and
    what happened in each (``what_*``).

    Either view may carry a paraphrase (ADR 0067): the larger of the whole scars' and the
    lessons' calibrated cosines counts, provided the lessons are not unrelated (their cosine
    above the calibration's floor; without lesson vectors, one content word shared) — two
    lessons drawn from one situation stay apart. The lessons alone carry it only where what
    happened is not unrelated either: one lesson drawn from two unrelated situations ("put
    new stock behind the old", "ship patches in the quiet window", both "do it in the right
    order") tells two mistakes (ADR 0185). Half the lessons' content words shared (two at
    least) is a repeat whatever the vectors say.
    """
    shared = len(words_a & words_b)
    # Half the words (Dice) reaches REPEAT, no fewer (two shared of seven and four did, ADR 0145).
    lexical = min(overlap(words_a, words_b) * REPEAT / HALF, 1.0) if shared >= 2 else 0.0
    if calibration is None or vector_a is None or vector_b is None:
        return lexical
    whole = mapped(_cosine(vector_a, vector_b), calibration)
    if lesson_a is not None and lesson_b is not None:
        agree = mapped(_cosine(lesson_a, lesson_b), calibration)
        unrelated = (
            what_a is not None
            and what_b is not None
            and mapped(_cosine(what_a, what_b), calibration) <= 0.0
        )
        if unrelated:
            agree = min(agree, whole)  # unrelated situations: the whole scars decide
        semantic = max(whole, agree) if agree > 0 else 0.0
    else:
        semantic = whole if shared else 0.0
    return max(semantic, lexical)


def applies_score(
    task_words: frozenset[str],
    lesson_words: frozenset[str],
    cosine: float | None = None,
    calibration: Calibration | None = None,
) -> float:
    """Return how surely a lesson applies to a task (0..1).

    Words: the share of the lesson's content words the task holds, needing two of them (one
    shared word, "file" or "data", is no match). With an embedder, the calibrated cosine
    counts too; the larger wins.
    """
    shared = len(task_words & lesson_words)
    lexical = 0.0
    if shared >= 2 and lesson_words:
        lexical = min(1.0, 2 * shared / len(lesson_words))
    if calibration is None or cosine is None:
        return lexical
    return max(mapped(cosine, calibration), lexical)


class VectorCache:
    """Vectors of texts by one embedder, kept between calls (rules are few and re-read)."""

    def __init__(self, embedder: Embedder, limit: int = 4096) -> None:
        self.embedder = embedder
        self.limit = limit
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}

    def vectors(
        self, texts: Sequence[str], *, transient: bool = False
    ) -> list[npt.NDArray[np.float32]]:
        """Return one unit vector per text, embedding only those not seen before;
        ``transient`` texts (a task) are kept here but by no cache on disk
        (:meth:`~engram.projections.embedding.Embedder.embed_transient`)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            if len(self._vectors) + len(missing) > self.limit:
                self._vectors.clear()
            embed = self.embedder.embed_transient if transient else self.embedder.embed
            for text, vector in zip(missing, embed(missing), strict=True):
                v = np.asarray(vector, dtype=np.float32)
                norm = float(np.linalg.norm(v))
                self._vectors[text] = v / norm if norm else v
        return [self._vectors[t] for t in texts]
