"""Eight threads share one Ledger: appends are grouped, yet each caller gets its own outcome.

Each thread mixes appends that must succeed (exact expectations on its own stream), appends
that must fail (a wrong expected version; an id reused with other content; a half-retried
batch), exact retries (must return the original positions), and races on a shared stream
(either outcome, checked afterwards against the stored versions). Last, two write paths on
one file: the versions one of them caches never hide what the other appended.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from engram.ledger import ANY, NO_STREAM, ConcurrencyError, IdempotencyError, Ledger, NewEvent
from engram.ledger.backend import WriteTransaction
from engram.ledger.catalog import MemoryObserved, NeuronActivated
from engram.ledger.planning import Request

SHARED = "shared:hot"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared_ledger(request: pytest.FixtureRequest, tmp_ledger_path: str) -> Iterator[Ledger]:
    if request.param == "sqlite":
        target, schema = tmp_ledger_path, "engram"
    else:
        target, schema = request.getfixturevalue("pg_dsn"), request.getfixturevalue("pg_schema")
    with Ledger.open(target, pg_schema=schema) as ledger:
        yield ledger


def _id(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _note(stream: str, rng: random.Random, text: str, k: int) -> NewEvent:
    return NewEvent(
        stream=stream,
        kind="memory.observed",
        actor=f"thread-{k}",
        id=_id(rng),
        payload=MemoryObserved(agent=f"t{k}", text=text),
    )


class _Caller:
    """One thread's script of appends and what each of them must (or may) return."""

    def __init__(self, k: int, ledger: Ledger, seed: int, appends: int) -> None:
        self.k, self.ledger, self.appends = k, ledger, appends
        self.rng = random.Random(seed)
        self.own = f"thread:{self.k}"
        self.acked: list[tuple[list[NewEvent], Any, list[int]]] = []
        self.outcomes: list[tuple[str, list[str], list[int] | BaseException]] = []
        self.error: BaseException | None = None

    def run(self, start: threading.Barrier) -> None:
        try:
            start.wait()
            self._script()
        except BaseException as exc:
            self.error = exc

    def _append(self, op: str, events: list[NewEvent], expect: Any) -> list[int] | BaseException:
        try:
            result: list[int] | BaseException = self.ledger.append(events, expect=expect)
        except (ConcurrencyError, IdempotencyError) as exc:
            result = exc
        self.outcomes.append((op, [e.id for e in events], result))
        return result

    def _script(self) -> None:
        rng, own, k = self.rng, self.own, self.k
        version, known_shared = 0, 0
        for i in range(self.appends):
            roll = rng.random()
            if roll < 0.45 or not self.acked:
                events = [_note(own, rng, f"{i}.{n}", k) for n in range(rng.randint(1, 5))]
                if rng.random() < 0.3:
                    events.append(_note(f"side:{rng.randrange(4)}", rng, f"{i}.side", k))
                expect = {own: version or NO_STREAM}
                result = self._append("ok", events, expect)
                assert isinstance(result, list), f"thread {k} append {i} failed: {result!r}"
                version += sum(e.stream == own for e in events)
                self.acked.append((events, expect, result))
            elif roll < 0.6:
                events = [_note(own, rng, f"{i}.late", k)]
                result = self._append("conflict", events, version + 1 + rng.randrange(3))
                assert type(result) is ConcurrencyError, f"thread {k}: {result!r}"
                assert (result.stream, result.actual) == (own, version)
            elif roll < 0.7:
                stored, _, _ = self.acked[rng.randrange(len(self.acked))]
                victim = stored[rng.randrange(len(stored))]
                # Same id, other text: refused, whatever the expectation.
                events = [
                    NewEvent(
                        stream=own,
                        kind="memory.observed",
                        actor=f"thread-{k}",
                        id=victim.id,
                        payload=MemoryObserved(agent=f"t{k}", text="forged"),
                    )
                ]
                result = self._append("forged", events, rng.choice([ANY, NO_STREAM, version]))
                assert type(result) is IdempotencyError, f"thread {k}: {result!r}"
                assert victim.id in str(result), f"thread {k} got another caller's error"
            elif roll < 0.75:
                stored, _, _ = self.acked[rng.randrange(len(self.acked))]
                events = [*stored, _note(own, rng, f"{i}.extra", k)]  # a retry that grew
                result = self._append("partial-retry", events, ANY)
                assert type(result) is IdempotencyError, f"thread {k}: {result!r}"
                assert events[-1].id in str(result), f"thread {k} got another caller's error"
            elif roll < 0.85:
                stored, expect, positions = self.acked[rng.randrange(len(self.acked))]
                result = self._append("retry", stored, expect)
                assert result == positions, f"thread {k}: retry returned {result!r}"
            else:
                for event in self.ledger.read_stream(SHARED, after_version=known_shared):
                    known_shared = event.version
                events = [
                    NewEvent(
                        stream=SHARED,
                        kind="neuron.activated",
                        id=_id(rng),
                        actor=f"thread-{k}",
                        payload=NeuronActivated(id="hot", strength=float(known_shared)),
                    )
                ]
                result = self._append("race", events, known_shared or NO_STREAM)
                if isinstance(result, list):
                    known_shared += 1
                else:
                    assert type(result) is ConcurrencyError, f"thread {k}: {result!r}"


