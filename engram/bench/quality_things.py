"""The quality suite's probes about things: what an agent's notes say of services, jobs and
budgets, not of people.

The ``updates`` and ``detection`` families speak of people ("Alice lives in Paris"), whose
names mark what a memory speaks of. An agent's own notes more often speak of the things it
works on: a service's port, a job's schedule, a version, a region, a rate limit, an owner;
their values are numbers, times and versions as often as words, and their changes are said
with verbs of their own ("rescheduled", "upgraded", "raised"). These templates were written
before any measurement of them and are not tuned on (ADR 0106):

- ``updates-things``: a fact of a thing and a later change of it among other things' facts,
  asked for the current state; generated twice, the second time with the dates swapped, as
  the ``updates`` family is;
- ``detection-things``: per thing, a fact, a fact of another attribute (true beside it), two
  numbered events of it ("incident 12 hit the mail relay": both stay true), then a change of
  the first fact; precision and recall of detection as for ``detection``.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from engram.bench.detection_probes import Detection, add_history
from engram.bench.quality_probes import Attribute, Plan, Store, add_updates

__all__ = ["THINGS", "THING_ATTRIBUTES", "thing_detection", "thing_updates"]

#: What the notes speak of: some named (a product's name), most not.
THINGS = (
    "payments gateway", "audit log shipper", "image resizer", "Atlas search service",
    "Nimbus scheduler", "report builder", "session store", "Orion dashboard", "mail relay",
    "feature flag service", "billing exporter", "Kestrel queue",
)  # fmt: skip

THING_ATTRIBUTES = (
    Attribute(
        "port",
        ("The {n} listens on port {v}.", "The {n} is served on port {v}."),
        ("We moved the {n} to port {v}.", "The {n} now answers on port {v}."),
        ("Which port does the {n} use now?", "What port is the {n} on currently?"),
        (),
        ("8080", "8443", "9000", "9090", "5000", "3000", "7070"),
    ),
    Attribute(
        "owner",
        ("The {n} is owned by {v}.", "{v} maintains the {n}."),
        ("Ownership of the {n} passed to {v}.", "{v} took over the {n} this quarter."),
        ("Who owns the {n} now?", "Who is currently responsible for the {n}?"),
        (),
        ("Dana Whitfield", "Raj Patel", "Mei Chen", "Omar Said", "Lucia Ferro", "Jon Ekberg"),
    ),
    Attribute(
        "schedule",
        ("The {n} job runs at {v} UTC.", "The {n} job is scheduled for {v} UTC."),
        ("The {n} job was rescheduled to {v} UTC.", "The {n} job now runs at {v} UTC."),
        ("When does the {n} job run now?", "What time is the {n} job scheduled for these days?"),
        (),
        ("01:00", "02:30", "04:00", "05:15", "22:45", "23:30"),
    ),
    Attribute(
        "version",
        ("The {n} runs version {v}.", "The {n} is on release {v}."),
        ("The {n} was upgraded to version {v}.", "We rolled the {n} forward to release {v}."),
        ("Which version is the {n} on now?", "What release does the {n} run currently?"),
        (),
        ("2.4.1", "2.5.0", "3.0.2", "3.1.0", "4.0.0-rc1"),
    ),
    Attribute(
        "region",
        ("The {n} is hosted in {v}.", "The {n} lives in the {v} region."),
        ("The {n} was migrated to {v}.", "We moved the {n} over to {v}."),
        ("Where is the {n} hosted now?", "Which region is the {n} in currently?"),
        (),
        ("eu-west-1", "us-east-2", "ap-south-1", "eu-central-1", "us-west-2"),
    ),
    Attribute(
        "limit",
        ("The {n} allows {v} requests per minute.", "The rate limit on the {n} is {v} a minute."),
        ("The rate limit on the {n} was raised to {v} a minute.",
         "The {n} now allows {v} requests per minute."),
        ("What is the rate limit on the {n} now?", "How many requests a minute does the {n}"
         " allow currently?"),
        (),
        ("100", "250", "500", "1000", "2000"),
    ),
)  # fmt: skip

#: Numbered events of a thing: ``{n}`` the thing, ``{k}`` the occurrence's number.
THING_EVENTS = (
    "Incident {k} hit the {n} this morning.",
    "We deployed build {k} of the {n}.",
    "Load test {k} on the {n} passed.",
    "The {n} failed health check {k} overnight.",
)


def _other_facts(
    rng: random.Random, store: Store, start: datetime, count: int, taken: set[tuple[str, str]]
) -> None:
    """Add ``count`` facts of random things and attributes, spread over 300 days; never of
    a (thing, attribute) in ``taken``, and never two of one (none of them changes)."""
    added = 0
    while added < count:
        attr, thing = rng.choice(THING_ATTRIBUTES), rng.choice(THINGS)
        if (thing, attr.name) in taken:
            continue
        taken.add((thing, attr.name))
        text = rng.choice(attr.first).format(n=thing, v=rng.choice(attr.values))
        store.add(text, start + timedelta(days=rng.uniform(0, 300)))
        added += 1


def thing_updates(rng: random.Random, start: datetime, cases: int = 24) -> list[Store]:
    """Return two stores: the cases as generated, and the same cases with dates swapped."""
    pairs = [(t, a) for t in THINGS for a in THING_ATTRIBUTES]
    chosen = rng.sample(pairs, cases)
    plans: list[Plan] = []
    for thing, attr in chosen:
        old, new = rng.sample(attr.values, 2)
        texts = (
            rng.choice(attr.first).format(n=thing, v=old),
            rng.choice(attr.change).format(n=thing, v=new),
        )
        first = start + timedelta(days=rng.uniform(0, 200))
        later = first + timedelta(days=rng.uniform(7, 90))
        plans.append((texts, first, later, rng.choice(attr.ask_now).format(n=thing)))
    stores = []
    seed = rng.random()
    for swapped in (False, True):
        store = Store()
        _other_facts(random.Random(seed), store, start, 20, {(t, a.name) for t, a in chosen})
        add_updates(store, plans, "updates-things", swapped=swapped)
        stores.append(store)
    return stores


def thing_detection(rng: random.Random, start: datetime) -> list[Detection]:
    """Return one store of every thing's facts, events and one change each."""
    store = Detection()
    for thing in THINGS:
        add_history(rng, store, thing, THING_ATTRIBUTES, THING_EVENTS, start)
    return [store]
