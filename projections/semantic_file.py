"""The semantic index file: a FAISS index and its metadata beside the store.

Both are written atomically (a temp file of a unique name, fsync, rename), the metadata
first, under an exclusive lock on ``semantic.lock`` in the same directory; loading takes the
lock shared, so no process reads one save's metadata with another's index. A process that
finds another saving skips its own save: the file is a cache, and either copy serves. On load
the file
is trusted only if it agrees with the projection's tables: it must hold every vector the
table has up to the last position it covers, each item's passages with it (ADR 0054: as
many vectors under its position as the item has, its own and its passages'), and, besides
them, only removed vectors — those
removed before it was saved (its tombstones, counted in the metadata with the last removal
it took into account) and those removed since, which the caller then drops. Anything else
(a crash between the two renames, a file from another history) is reported as a problem for
the caller to rebuild from the table.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from engram.ledger import chunked
from engram.ledger.files import write_atomically

LOCK_FILE = "semantic.lock"


class IndexFileWarning(UserWarning):
    """The index file was missing, damaged or stale and has been rebuilt from the table."""


class Loaded(NamedTuple):
    """A checked index file, and what the caller needs to serve it."""

    index: Any
    last: int  # every table row up to this position is in the index
    removed_through: int  # every removal up to this archive position is taken into account
    meta: dict[int, tuple[str, str, str]]  # the served positions: author, visibility, type
    dropped: list[int]  # vectors removed since the file was saved: still in it, to forget


@contextlib.contextmanager
def _locked(directory: Path, *, exclusive: bool) -> Iterator[bool]:
    """Hold the directory's index lock; yield False when an exclusive one is taken elsewhere."""
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_SH)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def save(path: Path, faiss: Any, index: Any, meta: dict[str, Any]) -> bool:
    """Write ``meta`` as ``<path>.json``, then the index, each atomically.

    Returns False, writing nothing, when another process is saving the index right now.
    Raises OSError when the directory cannot be written (the caller decides how loud to be).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.parent, exclusive=True) as mine:
        if not mine:
            return False
        # The metadata goes first and is checked against the file's vectors (count and ids),
        # so a crash between the two renames is detected as a mismatch, never trusted.
        write_atomically(path.with_suffix(".json"), json.dumps(meta).encode())
        write_atomically(path, faiss.serialize_index(index).tobytes())
    return True


def load(
    path: Path,
    conn: sqlite3.Connection,
    faiss: Any,
    *,
    fingerprint: str,
    dimension: int,
    vectors: str,
    removed: str,
    passages: str | None,
) -> Loaded | str:
    """Read and check the index file against the tables; return it, or what is wrong
    (``passages``: the passages table whose vectors the index holds too; None: none)."""
    meta_path = path.with_suffix(".json")
    if not path.exists() or not meta_path.exists():
        return "missing"
    try:
        with _locked(path.parent, exclusive=False):
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            index = faiss.read_index(str(path))
        last, count = int(meta.get("last_position", -1)), int(meta.get("count", -1))
        through, tombstones = int(meta.get("removed_through", 0)), int(meta.get("tombstones", 0))
        held = Counter(faiss.vector_to_array(index.id_map).tolist())
        ids = set(held)
    except (OSError, ValueError, RuntimeError, TypeError, AttributeError) as exc:
        return f"unreadable ({exc})"
    if meta.get("fingerprint") != fingerprint or meta.get("dimension") != dimension:
        return "built with another embedder"
    if index.ntotal != count or index.d != dimension:
        return f"holds {index.ntotal} vectors ({len(ids)} ids), its metadata says {count}"
    rows = conn.execute(
        f"SELECT position, agent, visibility, type FROM {vectors} WHERE position <= ?", (last,)
    ).fetchall()
    extra_vectors: dict[int, int] = (
        dict(
            conn.execute(
                f"SELECT position, count(*) FROM {passages} WHERE position <= ? GROUP BY position",
                (last,),
            ).fetchall()
        )
        if passages is not None
        else {}
    )
    missing = sum(1 for row in rows if held[row[0]] != 1 + extra_vectors.get(row[0], 0))
    if missing:
        return f"lacks {missing} of the table's items' vectors up to position {last}"
    extra = sorted(ids.difference(row[0] for row in rows))
    removed_at = dict(_removed_at(conn, removed, extra))
    newest = conn.execute(f"SELECT max(removed_at) FROM {removed}").fetchone()[0] or 0
    kept = sum(1 for at in removed_at.values() if at <= through)
    if len(removed_at) != len(extra) or kept != tombstones or through > newest:
        return (
            f"holds {len(extra)} vectors beyond the table's ({tombstones} tombstones through"
            f" removal {through}); the table has {len(removed_at)} of them removed"
            f" ({kept} through {through}), its last removal is {newest}"
        )
    return Loaded(
        index,
        last,
        newest,
        {row[0]: (row[1], row[2], row[3]) for row in rows},
        [p for p in extra if removed_at[p] > through],
    )


def _removed_at(
    conn: sqlite3.Connection, removed: str, positions: list[int]
) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    for chunk in chunked(positions):
        found += conn.execute(
            f"SELECT position, removed_at FROM {removed}"
            f" WHERE position IN ({','.join('?' * len(chunk))})",
            list(chunk),
        ).fetchall()
    return found