def test_group_commit_gives_each_caller_its_own_outcome(
    shared_ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = random.randrange(2**31)
    print(f"group commit seed {seed} ({shared_ledger.backend.name})")
    ledger = shared_ledger
    threads_n, appends = 8, 60

    transactions = 0
    real_write = ledger.backend.write

    def counting_write() -> AbstractContextManager[WriteTransaction]:
        nonlocal transactions
        transactions += 1
        return real_write()

    monkeypatch.setattr(ledger.backend, "write", counting_write)

    groups: list[list[tuple[str, bool]]] = []
    real_commit: Callable[[list[Request]], None] = ledger._committer._commit

    def recording_commit(group: list[Request]) -> None:
        real_commit(group)
        groups.append([(r.events[0].id, r.error is None) for r in group])

    monkeypatch.setattr(ledger._committer, "_commit", recording_commit)

    start = threading.Barrier(threads_n)
    callers = [_Caller(k, ledger, seed * 31 + k, appends) for k in range(threads_n)]
    threads = [threading.Thread(target=c.run, args=(start,)) for c in callers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive()
    for c in callers:
        if c.error is not None:
            raise AssertionError(f"thread {c.k} failed") from c.error

    events = list(ledger.read())
    by_position = {e.position: e for e in events}
    assert [e.position for e in events] == list(range(1, len(events) + 1))
    assert len({e.id for e in events}) == len(events)

    new_ids: list[str] = []
    ops: dict[str, int] = {}
    for c in callers:
        for op, ids, result in c.outcomes:
            ops[op] = ops.get(op, 0) + 1
            if isinstance(result, BaseException):
                continue
            # Its own positions, contiguous, holding exactly its own events in order.
            assert result == list(range(result[0], result[0] + len(ids))), (op, result)
            assert [by_position[p].id for p in result] == ids
            assert {by_position[p].actor for p in result} == {f"thread-{c.k}"}
            if op != "retry":
                new_ids.extend(ids)
    # Nothing of a refused batch was stored, and a forged id kept its original content.
    assert sorted(new_ids) == sorted(e.id for e in events), "stored != acknowledged new events"
    texts = {e.payload.text for e in events if e.kind == "memory.observed"}
    assert not {t for t in texts if t == "forged" or t.endswith((".late", ".extra"))}

    versions: dict[str, int] = {}
    for e in events:
        versions[e.stream] = versions.get(e.stream, 0) + 1
        assert e.version == versions[e.stream], f"{e.stream} has a gap at position {e.position}"
    report = ledger.verify()
    assert report.ok, report
    assert report.checked == len(events)

    appends_total = threads_n * appends
    # A group may take a second transaction (the store can re-plan it), never fewer than one.
    assert transactions >= len(groups)
    sizes = sorted(len(g) for g in groups)
    print(
        f"{appends_total} appends in {transactions} transactions, "
        f"largest group {sizes[-1]}; ops {ops}"
    )
    assert transactions < appends_total, "no append was grouped with another"
    assert len(groups) < appends_total
    assert sum(sizes) == appends_total
    mixed = [g for g in groups if any(ok for _, ok in g) and not all(ok for _, ok in g)]
    assert mixed, "no group mixed a refused request with a committed one"


def test_a_ledger_begun_empty_still_sees_what_another_write_path_appends(
    tmp_ledger_path: str,
) -> None:
    # The first ledger's version cache starts on an empty file, where a stream it has not
    # seen needs no lookup (ADR 0010); another write path's appends must end that.
    rng = random.Random(7)
    with Ledger.open(tmp_ledger_path) as first, Ledger.open(tmp_ledger_path) as second:
        assert first.append(_note("own:first", rng, "a", 0)) == [1]
        assert second.append(_note(SHARED, rng, "b", 1), expect=NO_STREAM) == [2]
        with pytest.raises(ConcurrencyError) as refused:
            first.append(_note(SHARED, rng, "c", 0), expect=NO_STREAM)
        assert refused.value.actual == 1
        assert first.append(_note(SHARED, rng, "d", 0), expect=1) == [3]
        assert second.append(_note(SHARED, rng, "e", 1)) == [4]
        assert [e.version for e in first.read_stream(SHARED)] == [1, 2, 3]
        assert first.verify().ok
