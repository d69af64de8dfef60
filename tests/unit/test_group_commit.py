"""The group committer on its own: leadership, grouping, hand-over, close."""

from __future__ import annotations

import threading
import time

import pytest

from engram.ledger import groupcommit
from engram.ledger.errors import LedgerClosedError
from engram.ledger.groupcommit import ROUNDS_AFTER_OWN, GroupCommitter
from engram.ledger.planning import Request


def _request() -> Request:
    return Request(events=[], expect={})


def test_every_request_is_committed_once_in_groups_never_concurrently() -> None:
    seen: list[int] = []
    sizes: list[int] = []
    active = threading.Lock()

    def commit(group: list[Request]) -> None:
        assert active.acquire(blocking=False), "two groups committed at once"
        sizes.append(len(group))
        time.sleep(0.002)  # an fsync: others queue meanwhile
        for r in group:
            seen.append(id(r))
            r.positions = [len(seen)]
        active.release()

    committer = GroupCommitter(commit)
    requests = [[_request() for _ in range(50)] for _ in range(8)]
    threads = [
        threading.Thread(target=lambda rs=rs: [committer.submit(r) for r in rs]) for rs in requests
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    flat = [r for rs in requests for r in rs]
    assert sorted(seen) == sorted(id(r) for r in flat)  # each exactly once
    assert all(r.done and r.positions for r in flat)
    assert max(sizes) > 1, "no two requests ever shared a commit"
    assert len(sizes) < len(flat)


def test_a_leader_hands_over_once_its_own_request_is_done() -> None:
    started = threading.Event()
    release = threading.Event()
    rounds: list[int] = []

    def commit(group: list[Request]) -> None:
        rounds.append(threading.get_ident())
        started.set()
        release.wait(5)

    committer = GroupCommitter(commit)
    leader = threading.Thread(target=committer.submit, args=(_request(),))
    leader.start()
    started.wait(5)
    # While the leader commits its own group, others keep queueing one at a time.
    followers = []
    for _ in range(ROUNDS_AFTER_OWN + 3):
        t = threading.Thread(target=committer.submit, args=(_request(),))
        t.start()
        followers.append(t)
    release.set()
    leader.join(10)
    for t in followers:
        t.join(10)
    assert not leader.is_alive()
    assert all(not t.is_alive() for t in followers)
    assert rounds.count(rounds[0]) <= ROUNDS_AFTER_OWN + 1


def test_close_waits_for_the_group_in_flight_and_refuses_later_ones() -> None:
    in_commit = threading.Event()
    finish = threading.Event()

    def commit(group: list[Request]) -> None:
        in_commit.set()
        finish.wait(5)
        for r in group:
            r.positions = [1]

    committer = GroupCommitter(commit)
    first = _request()
    t = threading.Thread(target=committer.submit, args=(first,))
    t.start()
    in_commit.wait(5)
    closer = threading.Thread(target=committer.close)
    closer.start()
    time.sleep(0.05)
    assert closer.is_alive(), "close() returned while a group was committing"
    finish.set()
    closer.join(5)
    t.join(5)
    assert first.positions == [1]
    late = _request()
    committer.submit(late)
    assert isinstance(late.error, LedgerClosedError)


def _append(committer: GroupCommitter, request: Request, go: threading.Event | None = None) -> None:
    """What Ledger.append does around a request: enter, prepare (here: wait), submit, leave."""
    committer.enter()
    try:
        if go is not None:
            go.wait(5)
        committer.submit(request)
    finally:
        committer.leave()


def test_a_leader_waits_for_callers_still_preparing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(groupcommit, "GATHER_WAIT", 10.0)
    groups: list[int] = []
    committer = GroupCommitter(lambda group: groups.append(len(group)))
    go = threading.Event()
    slow = [threading.Thread(target=_append, args=(committer, _request(), go)) for _ in range(3)]
    for t in slow:
        t.start()
    deadline = time.monotonic() + 5
    while committer._active < 3 and time.monotonic() < deadline:
        time.sleep(0.001)
    leader = threading.Thread(target=_append, args=(committer, _request()))
    leader.start()
    time.sleep(0.05)
    assert groups == [], "the leader committed while callers were still preparing"
    go.set()
    for t in [leader, *slow]:
        t.join(5)
        assert not t.is_alive()
    assert groups == [4]


def test_the_wait_for_preparing_callers_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(groupcommit, "GATHER_WAIT", 0.05)
    groups: list[int] = []
    committer = GroupCommitter(lambda group: groups.append(len(group)))
    committer.enter()  # a caller that prepares for ever
    start = time.monotonic()
    _append(committer, _request())
    assert groups == [1]
    assert 0.04 <= time.monotonic() - start < 5


def test_a_lone_caller_never_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(groupcommit, "GATHER_WAIT", 10.0)
    committer = GroupCommitter(lambda group: None)
    start = time.monotonic()
    for _ in range(100):
        request = _request()
        _append(committer, request)
        assert request.done
    assert time.monotonic() - start < 5
