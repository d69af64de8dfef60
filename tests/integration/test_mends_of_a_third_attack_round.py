"""What a third attack round found, mended (ADR 0168): a supersession's reason quotes no word
of a private memory; an observation stored before detection failed is reported stored, not
failed, so a retry does not store it twice; bytes are refused as a memory's text; a position
below the head that holds nothing is a damaged ledger, no argument's fault."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest

import engram
from engram.agents.arguments import DetectionWarning
from engram.cli import main
from engram.ledger import ConfigError, DamagedLedgerError, Ledger
from engram.projections.errors import QueryError

FILLER = [f"The {p} keeps {t}." for p in ("shed", "attic", "barn") for t in ("bees", "a boat")]


def test_a_supersession_of_a_private_memory_quotes_none_of_its_words(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "m.db"), config="/dev/null") as memory:
        alice = memory.agent("alice")
        for text in FILLER:
            alice.observe(text)
        alice.observe("Alice Moreau lives in Berlin.")
        alice.observe("SECRETWORD Alice Moreau moved to Zurich.", visibility="private")
        (event,) = memory.ledger.read(kinds=["memory.superseded"])
    assert "not quoted" in event.payload.reason
    for word in ("secretword", "zurich", "berlin"):
        assert word not in event.payload.reason.lower()


def test_a_memory_stored_before_detection_failed_is_reported_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.db"
    with engram.open_memory(str(path), config="/dev/null") as memory:
        memory.agent("alice").observe("first fact")
        memory.agent("bob").observe("second fact")
    raw = sqlite3.connect(path)
    raw.execute("DROP TRIGGER events_no_update")
    raw.execute("UPDATE events SET at = 'not-a-time' WHERE position = 1")
    raw.commit()
    raw.close()
    base = ["--ledger", str(path), "--config", "/dev/null"]
    # A rebuild fails on the damaged row, and leaves the projections to be built again.
    assert main([*base, "rebuild"], out=io.StringIO()) == 1
    capsys.readouterr()
    out = io.StringIO()
    code = main([*base, "observe", "carol", "The deploy moved to Friday."], out=out)
    err = capsys.readouterr().err
    assert code == 0
    assert "observed at position 3" in out.getvalue()
    assert "warning: memory stored at position 3; finding what it replaces failed" in err
    with Ledger.open(str(path), readonly=True) as ledger:
        assert ledger.head() == 3  # stored once: no error for a retry to repeat


def test_detection_failing_after_the_append_warns_in_python(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "m.db"), config="/dev/null") as memory:
        ana = memory.agent("ana")
        ana.observe("Alice lives in Paris.")
        memory.engine.close()  # the projections can no longer be read
        with pytest.warns(DetectionWarning, match="memory stored at position 2"):
            assert ana.observe("Alice moved to Berlin.") == 2
        assert memory.ledger.head() == 2


def test_bytes_are_refused_as_a_memory_s_text(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "m.db"), config="/dev/null") as memory:
        with pytest.raises(QueryError, match="text must be a string, got bytes: decode it"):
            memory.agent("alice").observe(b"the deploy moved")  # type: ignore[arg-type]
        assert memory.ledger.head() == 0


def test_a_position_below_the_head_that_holds_nothing_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with engram.open_memory(str(path), config="/dev/null") as memory:
        for text in FILLER[:4]:
            memory.agent("alice").observe(text)
    raw = sqlite3.connect(path)
    for (name,) in raw.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"
    ).fetchall():
        raw.execute(f"DROP TRIGGER {name}")
    raw.execute("DELETE FROM events WHERE position = 2")
    raw.commit()
    raw.close()
    with Ledger.open(str(path), readonly=True) as ledger:
        with pytest.raises(DamagedLedgerError, match=r"position\(s\) 2, below the head"):
            ledger.get([1, 2])
        with pytest.raises(ConfigError, match=r"no event at position\(s\) 9$"):
            ledger.get([9])
