"""Cold segments: the ledger before a position, copied to zstd Parquet for audit (ADR 0032).

Events are never deleted from the ledger; a segment is a columnar, self-checking copy of a
prefix of it. Segments are contiguous: the first holds positions 1..k, the next k+1..m, and
so on. Each ``segment-<first>-<last>.parquet`` has a manifest beside it (``.json``) recording
its range, row count, the file's sha256 and the hash-chain head at its last position. With
that head, :meth:`Ledger.verify` checks the live ledger against the copy (``expect_head``,
``expect_hash``), and :func:`verify_segment` recomputes the chain from the file alone.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from engram.ledger.audit import export_parquet
from engram.ledger.codec import GENESIS_HASH, canonical, chain, format_at
from engram.ledger.errors import AuditError, ConfigError, DamagedColdError
from engram.ledger.store import Ledger
from engram.ledger.verify import VerifyReport

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Segment:
    """One cold segment: its file, its positions, and the chain head at its end."""

    path: str
    first: int
    last: int
    rows: int
    head_hash: str
    sha256: str
    exported_at: str

    @property
    def manifest(self) -> Path:
        """Return the manifest's path, beside the Parquet file."""
        return Path(self.path).with_suffix(".json")


def segments(directory: str | Path) -> list[Segment]:
    """Return the segments in ``directory`` in position order, checking they are contiguous.

    Raises:
        DamagedColdError: a manifest is unreadable or not a manifest, its Parquet file is
            missing, or the segments leave a gap or overlap: the folder was changed outside
            engram (ADR 0160; the ledger still holds every row).
    """
    found: list[Segment] = []
    for manifest in sorted(Path(directory).glob("segment-*.json")):
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
            data["path"] = str(manifest.with_suffix(".parquet"))
            segment = Segment(**data)
        except (OSError, ValueError, TypeError) as exc:
            raise DamagedColdError(f"unreadable cold segment manifest {manifest}: {exc}") from None
        if not all(type(n) is int for n in (segment.first, segment.last)):
            raise DamagedColdError(f"cold segment manifest {manifest} holds no positions")
        if not Path(segment.path).is_file():
            raise DamagedColdError(f"cold segment {segment.path} is missing beside {manifest}")
        found.append(segment)
    found.sort(key=lambda s: s.first)
    expected = 1
    for segment in found:
        if segment.first != expected:
            raise DamagedColdError(
                f"cold segments in {directory} are not contiguous: {segment.path} starts at"
                f" {segment.first}, expected {expected} (a segment was removed or moved)"
            )
        expected = segment.last + 1
    return found


def export_segment(ledger: Ledger, directory: str | Path, before: int) -> Segment:
    """Export the positions after the last segment and before ``before`` as a new segment.

    Raises:
        ConfigError: nothing new to export below ``before``, or ``before`` is past the head.
    """
    if not isinstance(before, int) or isinstance(before, bool) or before < 2:
        raise ConfigError(f"before must be a position >= 2, got {before!r}")
    head = ledger.head()
    if before - 1 > head:
        raise ConfigError(f"before {before} is past the ledger's head + 1 ({head + 1})")
    folder = Path(directory)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # the ledger's rows (ADR 0183)
    existing = segments(folder)
    first = existing[-1].last + 1 if existing else 1
    last = before - 1
    if last < first:
        raise ConfigError(f"positions before {before} are exported already (up to {first - 1})")
    (end,) = ledger.get([last])
    path = folder / f"segment-{first:012d}-{last:012d}.parquet"
    partial = path.with_suffix(".parquet.partial")
    rows = export_parquet(ledger.audit_target(), str(partial), first, last)
    if rows != last - first + 1:
        partial.unlink(missing_ok=True)
        raise AuditError(f"exported {rows} rows for positions {first}..{last}: the ledger has gaps")
    os.chmod(partial, 0o600)  # as the ledger they were read from (ADR 0183)
    os.replace(partial, path)
    segment = Segment(
        path=str(path),
        first=first,
        last=last,
        rows=rows,
        head_hash=end.hash.hex(),
        sha256=_file_sha256(path),
        exported_at=datetime.now(UTC).isoformat(),
    )
    record = {k: v for k, v in asdict(segment).items() if k != "path"}
    segment.manifest.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return segment


def disagreement(segment: Segment, ledger: Ledger) -> str | None:
    """Return why ``segment`` may not stand in for the ledger's rows (None: it may).

    The check every audit reading the segment makes (ADR 0146): the file's sha256 is its
    manifest's, and the manifest's head is the ledger's own hash at the segment's last
    position, so an edited file, or a file of another ledger, is never read as this one's.
    A file rewritten with its manifest is found by :func:`verify_segment`, which recomputes
    the chain (about 170,000 rows a second).
    """
    if _file_sha256(Path(segment.path)) != segment.sha256:
        return "the file's sha256 is not its manifest's"
    if segment.last > ledger.head():
        return f"it ends at {segment.last}, past the ledger's head {ledger.head()}"
    (event,) = ledger.get([segment.last])
    if event.hash.hex() != segment.head_hash:
        return f"its head is not the ledger's hash at position {segment.last}"
    return None


def verify_segment(segment: Segment, previous: Segment | None = None) -> VerifyReport:
    """Recompute the hash chain over a segment's file; it must end at its recorded head.

    The chain starts from ``previous``'s recorded head (the genesis hash for the first
    segment). The file's sha256 is checked first.
    """
    if _file_sha256(Path(segment.path)) != segment.sha256:
        return VerifyReport(False, 0, segment.last, "", segment.first, "the file's sha256 changed")
    running = bytes.fromhex(previous.head_hash) if previous is not None else GENESIS_HASH
    expected = segment.first
    with duckdb.connect(":memory:") as con:
        result = con.execute(
            'SELECT position, id, stream, version, kind, "schema", actor, epoch_us("at"),'
            " payload, causation_id, correlation_id, hash FROM read_parquet(?) ORDER BY position",
            [segment.path],
        )
        while batch := result.fetchmany(10_000):
            for row in batch:
                position, at_us, stored = row[0], row[7], bytes(row[11])
                if position != expected:
                    reason = f"position {expected} is missing from the segment"
                    return VerifyReport(
                        False, expected - 1, position, running.hex(), expected, reason
                    )
                at = format_at(_EPOCH + timedelta(microseconds=at_us))
                fields = (*row[:7], at, bytes(row[8]), row[9], row[10])
                running = chain(running, canonical(fields))
                if running != stored:
                    reason = f"hash mismatch at position {position} in the segment"
                    return VerifyReport(
                        False, expected - 1, position, running.hex(), position, reason
                    )
                expected += 1
    if expected - 1 != segment.last or running.hex() != segment.head_hash:
        return VerifyReport(
            False,
            expected - 1,
            expected - 1,
            running.hex(),
            segment.last,
            f"the segment ends at {expected - 1} with head {running.hex()}, not its manifest's",
        )
    return VerifyReport(True, segment.rows, segment.last, running.hex())


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
