"""Cold segments: export to Parquet, verify from the file, verify the ledger from the head, SQL.

Tampering goes through the raw driver with the append-only triggers dropped, as an attacker
with file access would; the worst case rewrites a payload and recomputes the whole chain.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest

from engram.cli import main
from engram.ledger import AuditError, ConfigError, DamagedColdError, Ledger, NewEvent
from engram.ledger.audit import open_audit
from engram.ledger.catalog import SignalSent
from engram.ledger.codec import GENESIS_HASH, canonical, chain
from engram.ledger.cold import export_segment, segments, verify_segment


def _ledger(path: Path, n: int = 120) -> Ledger:
    ledger = Ledger.open(str(path), durability="fast")
    ledger.append(
        [
            NewEvent.of(SignalSent(to="b", topic="t", body=f"body {i}"), stream="agent:a")
            for i in range(n)
        ]
    )
    return ledger


def _rechain(path: Path, position: int, body: bytes) -> None:
    """Rewrite one payload and recompute every hash after it: a chain that verifies alone."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for trigger in ("events_no_update", "events_no_delete", "events_no_replace"):
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("UPDATE events SET payload = ? WHERE position = ?", (body, position))
        rows = conn.execute(
            "SELECT position, id, stream, version, kind, schema, actor, at, payload,"
            " causation_id, correlation_id FROM events ORDER BY position"
        ).fetchall()
        previous = GENESIS_HASH
        for row in rows:
            previous = chain(previous, canonical(tuple(row)))
            conn.execute("UPDATE events SET hash = ? WHERE position = ?", (previous, row[0]))
    finally:
        conn.close()


def test_segments_export_contiguously_and_verify(tmp_path: Path) -> None:
    with _ledger(tmp_path / "l.db") as ledger:
        first = export_segment(ledger, tmp_path / "cold", 51)
        second = export_segment(ledger, tmp_path / "cold", 101)
        assert (first.first, first.last, second.first, second.last) == (1, 50, 51, 100)
        assert first.head_hash == next(ledger.read(49, limit=1)).hash.hex()
        with pytest.raises(ConfigError, match="exported already"):
            export_segment(ledger, tmp_path / "cold", 90)
        with pytest.raises(ConfigError, match="past the ledger's head"):
            export_segment(ledger, tmp_path / "cold", 500)
        found = segments(tmp_path / "cold")
        assert [s.last for s in found] == [50, 100]
        assert verify_segment(found[0]).ok
        assert verify_segment(found[1], found[0]).ok
        # The second segment's chain starts from the first one's head, not from genesis.
        assert not verify_segment(found[1]).ok
        assert ledger.verify(expect_head=100, expect_hash=second.head_hash).ok
        assert Path(first.path).read_bytes()[:4] == b"PAR1"


