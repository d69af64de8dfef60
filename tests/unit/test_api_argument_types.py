"""Arguments of the wrong type or value at the Python entry points: an engram error naming them.

Real SQLite ledgers and the real projections. Each bad call raises the project's error type
with a message naming the argument, and writes nothing (the ledger's head does not move);
the calls that used to leak a raw TypeError or UnicodeEncodeError, or never return (a NaN
timeout), are the ones checked. Valid input keeps working as before.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from engram import open_memory
from engram.agents.memory import AgentMemory
from engram.ledger import Ledger
from engram.ledger.errors import ConfigError, EngramError, PayloadError
from engram.projections.errors import QueryError
from engram.runtime import Memory

SURROGATE = "\ud800"  # a lone surrogate: a str no database or JSON payload can store


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with open_memory(str(tmp_path / "l.db"), config=os.devnull) as opened:
        opened.agent("alice").observe("The deploy failed at 3am", tags=["ops"])
        yield opened


@pytest.fixture
def alice(memory: Memory) -> AgentMemory:
    return memory.agent("alice")


@pytest.fixture
def ledger(memory: Memory) -> Ledger:
    return memory.ledger


def refused(ledger: Ledger, call: Callable[[], Any], error: type[EngramError], match: str) -> None:
    """Assert ``call`` raises ``error`` matching ``match`` and appends nothing."""
    head = ledger.head()
    with pytest.raises(error, match=match):
        call()
    assert ledger.head() == head


# -- AgentMemory.observe and recall ---------------------------------------------------------


def test_observe_refuses_a_valid_from_that_is_not_a_datetime(alice: AgentMemory) -> None:
    # ``observe`` has a parameter named ``type``: the message must not call it.
    refused(
        alice.ledger,
        lambda: alice.observe("x", valid_from="2024-01-01T00:00:00Z"),  # type: ignore[arg-type]
        QueryError,
        "valid_from must be a datetime, got str",
    )


def test_a_naive_valid_from_is_refused_before_anything_is_written(alice: AgentMemory) -> None:
    # A naive time used to be appended as memory.superseded and stopped the supersessions
    # projection for good (every later observe and recall, a reopen and a rebuild failed).
    naive = datetime(2024, 1, 1)
    refused(
        alice.ledger,
        lambda: alice.observe("Alice moved to Berlin", supersedes=[1], valid_from=naive),
        QueryError,
        "valid_from 2024-01-01T00:00:00 has no time zone",
    )
    new = alice.observe("The deploy was fixed at 4am")
    refused(alice.ledger, lambda: alice.supersede(new, [1], valid_from=naive), QueryError, "zone")
    # Without supersedes it would say nothing: refused, not ignored.
    at = naive.replace(tzinfo=UTC)
    refused(alice.ledger, lambda: alice.observe("x", valid_from=at), QueryError, "supersedes")
    # An offset of seconds, which the ledger cannot store, is kept in UTC: nothing half-written.
    odd = datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=1, seconds=30)))
    revised = alice.observe("The deploy was fixed at 5am", supersedes=[new], valid_from=odd)
    # One event says both, so a process killed while it is written leaves both or neither.
    (event,) = alice.ledger.get([revised])
    assert event.payload.supersedes == [new]
    assert event.payload.valid_from == odd
    assert alice.recall("deploy", min_score=0).items  # the projections still work


def test_the_ledger_refuses_a_naive_datetime_in_any_payload(ledger: Ledger) -> None:
    from engram.ledger import NewEvent
    from engram.ledger.catalog_supersession import MemorySuperseded

    naive = datetime(2024, 1, 1)
    for payload in (
        MemorySuperseded(agent="alice", position=3, replaces=[1], valid_from=naive),
        {"agent": "alice", "position": 3, "replaces": [1], "valid_from": naive.isoformat()},
    ):
        event = NewEvent(stream="agent:alice", kind="memory.superseded", payload=payload)
        refused(ledger, lambda e=event: ledger.append(e), PayloadError, "`valid_from` is a naive")
    aware = MemorySuperseded(
        agent="alice", position=3, replaces=[1], valid_from=naive.replace(tzinfo=UTC)
    )
    assert ledger.append(NewEvent(stream="agent:alice", kind="memory.superseded", payload=aware))


def test_observe_refuses_an_unhashable_type_through_the_ledger(alice: AgentMemory) -> None:
    # Like an unknown type, the ledger refuses it naming the field; the scorer never sees it.
    refused(
        alice.ledger,
        lambda: alice.observe("x", type=["plan"]),  # type: ignore[arg-type]
        PayloadError,
        r"\$\.type",
    )


@pytest.mark.parametrize("tags", [None, 5, "deploy", b"deploy"])
def test_observe_refuses_tags_that_are_not_a_sequence_of_strings(
    alice: AgentMemory, tags: object
) -> None:
    refused(
        alice.ledger,
        lambda: alice.observe("x", tags=tags),  # type: ignore[arg-type]
        QueryError,
        "tags must be a sequence of strings",
    )


@pytest.mark.parametrize("scope", [["all"], {"all"}, None, 5])
def test_recall_refuses_a_scope_that_is_not_a_string(alice: AgentMemory, scope: object) -> None:
    refused(
        alice.ledger,
        lambda: alice.recall("deploy", scope=scope),  # type: ignore[arg-type]
        QueryError,
        r"scope must be one of \[.*'all'\], got",
    )


def test_recall_refuses_a_query_that_is_not_utf8(alice: AgentMemory) -> None:
    head = alice.ledger.head()
    with pytest.raises(QueryError, match="query must be valid UTF-8 text; character 7"):
        alice.recall(f"deploy {SURROGATE}")
    assert alice.ledger.head() == head


def test_observe_and_recall_take_what_they_took(alice: AgentMemory) -> None:
    head = alice.ledger.head()
    at = datetime(2024, 1, 1, tzinfo=UTC)
    position = alice.observe(
        "The deploy was fixed", type="plan", tags=("ops",), supersedes=[1], valid_from=at
    )
    assert position > head
    assert alice.ledger.get([position])[0].payload.tags == ["ops"]
    assert alice.recall("deploy", scope="all", record=False).items
    assert alice.recall("deploy", record=False).items


# -- Ledger ---------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["subject", "reason", "actor"])
def test_forget_refuses_text_that_is_not_utf8(memory: Memory, field: str) -> None:
    args = {"subject": "alice", "reason": "asked", "actor": "ops"} | {field: SURROGATE}
    subject = args.pop("subject")
    ledger = memory.ledger
    refused(
        ledger, lambda: ledger.forget(subject, **args), ConfigError, f"{field} must be valid UTF-8"
    )
    refused(
        ledger, lambda: memory.forget(subject, **args), ConfigError, f"{field} must be valid UTF-8"
    )
    # Nothing was destroyed: alice's memory still reads as written.
    assert next(ledger.read(kinds="memory.observed")).payload.text == "The deploy failed at 3am"


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda led: list(led.read(kinds=[SURROGATE])), "kinds must be valid UTF-8"),
        (lambda led: list(led.read(kinds=SURROGATE)), "kinds must be valid UTF-8"),
        (lambda led: list(led.read(streams=[SURROGATE])), "streams must be valid UTF-8"),
        (lambda led: list(led.read_stream(SURROGATE)), "stream must be valid UTF-8"),
        (lambda led: led.versions([SURROGATE]), "stream must be valid UTF-8"),
        (lambda led: next(led.follow(0, kinds=[SURROGATE], timeout=0)), "kinds must be valid"),
    ],
)
def test_ledger_reads_refuse_names_that_are_not_utf8(
    ledger: Ledger, call: Callable[[Ledger], Any], match: str
) -> None:
    refused(ledger, lambda: call(ledger), ConfigError, match)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda led: list(led.read(kinds=5)), "kinds must be a non-empty list of strings, got 5"),
        (lambda led: list(led.read(streams=5)), "streams must be a non-empty list of strings"),
        (lambda led: next(led.follow(0, kinds=5, timeout=0)), "kinds must be a non-empty list"),
        (lambda led: led.get(None), "positions must be a sequence of ints, got None"),
        (lambda led: led.get(5), "positions must be a sequence of ints, got 5"),
        (lambda led: led.versions(None), "streams must be a sequence of stream names, got None"),
        (lambda led: led.versions("agent:alice"), "streams must be a sequence of stream names"),
    ],
)
def test_ledger_reads_refuse_arguments_of_the_wrong_type(
    ledger: Ledger, call: Callable[[Ledger], Any], match: str
) -> None:
    refused(ledger, lambda: call(ledger), ConfigError, match)


BAD_TIMEOUTS = ["1", None, True, -1, -0.5, math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("timeout", BAD_TIMEOUTS)
def test_wait_refuses_a_timeout_that_is_not_a_finite_number(
    ledger: Ledger, timeout: object
) -> None:
    # after=0 on a ledger holding an event: were the timeout let through, wait would return
    # at once instead of hanging the suite.
    refused(
        ledger,
        lambda: ledger.wait(0, timeout),  # type: ignore[arg-type]
        ConfigError,
        "timeout must be a number of seconds >= 0, got",
    )


@pytest.mark.parametrize("timeout", [t for t in BAD_TIMEOUTS if t is not None])
def test_follow_refuses_a_timeout_that_is_not_a_finite_number(
    ledger: Ledger, timeout: object
) -> None:
    # after=0: were the timeout let through, follow would yield the first event at once.
    refused(
        ledger,
        lambda: next(ledger.follow(0, timeout=timeout)),  # type: ignore[arg-type]
        ConfigError,
        "timeout must be a number of seconds >= 0, got",
    )


def test_ledger_reads_take_what_they_took(ledger: Ledger) -> None:
    head = ledger.head()
    assert ledger.wait(0, 0) == head
    assert ledger.wait(head, 0.01) == head
    assert [e.position for e in ledger.follow(0, kinds="memory.observed", timeout=0)] == [1]
    assert [e.position for e in ledger.follow(head, timeout=0.01)] == []
    assert [e.position for e in ledger.get(p for p in (1,))] == [1]
    assert ledger.versions(("agent:alice", "nowhere")) == {"agent:alice": 1, "nowhere": 0}
    assert [e.kind for e in ledger.read(kinds="memory.observed")] == ["memory.observed"]
    assert [e.position for e in ledger.read_stream("agent:alice")] == [1]


# -- the CLI --------------------------------------------------------------------------------


@pytest.mark.parametrize("timeout", ["nan", "inf"])
def test_log_follow_refuses_a_timeout_that_is_not_finite(
    memory: Memory, tmp_path: Path, timeout: str
) -> None:
    # In a subprocess, bounded: were the timeout let through, `log --follow` would never stop.
    path = str(tmp_path / "l.db")
    argv = ["--ledger", path, "log", "--follow", "--timeout", timeout]
    code = f"import sys; from engram.cli import main; sys.exit(main({argv!r}))"
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=20
    )
    assert run.returncode == 2, run.stderr
    assert f"Invalid value for '--timeout': '{timeout}' is not a finite number." in run.stderr
    assert memory.ledger.head() == 1


def test_a_naive_valid_from_written_before_the_refusal_reads_as_utc() -> None:
    # A ledger written before appends refused a naive time holds one: the projection reads
    # it as UTC instead of failing at it for good.
    import sqlite3

    from engram.ledger.catalog_supersession import MemorySuperseded
    from engram.ledger.events import Event
    from engram.projections.base import Tables
    from engram.projections.supersession import Supersessions

    conn = sqlite3.connect(":memory:")
    db = Tables(conn, {t: f'"{t}"' for t in Supersessions.tables})
    projection = Supersessions()
    projection.create(db)
    naive = datetime(2024, 1, 1)
    payload = MemorySuperseded(agent="alice", position=3, replaces=[1], valid_from=naive)
    at = datetime(2024, 2, 1, tzinfo=UTC)
    event = Event(4, "0" * 32, "agent:alice", 1, "memory.superseded", 1, "alice", at, payload,
                  None, None, b"")  # fmt: skip
    projection.apply(db, [event])
    (valid,) = conn.execute("SELECT valid_from_us FROM supersessions").fetchone()
    assert valid == int(naive.replace(tzinfo=UTC).timestamp() * 1_000_000)


@pytest.mark.parametrize("text", ["   ", "\x00", " \n\t\u200b"])
def test_observe_refuses_a_text_with_nothing_to_remember(alice: AgentMemory, text: str) -> None:
    # Stored before, though recall refuses such a query.
    refused(alice.ledger, lambda: alice.observe(text), QueryError, "holds nothing to remember")


@pytest.mark.parametrize("text", ["Alice\x00 moved to Berlin.", "\x00Bob lives in Rome."])
def test_observe_refuses_a_text_holding_a_nul(alice: AgentMemory, text: str) -> None:
    # Stored as given before; no tool reading the store could show or search it as written.
    refused(alice.ledger, lambda: alice.observe(text), QueryError, "NUL character at offset")


@pytest.mark.parametrize("scope", ["scars", "all", "rules", "reflections"])
def test_valid_at_is_checked_and_refused_where_it_means_nothing(
    alice: AgentMemory, scope: str
) -> None:
    # It was ignored there (and the recall recorded), whatever its value.
    for value, says in (("not a time", "valid_at must be a datetime"), (datetime.now(UTC), "")):
        refused(
            alice.ledger,
            lambda v=value: alice.recall("deploy", scope=scope, valid_at=v),  # type: ignore[arg-type]
            QueryError,
            says or "valid_at asks what was true at a time, of memories",
        )


def test_a_task_that_is_not_utf8_is_a_query_error(alice: AgentMemory) -> None:
    from engram.agents.context import build_context

    refused(
        alice.ledger,
        lambda: build_context(alice, "deploy", task=SURROGATE),
        QueryError,
        "task must be valid UTF-8 text",
    )


def test_an_archived_memory_cannot_replace_another(alice: AgentMemory) -> None:
    # It was appended: the fact it replaced was then served ranked down and labelled with a
    # position no recall serves.
    new = alice.observe("The deploy was moved to 4am")
    alice.archive([new])
    refused(
        alice.ledger, lambda: alice.supersede(new, [1]), QueryError, f"memory {new} is archived"
    )


def test_a_text_longer_than_recall_reads_is_kept_with_a_warning(alice: AgentMemory) -> None:
    # ADR 0131: a memory's text past 16,000 characters was kept whole and never found by a
    # query quoting its tail, with no word said.
    from engram.agents.arguments import LongTextWarning
    from engram.projections.lexical import MAX_TEXT

    text = "overture " * (MAX_TEXT // 9) + "tail-marker-zq"
    with pytest.warns(LongTextWarning, match=f"first {MAX_TEXT:,}"):
        position = alice.observe(text)
    assert alice.ledger.get([position])[0].payload.text == text  # kept whole
