"""Where applied suggestions are written: a file or a folder per destination.

Only an explicit apply writes (ADR 0028), and only to the place configured for the
destination:

- ``instructions_file`` and ``settings`` name a **file**. A suggestion with a diff replaces
  the file's text when it still reads as the diff's ``before`` (else nothing is written); a
  suggestion without one, or modified by its reviewer, appends its final text as a line;
- ``notes_inbox``, ``skill`` and ``task`` name a **folder**: each suggestion becomes a new
  file ``<suggestion id>.md`` in it, holding the text and the scars it came from;
- ``rules`` is written nowhere: the rules projection serves it.

A relative place is taken from the current directory; ``~`` is expanded.

:func:`plan` checks everything and computes the bytes before anything is appended;
:func:`commit` writes them atomically (a temporary file renamed over the target).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from engram.agents.errors import DestinationError
from engram.projections.suggestions import Suggestion

FILE_DESTINATIONS = ("instructions_file", "settings")
FOLDER_DESTINATIONS = ("notes_inbox", "skill", "task")


@dataclass(frozen=True)
class Write:
    """A planned write: the target, the new content, and what the event records."""

    path: Path
    content: bytes
    mode: str  # appended | replaced | created
    sha256: str  # of the appended text, or of the whole new file


def plan(
    suggestion: Suggestion, final_text: str, decision: str, places: Mapping[str, str]
) -> Write | None:
    """Return the write an apply of ``suggestion`` makes (None for ``rules``).

    Raises:
        DestinationError: the destination has no configured place, the file changed since
            the diff was drafted, or the folder holds this suggestion's file already.
    """
    destination = suggestion.destination
    if destination == "rules":
        return None
    place = places.get(destination)
    if not place:
        raise DestinationError(
            f"destination {destination!r} has no configured place; set it in the config "
            f"file's [destinations] table (e.g. {destination} = "
            f'"{"notes/" if destination in FOLDER_DESTINATIONS else "AGENTS.md"}")'
        )
    target = Path(os.path.expanduser(place))
    _check_writable(target if destination in FOLDER_DESTINATIONS else target.parent)
    if destination in FOLDER_DESTINATIONS:
        path = target / f"{suggestion.id}.md"
        if path.exists():
            raise DestinationError(f"{path} exists already; this suggestion was written before")
        scars = "".join(f"- scar {s}\n" for s in suggestion.scars)
        content = f"{final_text}\n\n---\nsuggestion {suggestion.id}\n{scars}".encode()
        return Write(path, content, "created", _sha(content))
    if target.is_dir():
        raise DestinationError(f"{target} is a folder; {destination} needs a file")
    current = _read(target)
    diff = suggestion.diff
    if diff is not None and decision == "applied":
        if current.decode("utf-8", "replace") != diff["before"]:
            raise DestinationError(
                f"{target} changed since the suggestion's diff was drafted; "
                "modify the suggestion with the text to add instead"
            )
        content = diff["after"].encode()
        return Write(target, content, "replaced", _sha(content))
    added = final_text.rstrip("\n").encode() + b"\n"
    separator = b"\n" if current and not current.endswith(b"\n") else b""
    return Write(target, current + separator + added, "appended", _sha(added))


def commit(write: Write) -> None:
    """Write the planned content atomically, creating the folder if needed.

    Raises:
        DestinationError: the folder or the file cannot be written (what the OS said).
    """
    try:
        write.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".engram-", dir=write.path.parent)
    except OSError as error:
        raise DestinationError(f"cannot write {write.path}: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(write.content)
            # The file keeps its mode, a new one 0644: mkstemp's 0600 had made an
            # instructions file private to whoever applied a lesson (ADR 0171).
            os.fchmod(file.fileno(), _mode_of(write.path))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, write.path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise DestinationError(
                f"cannot write {write.path}: {error.strerror or error}"
            ) from None
        raise


def _mode_of(path: Path) -> int:
    """Return the permission bits ``path`` has, or 0644 for a new file (a project's text,
    as an editor would write it; reading the umask would set it, process-wide)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o644


def _check_writable(folder: Path) -> None:
    """Refuse, before anything is appended, a folder that cannot be made or written: its
    nearest existing part must be a folder this process may write into."""
    existing = folder
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise DestinationError(f"cannot write into {folder}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise DestinationError(f"cannot write into {folder}: {existing} is not writable")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""
    except OSError as error:
        raise DestinationError(f"cannot read {path}: {error.strerror or error}") from None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