def test_a_changed_segment_file_is_named(tmp_path: Path) -> None:
    with _ledger(tmp_path / "l.db") as ledger:
        segment = export_segment(ledger, tmp_path / "cold", 60)
    data = bytearray(Path(segment.path).read_bytes())
    data[len(data) // 2] ^= 0xFF
    Path(segment.path).write_bytes(bytes(data))
    report = verify_segment(segment)
    assert not report.ok
    assert "sha256" in (report.reason or "")


def test_a_rewritten_and_rechained_ledger_fails_against_the_segment_head(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    with _ledger(path) as ledger:
        segment = export_segment(ledger, tmp_path / "cold", 81)
        original = list(ledger.read(upto=80))
    _rechain(path, 7, b'{"to":"b","topic":"t","body":"forged"}')
    with Ledger.open(str(path), readonly=True) as ledger:
        assert ledger.verify().ok  # the forged chain is consistent on its own...
        report = ledger.verify(expect_head=segment.last, expect_hash=segment.head_hash)
        assert not report.ok
        assert str(segment.last) in (report.reason or "")
        # ...and the cold copy still holds what was appended.
        with open_audit(ledger.audit_target(), cold=[(segment.path, segment.last)]) as session:
            body = session.query("SELECT payload->>'body' FROM events WHERE position = 7").rows
        assert body == [(original[6].payload.body,)]


def test_sql_reads_segments_and_the_live_ledger_as_one_events_view(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "l.db"
    _ledger(path).close()
    assert main(["cold", "export", "--before", "41", "--ledger", str(path)]) == 0
    assert main(["cold", "export", "--before", "81", "--ledger", str(path)]) == 0
    capsys.readouterr()
    query = "SELECT count(*) AS n, count(DISTINCT position) AS d, max(position) AS m FROM events"
    assert main(["sql", query, "--format", "csv", "--ledger", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "120,120,120"
    # The cold rows come from the files: a query over them needs no ledger rows.
    with Ledger.open(str(path), readonly=True) as ledger:
        cold = [(s.path, s.last) for s in segments(tmp_path / "l.db.cold")]
        with open_audit(ledger.audit_target(), cold=cold) as session:
            plan = session.query("EXPLAIN SELECT * FROM events").rows[0][1]
            assert "READ_PARQUET" in plan.upper() or "PARQUET" in plan.upper()
            with pytest.raises(AuditError):
                session.query("SELECT * FROM read_parquet('/etc/passwd')")
    assert main(["cold", "verify", "--ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert "ledger from segment head 80: ok" in out
    assert main(["cold", "list", "--format", "csv", "--ledger", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("1,40,40,")


def test_cli_export_before_past_the_head_exports_through_the_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ledger.db"
    _ledger(path, n=30).close()
    cold = tmp_path / "cold"
    code = main(
        ["--ledger", str(path), "cold", "export", "--before", "1000000", "--dir", str(cold)]
    )
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "past the ledger's head (30)" in err
    (segment,) = segments(cold)
    assert (segment.first, segment.last) == (1, 30)


def test_sql_reads_no_segment_that_disagrees_with_the_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "l.db"
    _ledger(path).close()
    assert main(["cold", "export", "--before", "41", "--ledger", str(path)]) == 0
    (segment,) = segments(tmp_path / "l.db.cold")
    query = "SELECT DISTINCT actor FROM events ORDER BY actor"
    assert main(["sql", query, "--format", "csv", "--ledger", str(path)]) == 0
    honest = capsys.readouterr().out
    # One row's actor rewritten in the file, the rest as they were.
    forged = tmp_path / "forged.parquet"
    with duckdb.connect(":memory:") as con:
        con.execute(
            f"COPY (SELECT * REPLACE (CASE WHEN position = 7 THEN 'mallory' ELSE actor END AS"
            f" actor) FROM read_parquet('{segment.path}')) TO '{forged}' (FORMAT parquet)"
        )
    forged.replace(segment.path)
    assert main(["sql", query, "--format", "csv", "--ledger", str(path)]) == 1
    err = capsys.readouterr().err
    assert "does not agree with the ledger" in err
    assert "sha256" in err
    assert "mallory" not in err
    # A segment of another ledger, its manifest in order, disagrees at its head.
    other = tmp_path / "other" / "l.db"
    other.parent.mkdir()
    with Ledger.open(str(other), durability="fast") as ledger:
        ledger.append([NewEvent.of(SignalSent(to="c", topic="u", body=f"x {i}"), stream="s")
                       for i in range(50)])  # fmt: skip
        theirs = export_segment(ledger, tmp_path / "theirs", 41)
    for suffix in (".parquet", ".json"):
        Path(theirs.path).with_suffix(suffix).replace(Path(segment.path).with_suffix(suffix))
    assert main(["sql", query, "--format", "csv", "--ledger", str(path)]) == 1
    assert "head is not the ledger's hash at position 40" in capsys.readouterr().err
    assert "mallory" not in honest


@pytest.mark.parametrize("removed", ["parquet", "both"])
def test_a_segment_taken_out_of_the_folder_is_named_damage_not_a_usage_error(
    tmp_path: Path, removed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # ADR 0160: a missing file read "[Errno 2] No such file or directory", and a removed
    # segment exited 2, as a mistyped command does.
    path = tmp_path / "l.db"
    cold = tmp_path / "l.db.cold"  # the ledger's own cold folder
    with _ledger(path) as ledger:
        export_segment(ledger, cold, 41)
        middle = export_segment(ledger, cold, 81)
        export_segment(ledger, cold, 101)
    Path(middle.path).unlink()
    if removed == "both":
        middle.manifest.unlink()
    with pytest.raises(DamagedColdError, match="missing" if removed == "parquet" else "removed"):
        segments(cold)
    for argv in (["sql", "select 1"], ["cold", "verify"]):
        code = main(["--ledger", str(path), *argv])
        err = capsys.readouterr().err
        assert code == 1, (argv, err)
        assert "Usage:" not in err, err
        assert "cold segment" in err, err
