"""A second family of unanswerable questions, for a held-out check of recall's floor.

The quality suite's ``unanswerable`` family (:mod:`engram.bench.quality_probes`) asks about
people in a store of 75 short facts. This one differs in everything but the question it
puts: a store of a few hundred notes a household or a small team keeps (pets, rooms, trips,
tools, recipes, projects, neighbours), written in other words, and questions worded as a user
asks a memory service ("Do I have a note on ...", "Remind me ..."). Unanswerable questions:

- ``absent thing``: a thing of a kind the store holds, never mentioned, asked what others
  are asked;
- ``absent detail``: a thing the store holds, asked a detail no note gives of anything;
- ``absent topic``: a question on a topic the store never touches.

Nothing here was used to fit or to choose recall's calibration or its floor (ADR 0090): it
is run only to check that the floor's reason holds on questions it was not chosen on.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from engram.bench.quality_probes import Case, Store

__all__ = ["KINDS", "notes"]

#: Things a store holds, by kind: (kind, names); a store takes some of each, the others are
#: the absent ones of the kind.
THINGS = (
    ("pet", ("Biscuit", "Pepper", "Mochi", "Juniper", "Waffles", "Clementine", "Rascal",
             "Noodle", "Sprocket", "Marmalade", "Tofu", "Pickles")),
    ("project", ("Bluebird", "Kestrel", "Tundra", "Mosaic", "Lantern", "Quarry", "Harbor",
                 "Nimbus", "Orchard", "Basalt", "Cinder", "Meridian")),
    ("neighbour", ("Mrs Abernathy", "Mr Okonkwo", "Ms Valdivia", "Mr Lindgren",
                   "Mrs Castellano", "Mr Ferreira", "Ms Whitcombe", "Mr Nakamura",
                   "Mrs Delacroix", "Mr Oyelaran", "Ms Thorsen", "Mr Kapoor")),
    ("recipe", ("shakshuka", "ratatouille", "bibimbap", "moussaka", "gazpacho", "pierogi",
                "jambalaya", "tagine", "goulash", "risotto", "pho", "enchiladas")),
)  # fmt: skip
#: What notes say of a thing of each kind: (statement template, question templates, values).
DETAILS = {
    "pet": (
        (
            "{t} the cat is allergic to {v}.",
            ("Remind me what {t} the cat is allergic to.", "Is {t} allergic to anything?"),
            ("chicken", "pollen", "fish", "wheat", "dust mites"),
        ),
        (
            "{t} goes to the vet every {v}.",
            ("How often does {t} see the vet?", "Do I have a note on {t}'s vet visits?"),
            ("March", "spring", "six months", "autumn"),
        ),
        (
            "{t} sleeps in the {v} most nights.",
            ("Where does {t} sleep?", "Which room does {t} sleep in?"),
            ("laundry basket", "hallway", "attic", "spare bedroom"),
        ),
    ),
    "project": (
        (
            "Project {t} is deployed on {v}.",
            ("Where is project {t} deployed?", "What platform does {t} run on?"),
            ("Kubernetes", "bare metal", "Heroku", "Fly", "a Raspberry Pi"),
        ),
        (
            "The {t} repository is reviewed by {v}.",
            ("Who reviews the {t} repository?", "Who signs off {t} changes?"),
            ("Jordan", "Sam", "Priyanka", "the infra team", "Lars"),
        ),
        (
            "Project {t} has its demo on {v}.",
            ("When is the {t} demo?", "Remind me of the demo date for {t}."),
            ("Friday", "the 3rd", "Monday morning", "the last day of sprint"),
        ),
    ),
    "neighbour": (
        (
            "{t} keeps our spare key under the {v}.",
            ("Where does {t} keep our spare key?", "Do I have a note on {t} and the key?"),
            ("flower pot", "doormat", "garden gnome", "blue bucket"),
        ),
        (
            "{t} waters the plants when we travel, except on {v}.",
            ("When can't {t} water the plants?", "Which days is {t} unavailable for plants?"),
            ("Sundays", "Wednesdays", "weekends", "bank holidays"),
        ),
    ),
    "recipe": (
        (
            "The {t} needs {v} from the market.",
            ("What do I buy for the {t}?", "What does the {t} need from the market?"),
            ("smoked paprika", "fresh basil", "lamb shoulder", "chickpeas", "feta"),
        ),
        (
            "The {t} is baked at {v} degrees.",
            ("At what temperature is the {t} baked?", "How hot should the oven be for {t}?"),
            ("180", "200", "160", "220"),
        ),
    ),
}
#: Details no note gives of anything, per kind (asked of a thing the store holds).
ABSENT_DETAILS = {
    "pet": ("What is {t}'s microchip number?", "Which insurance covers {t}?"),
    "project": ("What licence does {t} use?", "How many stars does {t} have on its forge?"),
    "neighbour": ("What is {t}'s phone number?", "Does {t} have grandchildren?"),
    "recipe": ("How many calories are in the {t}?", "Which wine goes with the {t}?"),
}
#: Questions on topics no note touches.
ABSENT_TOPICS = (
    "What did the mechanic say about the brake pads?",
    "Which dentist did I book for the kids?",
    "What is the gate code for the marina?",
    "When does the library fine amnesty end?",
    "How much was the plumber's quote for the boiler?",
    "Which seats did we reserve at the opera?",
    "What is the warranty period of the dishwasher?",
    "Which hiking trail closed after the landslide?",
)
KINDS = ("answerable", "absent thing", "absent detail", "absent topic")


def notes(rng: random.Random, start: datetime, cases: int = 48, size: int = 300) -> list[Store]:
    """Return one store of about ``size`` notes with answerable and unanswerable questions
    (half each; the unanswerable split evenly over the three kinds); each case's ``family``
    names its kind (:data:`KINDS`)."""
    store = Store()
    held: list[tuple[str, str]] = []  # (kind, name) stored
    absent: list[tuple[str, str]] = []
    for kind, names in THINGS:
        chosen = rng.sample(names, len(names) * 2 // 3)
        held += [(kind, n) for n in chosen]
        absent += [(kind, n) for n in names if n not in chosen]
    said: list[tuple[str, str, int]] = []
    while len(store.memories) < size:
        kind, name = rng.choice(held)
        number = rng.randrange(len(DETAILS[kind]))
        template, _, values = DETAILS[kind][number]
        store.add(template.format(t=name, v=rng.choice(values)),
                  start + timedelta(days=rng.uniform(0, 300)))  # fmt: skip
        said.append((kind, name, number))
    for i in range(cases):
        if i % 2 == 0:
            kind, name, number = rng.choice(said)
            query = rng.choice(DETAILS[kind][number][1]).format(t=name)
            store.cases.append(Case(query, KINDS[0], answerable=True))
            continue
        which = (i // 2) % 3
        if which == 0:
            kind, name = rng.choice(absent)
            query = rng.choice(rng.choice(DETAILS[kind])[1]).format(t=name)
        elif which == 1:
            kind, name = rng.choice(held)
            query = rng.choice(ABSENT_DETAILS[kind]).format(t=name)
        else:
            query = rng.choice(ABSENT_TOPICS)
        store.cases.append(Case(query, KINDS[1 + which], answerable=False))
    return [store]
