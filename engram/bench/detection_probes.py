"""The quality suite's detection probes: does observing a memory find what it replaces, and
only that? Two families, generated from templates with a seeded random generator:

- ``detection``: the people and attributes of :mod:`engram.bench.quality_probes` (the
  templates detection was developed against);
- ``detection-heldout``: other attributes, other wordings, other event logs, written before
  any measurement and never tuned on: the figure a user's own sentences are likelier to get.

Each person of a store gets, in time order: a fact of one attribute; a fact of another
attribute (true beside the first: replacing it is a wrong detection); two entries of a
log of repeated events that differ by their number ("fixed the parser in round 2", later
"round 26": both stay true, an event is not a state); then a change of the first attribute
(the one true replacement). Distractors about other people keep names rare, as in a real
store. A detection is right when it names the change as replacing the first fact.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from engram.bench.quality_probes import ATTRIBUTES, NAMES, Attribute, Store

__all__ = ["HELDOUT", "Detection", "add_history", "detection"]


@dataclass
class Detection(Store):
    """A store and the replacements it holds: ``(new index, old index)`` pairs."""

    truth: set[tuple[int, int]] = field(default_factory=set)
    changes: int = 0


#: Logs of repeated events: ``{n}`` the person, ``{k}`` the occurrence's number.
EVENTS = (
    "{n} fixed the parser in round {k}.",
    "{n} reviewed pull request {k} before lunch.",
    "{n} ran the migration on shard {k}.",
    "{n} closed ticket {k} after the call.",
)

HELDOUT = (
    Attribute(
        "manager",
        ("{n} reports to {v}.", "{n}'s manager is {v}."),
        ("{n} now reports to {v} after the reorganisation.", "{v} became {n}'s new manager."),
        (), (),
        ("Grace Hopper", "Alan Turing", "Ada Byrne", "Linus Moreno", "Margaret Okoye",
         "Ken Thompsen", "Barbara Liskova", "Donald Kanuth"),
    ),
    Attribute(
        "colour",
        ("{n}'s favourite colour is {v}.", "{n} likes {v} best of all colours."),
        ("{n} says {v} is now the favourite colour.", "These days {n} prefers {v}."),
        (), (),
        ("teal", "crimson", "amber", "violet", "olive", "navy", "coral", "ochre"),
    ),
    Attribute(
        "book",
        ("{n} is reading {v}.", "{n} started the novel {v}."),
        ("{n} finished the previous book and is now reading {v}.", "{n} switched to {v}."),
        (), (),
        ("Dune", "Middlemarch", "Beloved", "Solaris", "Rebecca", "Ulysses", "Emma",
         "Persuasion"),
    ),
    Attribute(
        "laptop",
        ("{n} uses a {v} laptop for work.", "{n}'s work computer is a {v}."),
        ("{n} replaced the work laptop with a {v}.", "{n} got a {v} as the new work computer."),
        (), (),
        ("ThinkPad X1", "MacBook Air", "Dell XPS 13", "Framework 13", "HP EliteBook",
         "Surface Laptop"),
    ),
    Attribute(
        "commute",
        ("{n} commutes by {v}.", "{n} gets to the office by {v}."),
        ("{n} has started commuting by {v}.", "{n} gave up the old commute and now goes by {v}."),
        (), (),
        ("bicycle", "train", "bus", "car", "scooter", "ferry", "tram"),
    ),
    Attribute(
        "address",
        ("{n}'s email address is {v}.", "{n} can be mailed at {v}."),
        ("{n}'s new email address is {v}.", "{n} changed email to {v}."),
        (), (),
        ("n.k@example.org", "first.last@example.com", "hello@example.net",
         "mail@example.io", "inbox@example.dev", "contact@example.eu"),
    ),
)  # fmt: skip
HELDOUT_EVENTS = (
    "{n} deployed build {k} to staging.",
    "{n} interviewed candidate {k} this morning.",
    "{n} answered support case {k}.",
    "{n} benchmarked configuration {k} overnight.",
)


def detection(
    rng: random.Random, start: datetime, *, heldout: bool = False, people: int = 24
) -> list[Detection]:
    """Return one store of ``people`` persons' facts, changes and event logs."""
    attributes = HELDOUT if heldout else ATTRIBUTES
    events = HELDOUT_EVENTS if heldout else EVENTS
    store = Detection()
    chosen = rng.sample(NAMES, people)
    others = [(n, a) for n in NAMES if n not in chosen for a in ATTRIBUTES]
    for name, attr in rng.sample(others, min(60, len(others))):
        # Other people's facts, one per attribute each (so none changes): names stay rare,
        # and two facts of one of them replacing each other is a wrong detection.
        text = rng.choice(attr.first).format(n=name, v=rng.choice(attr.values))
        store.add(text, start + timedelta(days=rng.uniform(0, 300)))
    for name in chosen:
        add_history(rng, store, name, attributes, events, start)
    return [store]


def add_history(
    rng: random.Random,
    store: Detection,
    subject: str,
    attributes: tuple[Attribute, ...],
    events: tuple[str, ...],
    start: datetime,
) -> None:
    """Add ``subject``'s history to ``store`` in time order: a fact of one attribute, a fact
    of another (true beside it), two numbered events of one log, then a change of the first
    fact, recorded in ``store.truth`` as the one true replacement."""
    first, other = rng.sample(attributes, 2)
    old, new = rng.sample(first.values, 2)
    at = start + timedelta(days=rng.uniform(0, 100))
    base = store.add(rng.choice(first.first).format(n=subject, v=old), at)
    at += timedelta(days=rng.uniform(1, 30))
    store.add(rng.choice(other.first).format(n=subject, v=rng.choice(other.values)), at)
    log = rng.choice(events)
    for number in sorted(rng.sample(range(1, 40), 2)):
        at += timedelta(days=rng.uniform(1, 30))
        store.add(log.format(n=subject, k=number), at)
    at += timedelta(days=rng.uniform(1, 30))
    change = store.add(rng.choice(first.change).format(n=subject, v=new), at)
    store.truth.add((change, base))
    store.changes += 1
