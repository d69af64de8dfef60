"""The quality suite's background: notes written from templates, none of them an update.

An agent's notes about its work repeat a few sentence shapes over many subjects: the same
attribute of twenty clients, the same value of ten patients, two attributes of one flat. A
default of ``supersede = "apply"`` must leave every such note alone, since each one is true
beside the others; a wrong supersession demotes a true note and labels it replaced. The
fourth and fifth rounds of probes written apart found detection replacing a tenth to a third
of such notes (ADRs 0122, 0123); this family keeps the count in the suite.

Four stores, one a domain (a veterinary practice, a school office, a theatre company, a
lettings desk), each of some 70-90 notes: every subject gets each attribute at most once,
and the values come from small pools, so many subjects share a value, as real notes do. The
templates and names are this module's own, written for it, and not those of any probe. The
figure is the share of notes no supersession touched (``kept``; goal 0.98).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from engram.bench.detection_probes import Detection

__all__ = ["DOMAINS", "background"]

#: Per domain: its subjects (each a dict of the names its templates use), its templates
#: (``{...}`` fields from the subject and ``VALUES``), and the pools values are drawn from.
Subject = dict[str, str]

_SURNAMES = (
    "Achterberg", "Baptiste", "Castellano", "Dervish", "Einarsdottir", "Fairweather",
    "Gallagher", "Haddad", "Iwasaki", "Jankowski", "Kowalczyk", "Lindahl", "Mbatha",
    "Nakamura", "Ostrowski", "Pellegrini", "Quarshie", "Rasmussen", "Szabo", "Thorne",
)  # fmt: skip
_FIRST = (
    "Amara", "Bruno", "Chiara", "Dmitri", "Esme", "Farouk", "Greta", "Hugo", "Ines",
    "Jasper", "Kalani", "Leona", "Milo", "Noor", "Otto", "Priyanka", "Rafael", "Saoirse",
)  # fmt: skip
_TITLES = ("Mr", "Mrs", "Ms", "Dr")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")

VALUES: dict[str, tuple[str, ...]] = {
    "kg": ("4", "6", "9", "12", "18", "25"),
    "vaccines": ("up to date", "due this month", "overdue"),
    "allergen": ("chicken", "beef", "penicillin", "flea collars"),
    "slot": ("mornings", "afternoons", "evenings"),
    "balance": ("40", "85", "120", "310"),
    "band": ("red", "amber", "green", "blue"),
    "room": ("4", "9", "12", "21"),
    "place": ("library", "sports hall", "music room", "art studio"),
    "budget": ("200", "350", "500", "800"),
    "minutes": ("95", "110", "125", "140"),
    "price": ("18", "24", "32", "45"),
    "builder": ("Corvid Scenery", "Halyard Workshop", "Brightline Sets"),
    "venue": ("Old Granary", "Drill Hall", "Riverside Studio"),
    "rent": ("950", "1,150", "1,400", "1,850"),
    "month": ("March", "June", "September", "November"),
    "rating": ("B", "C", "D"),
    "bedrooms": ("1", "2", "3"),
    "contractor": ("Pike Plumbing", "Ashdown Electrical", "Greenway Repairs"),
}

#: Each domain: subject kind and its templates. Every template is a true note of its own.
DOMAINS: dict[str, tuple[str, tuple[str, ...]]] = {
    "vets": (
        "pet",
        (
            "{pet}'s weight is {kg} kg.",
            "{pet}'s vaccination status is {vaccines}.",
            "{pet} is allergic to {allergen}.",
            "{pet}'s owner is {title} {surname}.",
            "{pet} is booked in with Dr {vet} on {day}.",
            "{title} {surname} prefers appointments in the {slot}.",
            "{title} {surname}'s account balance is {balance} pounds.",
        ),
    ),
    "school": (
        "teacher",
        (
            "{title} {surname}'s classroom is room {room}.",
            "{title} {surname} runs the {club} club.",
            "The {club} club meets in the {place} on {day}s.",
            "The {club} club's budget is {budget} pounds.",
            "{first} {surname}'s reading band is {band}.",
            "{first} {surname}'s emergency contact is {other} {surname}.",
            "{title} {surname} will cover the {club} club on {day}.",
        ),
    ),
    "theatre": (
        "show",
        (
            "The {show} production's director is {first} {surname}.",
            "The {show} production's running time is {minutes} minutes.",
            "Tickets for {show} cost {price} pounds.",
            "The set for {show} is built by {builder}.",
            "Rehearsals for {show} are held at the {venue}.",
            "{first} {surname} plays the lead in {show}.",
            "The {show} cast meets on {day}s for notes.",
        ),
    ),
    "lettings": (
        "flat",
        (
            "The {street} flat's rent is {rent} pounds a month.",
            "The tenant of the {street} flat is {title} {surname}.",
            "The {street} flat's lease ends in {month}.",
            "The {street} flat's energy rating is {rating}.",
            "The {street} flat has {bedrooms} bedrooms.",
            "{contractor} handles repairs at the {street} flat.",
            "The {street} flat's boiler was last serviced in {month}.",
        ),
    ),
}

_PETS = ("Biscuit", "Pepper", "Juniper", "Waffles", "Clementine", "Bramble", "Marlowe",
         "Tansy", "Ziggy", "Nutmeg", "Ravioli", "Hazel")  # fmt: skip
_CLUBS = ("chess", "robotics", "choir", "debating", "gardening", "drama", "coding",
          "photography", "astronomy", "cookery", "knitting", "film")  # fmt: skip
_SHOWS = ("Hamlet", "Pygmalion", "Medea", "Arcadia", "Volpone", "Cymbeline", "Antigone",
          "Tartuffe", "Peer Gynt", "The Seagull", "Uncle Vanya", "Blithe Spirit")  # fmt: skip
_STREETS = ("Larch Street", "Quayside", "Mill Lane", "Orchard Row", "Bishop's Walk",
            "Canal Wharf", "Elm Terrace", "Foundry Yard", "Heron Close", "Kiln Road",
            "Station Parade", "Tannery Court")  # fmt: skip


def _subjects(rng: random.Random, domain: str) -> list[Subject]:
    """Return the domain's twelve subjects, each with the names its templates use."""
    names = {"vets": _PETS, "school": _CLUBS, "theatre": _SHOWS, "lettings": _STREETS}[domain]
    key = {"vets": "pet", "school": "club", "theatre": "show", "lettings": "street"}[domain]
    surnames = rng.sample(_SURNAMES, len(names))
    return [
        {
            key: name,
            "surname": surname,
            "title": rng.choice(_TITLES),
            "first": rng.choice(_FIRST),
            "other": rng.choice(_FIRST),
            "vet": rng.choice(_SURNAMES),
            "day": rng.choice(_DAYS),
        }
        for name, surname in zip(names, surnames, strict=True)
    ]


def background(rng: random.Random, start: datetime) -> list[Detection]:
    """Return one store a domain: each subject's notes, about six in seven of its templates,
    values drawn from the pools, spread over 300 days; no note replaces another."""
    stores = []
    for domain, (_kind, templates) in DOMAINS.items():
        store = Detection()
        for subject in _subjects(rng, domain):
            for template in templates:
                if rng.random() < 1 / 7:
                    continue
                fields = {**subject, **{k: rng.choice(v) for k, v in VALUES.items()}}
                store.add(template.format(**fields), start + timedelta(days=rng.uniform(0, 300)))
        stores.append(store)
    return stores
