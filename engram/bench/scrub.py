"""The personal-data scrubber: throughput, and what it changes in ordinary conversation.

- **False positives**: every LoCoMo turn (conversation with no personal data of the kinds
  the scrubber removes) is scrubbed; each turn it changes is a false positive, counted by
  category and listed with ``--show``.
- **Throughput**: scars built from LoCoMo sentences (a ``what`` and a ``lesson`` each), one
  in five holding a planted email, phone, key, IP or card number, scrubbed as the learning
  step does (both fields); scars per second, best of ``--repeat`` runs. The reference in the
  same run is one ``re.sub`` of a single email pattern over the same texts: the floor any
  regex scrubber pays for one pass.

- **A peer** (``--peer``): scrubadub's default ``Scrubber`` over the same turns and scars,
  when it is importable (it is not a dependency): its changed turns, its rate, and which
  planted kinds it leaves.

Run: ``python -m engram.bench.scrub [--locomo FILE] [--scars N] [--show] [--peer]``.
"""

from __future__ import annotations

import argparse
import random
import re
import time
from collections import Counter

from engram.agents.privacy import scrub
from engram.bench import locomo

_PLANTS = (
    "ops@example.com",
    "+1 415-555-0134",
    "sk-proj-abcdefghijklmnop1234",
    "10.20.30.40",
    "4111 1111 1111 1111",
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")


def scars(sentences: list[str], count: int, seed: int) -> list[tuple[str, str]]:
    """Return ``count`` (what, lesson) pairs from LoCoMo sentences, one in five with a plant."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        what, lesson = rng.choice(sentences), rng.choice(sentences)
        if i % 5 == 0:
            what = f"{what} (reported by {_PLANTS[i // 5 % len(_PLANTS)]})"
        out.append((what, lesson))
    return out


def main(argv: list[str] | None = None) -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(prog="python -m engram.bench.scrub")
    parser.add_argument("--locomo", help="the LoCoMo JSON file (default: the shared dev set)")
    parser.add_argument("--scars", type=int, default=20_000, help="scars for the throughput")
    parser.add_argument("--repeat", type=int, default=3, help="runs; the best is reported")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--show", action="store_true", help="list the turns changed")
    parser.add_argument("--peer", action="store_true", help="also measure scrubadub")
    args = parser.parse_args(argv)

    turns = [t.text for c in locomo.load(args.locomo) for t in c.turns]
    changed: Counter[str] = Counter()
    examples = []
    for text in turns:
        result = scrub(text)
        if result.changed:
            changed.update(result.found)
            examples.append((text, result.text))
    print(
        f"LoCoMo turns: {len(turns)}; changed by the scrubber: {len(examples)}"
        f" ({len(examples) / len(turns):.2%}); replacements by category: {dict(changed)}"
    )
    if args.show:
        for before, after in examples:
            print(f"  - {before!r}\n    {after!r}")

    sentences = [s for t in turns for s in re.split(r"(?<=[.!?])\s+", t) if len(s) > 20]
    pairs = scars(sentences, args.scars, args.seed)
    best = reference = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        for what, lesson in pairs:
            scrub(what)
            scrub(lesson)
        best = min(best, time.perf_counter() - start)
        start = time.perf_counter()
        for what, lesson in pairs:
            _EMAIL.sub("[email]", what)
            _EMAIL.sub("[email]", lesson)
        reference = min(reference, time.perf_counter() - start)
    planted = sum(1 for what, _ in pairs if scrub(what).changed)
    print(
        f"scrub: {args.scars / best:,.0f} scars/s ({best / args.scars * 1e6:.1f} µs per scar,"
        f" two fields); one email re.sub: {args.scars / reference:,.0f} scars/s;"
        f" ratio {best / reference:.1f}x; scars changed {planted} of {args.scars}"
        f" (planted: {args.scars // 5 + (args.scars % 5 > 0)})"
    )

    if args.peer:
        _peer(turns, pairs[: max(1, args.scars // 10)], args.show)


def _peer(turns: list[str], pairs: list[tuple[str, str]], show: bool) -> None:
    try:
        import scrubadub  # type: ignore[import-not-found]
    except ImportError:
        print("peer: scrubadub is not importable; install it beside engram to compare")
        return
    scrubber = scrubadub.Scrubber()
    changed = [(t, c) for t in turns if (c := scrubber.clean(t)) != t]
    print(f"scrubadub: LoCoMo turns changed {len(changed)} ({len(changed) / len(turns):.2%})")
    if show:
        for before, after in changed:
            print(f"  - {before!r}\n    {after!r}")
    start = time.perf_counter()
    cleaned = [(scrubber.clean(what), scrubber.clean(lesson)) for what, lesson in pairs]
    elapsed = time.perf_counter() - start
    left: Counter[str] = Counter()
    for (what, _), (out, _) in zip(pairs, cleaned, strict=True):
        left.update(p for p in _PLANTS if p in what and p in out)
    print(
        f"scrubadub: {len(pairs) / elapsed:,.0f} scars/s; planted values it left, by value:"
        f" {dict(left)}"
    )


if __name__ == "__main__":
    main()
