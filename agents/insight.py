"""Where a reflection's words come from: focal questions, then insights citing evidence.

Two generators with one shape (Generative Agents' reflection, Park et al. 2023): from an
agent's recent memories, ``questions`` asks what is worth thinking about; from the memories
recalled for one question, ``insights`` draws beliefs, each citing the memories it rests on.

- :class:`OfflineGenerator`, the default: extractive and deterministic. A focal question is
  about a salient term of the recent memories (frequent across them, weighted by their
  importance and by how specific the term is); an insight states which other terms recur
  with it across the recalled memories, and who it concerns when one name dominates them.
  Every term an insight states is found in the memories it cites (:attr:`Draft.terms`).
- :class:`ModelGenerator`: a model through the completion port, asked for JSON objects
  validated against :class:`FocalQuestions` and :class:`InsightAnswer`; cited memories are
  numbers into the list it was shown, checked here.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Annotated, NamedTuple, Protocol

import msgspec

from engram.agents.completion.port import Completer, CompletionFormatError
from engram.ledger import Event

#: How many focal questions one reflection answers, and how many terms an insight names.
QUESTIONS = 3
TERMS = 3
#: A name must lead this share of an insight's evidence to be named as what it concerns.
SUBJECT_SHARE = 0.6
#: An importance absent from a memory counts as this (as recall and the trigger counters do).
NEUTRAL_IMPORTANCE = 5

_WORD = re.compile(r"\w+", re.UNICODE)
# A word that starts a sentence is capitalised whatever it is; a name is capitalised elsewhere.
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)$")
# Transcripts tag a line with its speaker ("Caroline: ..."): who a memory is from.
_SPEAKER = re.compile(r"\s*([A-Z][\w'-]{0,40}(?: [A-Z][\w'-]{0,40}){0,2}):\s")
# Function words, chat fillers, evaluative words and the words of this module's own
# sentences (an earlier reflection is evidence too): they say how, not what about.
_STOPWORD_TEXT = """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could did didn do does doesn doing
    don down during each even ever every few for from further get gets getting go goes going
    gonna got had has hasn have haven having he her here hers herself him himself his how i
    if in into is isn it its itself just know let like ll made make makes me might more most
    much must my myself need no nor not now of off often on once one only or other our ours
    ourselves out over own really same say said see she should so some still such than that
    the their theirs them themselves then there these they thing things think this those
    though through to too under until up us use used very want was wasn way we well were
    weren what when where which while who whom why will with without won would yet you your
    yours yourself yourselves ve re s t d m
    hey hi hello thanks thank wow yeah yes yep oh ok okay sure totally definitely great cool
    awesome nice glad good lot lots bit kind sounds sound feel feels felt time day today
    something anything everything always never maybe actually pretty super amazing
    important special happy proud excited lucky beautiful fun hard tough best better big
    little new old long last first next real true sweet gorgeous wonderful fantastic
    incredible inspiring sorry stoked thrilled grateful thankful lovely cute shares share
    check look looks looking since around away back across along already another anyone
    else enough everyone however instead less least many may nothing others perhaps rather
    several someone soon together toward upon whether within ago almost talk talked talking
    chat chatted happen happened happening went came come coming take took taken give gave
    tell told says seem seems try tried trying keep kept put done start started mean means
    meant stuff matters memories comes coming keeps"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


class Question(NamedTuple):
    """A focal question: its text (stored with the reflection) and what recall is asked."""

    text: str
    query: str


class Draft(NamedTuple):
    """An insight before it is appended: its text and the memories it rests on.

    ``terms`` are the words the text states that its evidence must hold (the offline
    generator's claims; empty from a model, whose text is its own).
    """

    text: str
    evidence: list[Event]
    terms: tuple[str, ...] = ()


class Generator(Protocol):
    """Asks focal questions of recent memories and draws insights from recalled ones."""

    @property
    def fingerprint(self) -> str:
        """Name the generator: ``"offline"``, or the completer's provider and model."""
        ...

    def questions(self, recent: Sequence[Event]) -> list[Question]:
        """Return the focal questions the recent memories raise (most salient first)."""
        ...

    def insights(self, question: Question, memories: Sequence[Event]) -> list[Draft]:
        """Return insights about ``question`` drawn from ``memories``, each citing some."""
        ...


def words(text: str) -> list[str]:
    """Return the content words of ``text``, lowercased (no stopwords, digits or 1-2 letters)."""
    return [
        w
        for w in (m.lower() for m in _WORD.findall(text))
        if len(w) > 2 and not w.isdigit() and w not in _STOPWORDS
    ]


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _importance(event: Event) -> int:
    value = getattr(event.payload, "importance", None)
    return NEUTRAL_IMPORTANCE if value is None else int(value)


