"""The quality suite's detection figures: how well observing a memory finds what it replaces.

A default of ``supersede = "apply"`` is only as good as detection's precision: a wrong
supersession demotes a true memory and labels it replaced. For each family of
:mod:`engram.bench.detection_probes` and each embedder, the store is observed in time order
as an opened engram does (policy ``apply``), and the ``memory.superseded`` events detection
appended are read back from the ledger:

- precision: the share of detections that name a real change as replacing its fact;
- recall: the share of real changes detected so.

Three families: the people of the probes' templates, held-out people's templates, and the
things of :mod:`engram.bench.quality_things` (held out too). A fourth,
:mod:`engram.bench.quality_background`, holds no change at all: notes written from
templates about many subjects, of which the share no supersession touched is printed
(``kept``).
"""

from __future__ import annotations

import functools
import os
import random
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from engram.agents.memory import AgentMemory
from engram.bench import detection_probes as probes
from engram.bench import quality_background, quality_things
from engram.bench.common import Figure, log, remove_tree
from engram.ledger import Ledger, default_registry
from engram.projections.copies import Copies
from engram.projections.embedding import Embedder
from engram.projections.engine import ProjectionEngine
from engram.projections.lexical import LexicalIndex
from engram.projections.salience import SalienceIndex
from engram.projections.semantic import SemanticIndex, VectorSearcher
from engram.projections.supersession import Supersessions

__all__ = ["GOALS", "detection_figures", "measure"]

#: What a default of ``apply`` needs: few wrong supersessions, most changes found, and
#: notes that change nothing left alone.
GOALS = {"precision": 0.95, "recall": 0.8, "kept": 0.98}
#: Each family: how its store is generated, and its generator's seed suffix.
FAMILIES: dict[str, tuple[Callable[[random.Random, datetime], list[probes.Detection]], str]] = {
    "detection": (probes.detection, "tuned"),
    "detection-heldout": (functools.partial(probes.detection, heldout=True), "heldout"),
    "detection-things": (quality_things.thing_detection, "things"),
    "detection-background": (quality_background.background, "background"),
}
#: The figures printed for each family: the background holds no change to find.
FIGURES = {"detection-background": ("kept",)}


def measure(
    embedder: Embedder, seed: int, scratch: str, *, heldout: bool = False, family: str = ""
) -> dict[str, float]:
    """Observe one generated family (``family``, else the tuned or ``heldout`` people's) with
    detection applying; return its counts and figures."""
    now = datetime.now(UTC).replace(microsecond=0)
    generate, suffix = FAMILIES[family or ("detection-heldout" if heldout else "detection")]
    rng = random.Random(f"{seed}:{suffix}")
    found: set[tuple[int, int]] = set()
    truth: set[tuple[int, int]] = set()
    changes = memories = 0
    for store in generate(rng, now - timedelta(days=400)):
        offset = memories  # each store's indexes, made distinct across the family
        got = _observed(embedder, store, scratch)
        found |= {(new + offset, old + offset) for new, old in got}
        truth |= {(new + offset, old + offset) for new, old in store.truth}
        changes += store.changes
        memories += len(store.memories)
    right = len(found & truth)
    touched = len({old for _, old in found - truth})
    return {
        "detected": float(len(found)),
        "right": float(right),
        "changes": float(changes),
        "precision": right / len(found) if found else 1.0,
        "recall": right / changes if changes else 1.0,
        "memories": float(memories),
        "kept": 1.0 - touched / memories if memories else 1.0,
    }


def _observed(embedder: Embedder, store: probes.Detection, scratch: str) -> set[tuple[int, int]]:
    """Observe ``store`` in time order with detection applying; return the (new, old) index
    pairs of the supersessions it appended."""
    directory = tempfile.mkdtemp(prefix="detection-", dir=scratch)
    try:
        ledger = Ledger.open(
            os.path.join(directory, "ledger.db"), default_registry(), durability="fast"
        )
        where = os.path.join(directory, "store")
        projections = [SalienceIndex(), LexicalIndex(), SemanticIndex(embedder), Copies(),
                       Supersessions()]  # fmt: skip
        engine = ProjectionEngine(ledger, where, projections)
        searcher = VectorSearcher(where, embedder.dimension, str(embedder.fingerprint))
        memory = AgentMemory(
            "user", ledger, engine, embedder=embedder, searcher=searcher, supersede="apply"
        )
        try:
            order = sorted(range(len(store.memories)), key=lambda i: store.memories[i][1])
            index = {memory.observe(store.memories[i][0], at=store.memories[i][1]): i
                     for i in order}  # fmt: skip
            return {
                (index[e.payload.position], index[old])
                for e in ledger.read(0, kinds=["memory.superseded"])
                for old in e.payload.replaces
            }
        finally:
            engine.close()
            ledger.close()
    finally:
        remove_tree(directory)


def detection_figures(name: str, embedder: Embedder, seed: int, scratch: str) -> list[Figure]:
    """Return precision and recall of detection on each family under ``embedder``."""
    figures = []
    for family in FAMILIES:
        got = measure(embedder, seed, scratch, family=family)
        note = (
            f"{got['right']:.0f} right of {got['detected']:.0f} detected;"
            f" {got['changes']:.0f} real changes"
        )
        if family in FIGURES:
            note = (
                f"{got['memories'] * (1 - got['kept']):.0f} of {got['memories']:.0f} notes"
                f" replaced, none a change ({got['detected']:.0f} supersessions)"
            )
        for figure_name in FIGURES.get(family, ("precision", "recall")):
            figure = Figure(f"quality {family} {figure_name} ({name})", "share", "goal", 1.0)
            figure.engram_samples.append(got[figure_name])
            figure.reference_samples.append(GOALS[figure_name])
            figure.note = note
            figures.append(figure)
            log(f"    {name:6} {family + ' ' + figure_name:28} {got[figure_name]:6.3f}"
                f" (goal {GOALS[figure_name]:g}): {note}")  # fmt: skip
    return figures
