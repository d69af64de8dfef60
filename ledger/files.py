"""Read a small file a user names (a setting, a key, a checkpoint) without trusting it, and
write a file whole or not at all.

A path can name a device that never ends (``/dev/zero``), a FIFO that blocks until a
writer comes, or a file far larger than any such file can be: read plainly, each would hold
the process or fill its memory. :func:`read_small_file` reads a regular file only, up to a
bound, and says why it would not with an :class:`OSError` whose ``strerror`` a caller can
put in its own error. :func:`write_atomically` writes through a fresh temporary file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["create_private", "read_small_file", "write_atomically"]


def create_private(path: str | os.PathLike[str]) -> None:
    """Create ``path`` as an empty file its owner alone may read and write (0600), where
    nothing is there yet: a database engram creates holds memories' text, and SQLite gives
    its WAL and shared-memory files the mode of the database file (ADR 0183). A file that
    exists keeps its mode; a path that cannot be created is left to the opener to report."""
    if os.fspath(path) in ("", ":memory:"):
        return  # SQLite's names for a database no file holds
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(OSError):
        os.close(os.open(path, flags, 0o600))


def read_small_file(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """Return the bytes of the regular file at ``path``, which must hold at most ``max_bytes``.

    The null device (``/dev/null``) reads as an empty file. Opened without blocking (a FIFO
    would wait for a writer) and checked on the open file, so what is read is what was
    checked; a file that grows past the bound while it is read is refused too.

    Raises:
        OSError: the file cannot be opened or read, is not a regular file (``EINVAL``), or is
            larger than ``max_bytes`` (``EFBIG``); ``strerror`` says which.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb", buffering=0) as file:
        info = os.fstat(fd)
        if _is_null_device(info):
            return b""  # ``--config /dev/null``: an empty file, said the usual way
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        chunks: list[bytes] = []
        size = 0
        while chunk := file.read(min(1 << 20, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise OSError(errno.EFBIG, f"larger than {max_bytes:,} bytes", os.fspath(path))
    return b"".join(chunks)


def _is_null_device(info: os.stat_result) -> bool:
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return (
        stat.S_ISCHR(info.st_mode) and stat.S_ISCHR(null.st_mode) and info.st_rdev == null.st_rdev
    )


def write_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all, and durably.

    The bytes go to a fresh temporary file beside ``path`` (created exclusively under a
    random name, mode 0600: never a name another process or user could have planted or be
    writing), are synced, and replace ``path``; the folder is synced after. A failure
    removes the temporary file.
    """
    target = Path(path)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    folder = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
