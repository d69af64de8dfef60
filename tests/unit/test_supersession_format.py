"""The format a value is written in, as detection reads it (ADR 0115): a value given for a
value of the same structured notation names the attribute that changed."""

from __future__ import annotations

import pytest

from engram.agents.candidacy import same_format, value_format
from engram.ledger.catalog import MemorySuperseded, SupersessionProposed


def test_a_value_s_format_is_its_shape_to_the_second_separator() -> None:
    # Structure (two separators, or a clock's colon) makes a value's notation; a number
    # joined to a word, a range or a short id is prose as often.
    assert value_format("eu-west-1") == value_format("ap-south-1") == "a-a-"
    assert value_format("4.0.0-rc1") == value_format("2.4.1") == "9.9."
    # A time of day however written is one format (ADR 0160).
    assert value_format("02:30") == value_format("22:45") == value_format("6pm") == "9:"
    assert value_format("5:30pm") == "9:"
    assert value_format("2026-03-01") == "9-9-"
    for prose in ("15-minute", "13-14", "he-85", "inc0012345"):
        assert value_format(prose) is None
    assert same_format("moved it to eu-west-1", "it lives in ap-south-1")
    assert not same_format("moved it to eu-west-1", "it runs 2.4.1 in ap-south-1")  # two gone
    assert not same_format("it is on 2.5.0", "it runs at 05:15")  # a release for a time
    assert not same_format("it is in eu-west-1", "it is in eu-west-1 still")  # nothing new


def test_only_a_memory_said_by_an_agent_must_replace_earlier_recorded_ones() -> None:
    # ADR 0116: detection may find that a memory recorded earlier replaces one told late of
    # an earlier time; an agent's own supersession names earlier ones, and none replaces
    # itself.
    assert MemorySuperseded(agent="a", position=5, replaces=[8], method="detected").replaces
    assert SupersessionProposed(agent="a", position=5, replaces=[8], similarity=0.5).replaces
    with pytest.raises(ValueError, match="only earlier ones"):
        MemorySuperseded(agent="a", position=5, replaces=[8])
    for method in ("explicit", "detected"):
        with pytest.raises(ValueError, match="does not replace itself"):
            MemorySuperseded(agent="a", position=5, replaces=[5], method=method)
