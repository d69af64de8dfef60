"""The quality suite's probes, generated from templates with a seeded random generator.

Four families, one per complaint a user of a memory service raises most:

- ``updates``: a fact, then a later fact about the same person and attribute with another
  value, among distractors; asked for the current state. Every case is generated twice, the
  second time with the two texts' dates swapped, so the text alone cannot win both.
- ``copies``: facts about one topic, a few of them stored 3-5 times with small variations
  (case, punctuation, a prefix, one word changed), among distractors on other topics.
- ``unanswerable``: facts about people; questions about a stored person's stored attribute
  (answerable) beside questions about an absent person, an absent attribute of a stored
  person, or an absent topic (unanswerable).
- ``ids``: 500 memories, some holding an id or error code verbatim, with distractors holding
  ids one or two characters away; the query quotes one id.

Nothing here is tuned to engram: the cases come from many names, attributes and values, so a
change that wins on them wins on the kind of question, not on a handful of sentences.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

__all__ = [
    "Case",
    "Plan",
    "Probe",
    "Store",
    "add_updates",
    "copies",
    "ids",
    "unanswerable",
    "updates",
]

NAMES = (
    "Alice Moreau", "Bilal Haddad", "Chen Wei", "Dmitri Volkov", "Eva Lindqvist",
    "Farah Qureshi", "Gustavo Pereira", "Hana Sato", "Ivan Petrov", "Julia Novak",
    "Kwame Mensah", "Lena Fischer", "Mateo Rossi", "Nadia Karimi", "Oscar Brennan",
    "Priya Raman", "Quentin Dubois", "Rosa Jimenez", "Samir Nasser", "Tanya Orlova",
    "Umar Farouk", "Vera Kowalski", "Wen Liu", "Ximena Castro", "Yusuf Demir",
    "Zara Ahmed", "Arjun Mehta", "Beatrice Hale", "Carlos Ibarra", "Daria Smirnova",
    "Emil Jansen", "Fiona Walsh", "Goran Petrovic", "Helga Berg", "Ibrahim Toure",
    "Jonas Weber", "Keiko Tanaka", "Luca Bianchi", "Marta Silva", "Nikos Pappas",
)  # fmt: skip
ABSENT_NAMES = (
    "Zoltan Varga", "Ingrid Solberg", "Tomasz Zielinski", "Amara Okafor", "Hugo Laurent",
    "Svetlana Ivanova", "Diego Herrera", "Mei Lin", "Rashid Khan", "Olga Popescu",
)  # fmt: skip


@dataclass(frozen=True)
class Attribute:
    """A thing said of a person: how it is first said, how a change is said, how asked."""

    name: str
    first: tuple[str, ...]  # templates with {n} and {v}
    change: tuple[str, ...]
    ask_now: tuple[str, ...]  # templates with {n}
    ask: tuple[str, ...]
    values: tuple[str, ...]


ATTRIBUTES = (
    Attribute(
        "city",
        ("{n} lives in {v}.", "{n} has an apartment in {v} and lives there."),
        ("{n} moved to {v}.", "{n} relocated to {v} last week."),
        ("Where does {n} live now?", "Which city is {n} currently living in?"),
        ("Where does {n} live?", "Which city is {n}'s home?"),
        (
            "Paris",
            "Berlin",
            "Lisbon",
            "Nairobi",
            "Osaka",
            "Toronto",
            "Krakow",
            "Lima",
            "Melbourne",
            "Oslo",
            "Seoul",
            "Dublin",
            "Austin",
            "Porto",
            "Tallinn",
        ),
    ),
    Attribute(
        "employer",
        ("{n} works at {v}.", "{n} is employed by {v} as an engineer."),
        ("{n} started a new job at {v}.", "{n} left for a position at {v}."),
        ("Where does {n} work now?", "Who is {n}'s current employer?"),
        ("Where does {n} work?", "Which company employs {n}?"),
        (
            "Acme Robotics",
            "Northwind Bank",
            "Globex Energy",
            "Initech",
            "Umbrella Health",
            "Stark Logistics",
            "Wayne Foods",
            "Hooli Cloud",
            "Vandelay Imports",
            "Soylent Labs",
        ),
    ),
    Attribute(
        "car",
        ("{n} drives a {v}.", "{n}'s car is a {v}."),
        ("{n} sold the old car and bought a {v}.", "{n} now drives a {v}."),
        ("What car does {n} drive these days?", "What is {n}'s car now?"),
        ("What car does {n} drive?", "Which car does {n} own?"),
        (
            "red Volvo estate",
            "blue Toyota Corolla",
            "white Tesla Model 3",
            "green Skoda Octavia",
            "black Ford Ranger",
            "silver Honda Civic",
            "yellow Fiat Panda",
            "grey BMW i3",
        ),
    ),
    Attribute(
        "team",
        ("{n} is on the {v} team.", "{n} belongs to the {v} team."),
        ("{n} transferred to the {v} team.", "{n} joined the {v} team this month."),
        ("Which team is {n} on now?", "What team does {n} currently belong to?"),
        ("Which team is {n} on?", "What team is {n} part of?"),
        (
            "payments",
            "search",
            "mobile",
            "infrastructure",
            "data platform",
            "security",
            "growth",
            "billing",
            "identity",
            "observability",
        ),
    ),
    Attribute(
        "diet",
        ("{n} eats a {v} diet.", "{n} follows a {v} diet."),
        ("{n} switched to a {v} diet.", "{n} changed to eating {v}."),
        ("What diet does {n} follow now?", "What does {n} currently eat?"),
        ("What diet does {n} follow?", "What does {n} eat?"),
        (
            "vegan",
            "vegetarian",
            "pescatarian",
            "keto",
            "gluten-free",
            "low-sodium",
            "Mediterranean",
            "paleo",
        ),
    ),
    Attribute(
        "phone",
        ("{n}'s phone number is {v}.", "You can reach {n} on {v}."),
        ("{n} changed phone number to {v}.", "{n} got a new number: {v}."),
        ("What is {n}'s phone number now?", "What is {n}'s latest phone number?"),
        ("What is {n}'s phone number?", "How can I call {n}?"),
        (
            "+44 20 7946 0011",
            "+33 1 70 18 99 02",
            "+49 30 1234 5678",
            "+1 415 555 0143",
            "+81 3 5550 1234",
            "+351 21 555 0199",
            "+48 22 555 0177",
            "+61 2 5550 1288",
        ),
    ),
    Attribute(
        "instrument",
        ("{n} plays the {v}.", "{n} practises the {v} every evening."),
        ("{n} took up the {v} instead.", "{n} gave up the old instrument for the {v}."),
        ("What instrument does {n} play now?", "Which instrument is {n} playing currently?"),
        ("What instrument does {n} play?", "Which instrument does {n} practise?"),
        ("cello", "violin", "piano", "drums", "saxophone", "bass guitar", "trumpet", "harp"),
    ),
)
#: Attributes never stored for anyone: the unanswerable "stored person, absent attribute".
ABSENT_ATTRIBUTES = (
    "What is {n}'s blood type?",
    "When is {n}'s birthday?",
    "What is {n}'s shoe size?",
    "Which school did {n}'s children attend?",
    "What is the name of {n}'s dog?",
    "What is {n}'s favourite football club?",
)
OFF_TOPIC = (
    "What is the boiling point of the reactor coolant?",
    "Which airline lost the luggage on the Singapore trip?",
    "How many solar panels are on the warehouse roof?",
    "What was the final score of the chess tournament?",
    "Which vaccine did the clinic run out of in March?",
    "What is the wifi password at the mountain cabin?",
    "Who won the pie baking contest at the village fair?",
    "What colour were the curtains in the old office?",
)
TOPICS = (
    (
        "the Falcon project",
        (
            "uses PostgreSQL 16 for its main storage",
            "ships a release every second Tuesday",
            "is owned by the platform group",
            "has its staging cluster in Frankfurt",
            "pages the on-call engineer through Opsgenie",
            "keeps its secrets in Vault",
            "runs its load tests on Thursday nights",
            "was started to replace the legacy CRM",
            "has a budget review every quarter",
            "stores uploads in an S3 bucket in eu-west-1",
            "needs two approvals on every pull request",
            "publishes metrics to Prometheus",
            "uses feature flags from LaunchDarkly",
            "retains audit logs for seven years",
        ),
    ),
    (
        "the garden",
        (
            "gets watered at six every morning",
            "has tomatoes along the south fence",
            "needs the hedge trimmed in June",
            "has a compost heap behind the shed",
            "lost two apple trees in the storm",
            "has a pond with goldfish",
            "is fertilised with seaweed in April",
            "has raspberries near the gate",
            "gets visits from a fox at night",
            "has a greenhouse for the chillies",
            "needs new gravel on the path",
            "has a bench under the walnut tree",
            "floods near the lower lawn after heavy rain",
            "has bee hives at the far end",
        ),
    ),
    (
        "the wedding",
        (
            "is on the 14th of June",
            "takes place at the lake house",
            "has 120 guests invited",
            "will be catered by Rosa's kitchen",
            "has a jazz trio booked for the evening",
            "needs the rings picked up on Friday",
            "has a vegetarian menu option",
            "has the rehearsal dinner on the Thursday",
            "uses blue and silver decorations",
            "has shuttle buses from the station",
            "has a photographer from Lisbon",
            "has its cake tasting next week",
            "needs name cards for every table",
            "ends with fireworks over the water",
        ),
    ),
    (
        "the quarterly audit",
        (
            "starts on the first Monday of the month",
            "is run by an external firm",
            "covers the payroll system this time",
            "needs the access logs exported",
            "found two stale admin accounts last time",
            "requires signed vendor contracts",
            "checks the backup restore drills",
            "reviews every firewall change",
            "asks for the incident reports of the quarter",
            "samples twenty expense claims",
            "needs the data retention policy",
            "takes about three weeks",
            "reports to the board in the following month",
            "flags unpatched servers",
        ),
    ),
)
VARIANTS: tuple[Callable[[str], str], ...] = (
    lambda s: s.lower(),
    lambda s: s.rstrip(".") + "!",
    lambda s: "Note: " + s,
    lambda s: "Reminder - " + s[0].lower() + s[1:],
    lambda s: s.upper(),
    lambda s: "  " + s.replace(" ", "  ", 1) + "  ",
    lambda s: s.rstrip(".") + ", as mentioned before.",
    lambda s: "FYI " + s,
)


@dataclass
class Store:
    """What one probe store holds: texts with their times and the cases asked of it."""

    memories: list[tuple[str, datetime]] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)

    def add(self, text: str, at: datetime) -> int:
        """Add a memory; return its index (order of observation once sorted by time)."""
        self.memories.append((text, at))
        return len(self.memories) - 1


@dataclass
class Case:
    """One question and what a good answer holds (indexes into the store's memories)."""

    query: str
    family: str
    current: int | None = None  # updates: the memory true now
    stale: int | None = None  # updates: the memory it replaced
    answerable: bool = True
    groups: dict[int, int] = field(default_factory=dict)  # copies: memory -> fact
    target: int | None = None  # ids: the one memory holding the id


Probe = tuple[str, list[Store]]


def _distractors(
    rng: random.Random,
    store: Store,
    start: datetime,
    count: int,
    taken: frozenset[tuple[str, str]] = frozenset(),
) -> None:
    """Add ``count`` facts about random people and attributes, spread over 300 days.

    ``taken`` pairs (person, attribute) are left alone: a distractor never says something
    else of what a case asks."""
    added = 0
    while added < count:
        attr, name = rng.choice(ATTRIBUTES), rng.choice(NAMES)
        if (name, attr.name) in taken:
            continue
        text = rng.choice(attr.first).format(n=name, v=rng.choice(attr.values))
        store.add(text, start + timedelta(days=rng.uniform(0, 300)))
        added += 1


#: An update's plan: (the fact, its change), when each is observed, the question asked.
Plan = tuple[tuple[str, str], datetime, datetime, str]


def updates(rng: random.Random, start: datetime, cases: int = 30) -> list[Store]:
    """Return two stores: the cases as generated, and the same cases with dates swapped."""
    plans: list[Plan] = []
    people = rng.sample(NAMES, min(cases, len(NAMES)))
    for i in range(cases):
        attr = ATTRIBUTES[i % len(ATTRIBUTES)]
        old, new = rng.sample(attr.values, 2)
        texts = (
            rng.choice(attr.first).format(n=people[i % len(people)], v=old),
            rng.choice(attr.change).format(n=people[i % len(people)], v=new),
        )
        first = start + timedelta(days=rng.uniform(0, 200))
        later = first + timedelta(days=rng.uniform(7, 90))
        query = rng.choice(attr.ask_now).format(n=people[i % len(people)])
        plans.append((texts, first, later, query))
    taken = frozenset(
        (people[i % len(people)], ATTRIBUTES[i % len(ATTRIBUTES)].name) for i in range(cases)
    )
    stores = []
    for swapped in (False, True):
        store = Store()
        _distractors(random.Random(rng.random()), store, start, 80, taken)
        add_updates(store, plans, "updates", swapped=swapped)
        stores.append(store)
    return stores


def add_updates(store: Store, plans: list[Plan], family: str, *, swapped: bool) -> None:
    """Add each plan's fact and change to ``store`` and ask its question; ``swapped`` gives
    each text the other's date, so the text alone cannot win both stores."""
    for (a, b), first, later, query in plans:
        older, newer = (b, a) if swapped else (a, b)
        stale = store.add(older, first)
        current = store.add(newer, later)
        store.cases.append(Case(query, family, current=current, stale=stale))


def copies(rng: random.Random, start: datetime, rounds: int = 8) -> list[Store]:
    """Return stores each holding one topic's facts, some copied 3-5 times with variations."""
    stores = []
    for r in range(rounds):
        topic, facts = TOPICS[r % len(TOPICS)]
        store = Store()
        _distractors(random.Random(rng.random()), store, start, 60)
        for other, others in TOPICS:
            if other != topic:
                for fact in rng.sample(others, 4):
                    store.add(f"{other[0].upper()}{other[1:]} {fact}.", start)
        chosen = rng.sample(facts, 12)
        copied = set(rng.sample(range(len(chosen)), 4))
        groups: dict[int, int] = {}
        for number, fact in enumerate(chosen):
            text = f"{topic[0].upper()}{topic[1:]} {fact}."
            at = start + timedelta(days=rng.uniform(0, 300))
            groups[store.add(text, at)] = number
            if number in copied:
                for variant in rng.sample(VARIANTS, rng.randint(2, 4)):
                    at += timedelta(days=rng.uniform(0.1, 20))
                    groups[store.add(variant(text), at)] = number
        query = rng.choice(
            ("What do we know about {t}?", "Tell me about {t}.", "What are the facts on {t}?")
        ).format(t=topic)
        store.cases.append(Case(query, "copies", groups=groups))
        stores.append(store)
    return stores


def unanswerable(rng: random.Random, start: datetime, cases: int = 40) -> list[Store]:
    """Return one store of facts about people with answerable and unanswerable questions."""
    store = Store()
    people = rng.sample(NAMES, 25)
    held: list[tuple[str, Attribute]] = []
    for person in people:
        for attr in rng.sample(ATTRIBUTES, 3):
            text = rng.choice(attr.first).format(n=person, v=rng.choice(attr.values))
            store.add(text, start + timedelta(days=rng.uniform(0, 300)))
            held.append((person, attr))
    for i in range(cases):
        if i % 2 == 0:
            person, attr = rng.choice(held)
            query = rng.choice(attr.ask).format(n=person)
            store.cases.append(Case(query, "unanswerable", answerable=True))
            continue
        kind = (i // 2) % 3
        if kind == 0:  # an absent person, an attribute others have
            attr = rng.choice(ATTRIBUTES)
            query = rng.choice(attr.ask).format(n=rng.choice(ABSENT_NAMES))
        elif kind == 1:  # a stored person, an attribute nobody has
            query = rng.choice(ABSENT_ATTRIBUTES).format(n=rng.choice(people))
        else:
            query = rng.choice(OFF_TOPIC)
        store.cases.append(Case(query, "unanswerable", answerable=False))
    return [store]


def _code(rng: random.Random) -> str:
    letters = "".join(rng.choices(string.ascii_uppercase, k=rng.randint(1, 3)))
    digits = "".join(rng.choices(string.digits, k=rng.randint(3, 5)))
    tail = "".join(rng.choices(string.ascii_uppercase + string.digits, k=rng.randint(2, 4)))
    return rng.choice((f"{letters}{digits}-{tail}", f"{letters}-{digits}", f"0x{digits}{tail}"))


def _near(rng: random.Random, code: str) -> str:
    """Return ``code`` with one or two characters changed."""
    chars = list(code)
    spots = [i for i, c in enumerate(chars) if c.isalnum()]
    for i in rng.sample(spots, min(len(spots), rng.randint(1, 2))):
        pool = string.digits if chars[i].isdigit() else string.ascii_uppercase
        chars[i] = rng.choice([c for c in pool if c != chars[i]])
    return "".join(chars)


ID_TEMPLATES = (
    "Deploy failed with error {c} in the billing worker.",
    "The customer ticket {c} was escalated to tier two.",
    "Build {c} broke the nightly integration run.",
    "Invoice {c} was paid twice and needs a refund.",
    "The crash report {c} points at a null pointer in the parser.",
    "Order {c} shipped from the Rotterdam warehouse.",
    "Alert {c} fired when the disk on db-3 filled up.",
    "License key {c} expires at the end of the quarter.",
)
ID_QUERIES = ("What happened with {c}?", "{c}", "Tell me about {c}.", "error {c}")


def ids(rng: random.Random, start: datetime, cases: int = 20, size: int = 500) -> list[Store]:
    """Return one store of ``size`` memories; ``cases`` hold an id quoted by a query."""
    store = Store()
    codes: list[str] = []
    while len(codes) < cases:
        code = _code(rng)
        if code not in codes:
            codes.append(code)
    near_count = 4
    filler = size - cases * (1 + near_count)
    _distractors(random.Random(rng.random()), store, start, filler)
    for code in codes:
        template = rng.choice(ID_TEMPLATES)
        target = store.add(template.format(c=code), start + timedelta(days=rng.uniform(0, 300)))
        for _ in range(near_count):
            other = _near(rng, code)
            if other in codes:
                other = other + "9"
            # The near miss shares the sentence, so vectors put it right beside the target.
            text = rng.choice([template, *ID_TEMPLATES]).format(c=other)
            store.add(text, start + timedelta(days=rng.uniform(0, 300)))
        store.cases.append(Case(rng.choice(ID_QUERIES).format(c=code), "ids", target=target))
    return [store]