class _Vocabulary:
    """The content words of some memories: which memories hold each, and how it is written."""

    def __init__(self, memories: Sequence[Event]) -> None:
        self.holding: dict[str, list[Event]] = defaultdict(list)
        self.forms: dict[str, Counter[str]] = defaultdict(Counter)
        self.capitalised: Counter[str] = Counter()  # written capitalised mid-sentence
        self.speakers: dict[int, str] = {}  # position -> who speaks, from a "Name: " tag
        for event in memories:
            text = event.payload.text
            tag = _SPEAKER.match(text)
            if tag:
                self.speakers[event.position] = tag[1]
            for word in dict.fromkeys(words(text)):
                self.holding[word].append(event)
            for match in _WORD.finditer(text):
                word = match[0].lower()
                if word not in self.holding:
                    continue
                self.forms[word][match[0]] += 1
                if match[0][0].isupper() and not _SENTENCE_START.search(text[: match.start()]):
                    self.capitalised[word] += 1

    def speaker_words(self) -> set[str]:
        """Return the words of the speakers' names: who talks, not what about."""
        return {w for name in self.speakers.values() for w in words(name)}

    def form(self, word: str) -> str:
        """Return how the word is most often written (``LGBTQ``, ``Caroline``, ``adoption``)."""
        # On a tie the lowercase form: a capital may only mean the word began a sentence.
        return min(self.forms[word].items(), key=lambda f: (-f[1], f[0] != f[0].lower(), f[0]))[0]

    def is_name(self, word: str) -> bool:
        """Say whether the word reads as a name: capitalised mid-sentence, nearly always."""
        total = sum(self.forms[word].values())
        upper = sum(n for form, n in self.forms[word].items() if form[0].isupper())
        return self.capitalised[word] > 0 and upper >= 0.8 * total


class OfflineGenerator:
    """Extractive, deterministic reflection: salient terms and what recurs with them.

    ``questions`` remembers how common each word is in the recent memories, so that
    ``insights`` names what recurs with a term more than everywhere else.
    """

    fingerprint = "offline"

    def __init__(self) -> None:
        self._common: dict[str, int] = {}  # word -> recent memories holding it
        self._recent = 0

    def _rarity(self, word: str) -> float:
        return math.log((self._recent + 2) / (self._common.get(word, 0) + 1))

    def questions(self, recent: Sequence[Event]) -> list[Question]:
        """Ask about the most salient terms: held by 2+ memories, by importance and rarity.

        Up to twice :data:`QUESTIONS`, best first: the caller stops once it has enough
        insights, so a term that yields none gives way to the next.
        """
        vocabulary = _Vocabulary(recent)
        n = len(recent)
        self._common = {w: len(holding) for w, holding in vocabulary.holding.items()}
        self._recent = n
        speakers = vocabulary.speaker_words()
        scored = []
        for word, holding in vocabulary.holding.items():
            if len(holding) < 2 or word in speakers:
                continue
            # Squared rarity: a term of a few memories beats one said everywhere in passing.
            rarity = math.log((n + 1) / len(holding)) ** 2
            scored.append((-sum(_importance(e) for e in holding) * rarity, word))
        chosen: list[str] = []
        covered: list[set[int]] = []
        for _, word in sorted(scored):
            held = {e.position for e in vocabulary.holding[word]}
            # A term found mostly beside a chosen one, or its plural, asks the same again.
            if any(len(held & seen) >= 0.7 * len(held) for seen in covered) or any(
                _stem(word) == _stem(other) for other in chosen
            ):
                continue
            chosen.append(word)
            covered.append(held)
            if len(chosen) == 2 * QUESTIONS:
                break
        return [
            Question(f"What do I know about {vocabulary.form(w)}?", vocabulary.form(w))
            for w in chosen
        ]

    def insights(self, question: Question, memories: Sequence[Event]) -> list[Draft]:
        """State what recurs with the question's term across the memories that hold it."""
        focal = words(question.query)
        if not focal:
            return []
        about = [e for e in memories if set(focal) <= set(words(e.payload.text))]
        vocabulary = _Vocabulary(about)
        # Speakers' names, and the short names they call each other by ("Mel"), say who
        # talks to whom, not what about.
        speakers = vocabulary.speaker_words()
        speakers |= {
            w
            for w in vocabulary.holding
            if vocabulary.is_name(w) and any(s.startswith(w) for s in speakers)
        }
        # What recurs beside the term (squared: recurring is the point), more than it does
        # everywhere (a lift, as in tf-idf).
        recurring = sorted(
            (-(len(holding) ** 2) * self._rarity(word), word)
            for word, holding in vocabulary.holding.items()
            if len(holding) >= 2 and word not in focal and word not in speakers
        )
        terms = [w for _, w in recurring][:TERMS]
        if not terms:
            return []
        stated = [set(focal) | {t} for t in terms]
        held = [e for e in about if any(s <= set(words(e.payload.text)) for s in stated)]
        # The memories that hold most of what the insight states come first.
        evidence = sorted(
            held, key=lambda e: (-len(set(terms) & set(words(e.payload.text))), e.position)
        )
        subject = _subject(vocabulary, evidence)
        shown = [vocabulary.form(t) for t in terms]
        listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
        topic = question.query
        if subject is not None:
            text = (
                f"{topic[:1].upper()}{topic[1:]} matters to {subject}: it comes"
                f" up in {len(evidence)} memories, with {listed}."
            )
        else:
            text = (
                f"{topic[:1].upper()}{topic[1:]} keeps coming up: {len(evidence)} memories,"
                f" with {listed}."
            )
        return [Draft(text, evidence, (*focal, *terms, *words(subject or "")))]


def _subject(vocabulary: _Vocabulary, evidence: Sequence[Event]) -> str | None:
    """Return who most of the evidence is from (its speaker tags), or the name most of it
    mentions when it has no speaker tags; None when no one leads :data:`SUBJECT_SHARE`."""
    need = SUBJECT_SHARE * len(evidence)
    speakers = vocabulary.speakers
    tagged = Counter(speakers[e.position] for e in evidence if e.position in speakers)
    if tagged:
        ranked = sorted(tagged.items(), key=lambda t: (-t[1], t[0]))
        if ranked[0][1] >= need:
            return ranked[0][0]
        # Shared by the two who speak most of it: a common ground.
        if len(ranked) >= 2 and ranked[0][1] + ranked[1][1] >= need:
            return f"{ranked[0][0]} and {ranked[1][0]}"
        return None
    held = Counter(w for e in evidence for w in set(words(e.payload.text)) if vocabulary.is_name(w))
    leading = sorted((-n, w) for w, n in held.items() if n >= need)
    return vocabulary.form(leading[0][1]) if leading else None


# -- a model through the completion port ------------------------------------------------------

Line = Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]


class FocalQuestions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The model's focal questions about the recent memories."""

    questions: Annotated[list[Line], msgspec.Meta(min_length=1, max_length=2 * QUESTIONS)]


class InsightItem(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One insight and the numbers of the memories it rests on."""

    text: Line
    evidence: Annotated[list[Annotated[int, msgspec.Meta(ge=1)]], msgspec.Meta(min_length=1)]


class InsightAnswer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The model's insights about one focal question."""

    insights: Annotated[list[InsightItem], msgspec.Meta(max_length=5)]


QUESTION_SYSTEM = (
    "You help an agent reflect on its memories. Given numbered statements, answer with a JSON"
    ' object {"questions": [...]} holding the 3 most salient high-level questions that can be'
    " answered about the subjects of the statements."
)
INSIGHT_SYSTEM = (
    "You help an agent reflect on its memories. Given a question and numbered statements,"
    ' answer with a JSON object {"insights": [{"text": ..., "evidence": [numbers]}]}: up to 5'
    " high-level insights that answer the question, each citing the numbers of the statements"
    " it is inferred from. Cite only numbers from the list."
)


def numbered(memories: Sequence[Event]) -> str:
    """Return the memories as the numbered statements a model is shown (1-based)."""
    return "\n".join(
        f"{i}. [{e.at.date().isoformat()}] {' '.join(e.payload.text.split())}"
        for i, e in enumerate(memories, start=1)
    )


class ModelGenerator:
    """Reflection by a model: questions and insights as validated JSON answers."""

    def __init__(self, completer: Completer) -> None:
        self.completer = completer

    @property
    def fingerprint(self) -> str:
        """Name the completer's provider and model."""
        return str(self.completer.fingerprint)

    def questions(self, recent: Sequence[Event]) -> list[Question]:
        """Ask the model for the focal questions; each is also the recall query."""
        answer = self.completer.complete(QUESTION_SYSTEM, numbered(recent), FocalQuestions)
        return [Question(q.strip(), q.strip()) for q in answer.questions if q.strip()]

    def insights(self, question: Question, memories: Sequence[Event]) -> list[Draft]:
        """Ask the model for insights; refuse an answer citing a number not in the list.

        Raises:
            CompletionFormatError: an insight cites a statement that was not shown.
        """
        if not memories:
            return []
        prompt = f"Question: {question.text}\n\nStatements:\n{numbered(memories)}"
        answer = self.completer.complete(INSIGHT_SYSTEM, prompt, InsightAnswer)
        drafts = []
        for i, item in enumerate(answer.insights, start=1):
            wrong = [n for n in item.evidence if n > len(memories)]
            if wrong:
                raise CompletionFormatError(
                    f"insight {i} cites statement(s) {wrong}; only 1..{len(memories)} were shown"
                )
            cited = [memories[n - 1] for n in dict.fromkeys(item.evidence)]
            drafts.append(Draft(item.text.strip(), cited))
        return drafts
