"""Signed checkpoints: anchors for the hash chain that a rewrite cannot recompute (ADR 0033).

A hash chain proves that no row was changed *unless the whole chain after it was recomputed*
(ADR 0005). A checkpoint closes that gap: it signs, with an Ed25519 key kept outside the
ledger, a position and the hash the ledger held there, and is written where it can be
published (a folder, a git repository, another machine). Whoever holds the public key can
later check the ledger against every checkpoint:

- **truncation**: the ledger ends before a signed position;
- **rewrite**: the hash stored at a signed position differs (history up to it was rewritten
  and the chain recomputed);
- **forged or edited rows**: the chain itself breaks (what :meth:`Ledger.verify` finds);
- **another ledger**: the checkpoint names another ledger (its first event's hash).

Events after the newest checkpoint are only as good as the chain: sign often (the daemon
can). A checkpoint file is one JSON object; its signature covers every other field::

    {"format": "engram-checkpoint/1", "ledger": "<hash of position 1>", "position": 1200,
     "hash": "<hash at 1200>", "signed_at": "2026-11-23T10:00:00Z", "key": "<key id>",
     "signature": "<base64>"}

Keys: :func:`generate_key` writes a PEM private key (mode 0600, never overwritten) and its
public key beside it (``<file>.pub``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from engram.ledger.errors import CheckpointError
from engram.ledger.files import read_small_file
from engram.ledger.store import Ledger
from engram.ledger.verify import verify_chain

FORMAT: Literal["engram-checkpoint/1"] = "engram-checkpoint/1"
_HEX64 = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]
_FILE = re.compile(r"^checkpoint-(\d{12})\.json$")
#: The most a key or a checkpoint file may hold: each is a few hundred bytes.
MAX_FILE_BYTES = 64 << 10


class Checkpoint(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A signed statement: this ledger held ``hash`` at ``position`` at ``signed_at``."""

    format: Literal["engram-checkpoint/1"] = FORMAT
    ledger: _HEX64
    position: Annotated[int, msgspec.Meta(ge=1)]
    hash: _HEX64
    signed_at: datetime
    key: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{16}$")]
    signature: str = ""

    def message(self) -> bytes:
        """Return the bytes the signature covers (every field but the signature)."""
        at = self.signed_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        fields = (self.format, self.ledger, str(self.position), self.hash, at, self.key)
        return "".join(f"{field}\n" for field in fields).encode()


class CheckpointFinding(msgspec.Struct, frozen=True):
    """One checkpoint the ledger does not agree with, and why."""

    position: int
    problem: Literal["truncated", "rewritten", "other-ledger"]
    detail: str


class CheckpointReport(msgspec.Struct, frozen=True):
    """The result of :func:`verify_checkpoints`."""

    ok: bool
    head: int
    chain: str
    checkpoints: int
    covered: int
    findings: list[CheckpointFinding]

    def __str__(self) -> str:
        if not self.ok:
            lines = [f"FAILED: {f.detail}" for f in self.findings] or [f"FAILED: {self.chain}"]
            return "\n".join(lines)
        after = self.head - self.covered
        return (
            f"ok: {self.checkpoints} signed checkpoint(s) agree; the chain holds to head "
            f"{self.head}, signed up to {self.covered}"
            + (f" ({after} event(s) after the newest checkpoint)" if after else "")
        )


def key_id(public: Ed25519PublicKey) -> str:
    """Return a short, stable id of a public key (16 hex digits of its SHA-256)."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def generate_key(path: str | os.PathLike[str]) -> Path:
    """Write a new Ed25519 private key to ``path`` (mode 0600) and its public key beside it.

    Returns the public key's path (``<path>.pub``). Raises CheckpointError when either file
    exists: a signing key is never overwritten. A private key left without its public key (a
    run killed between the two writes) gets it written from the private key, and is refused
    the same way, saying so.
    """
    private_path = Path(path)
    public_path = private_path.with_name(private_path.name + ".pub")
    if private_path.exists() and not public_path.exists():
        _finish_public(private_path, public_path)
    for p in (private_path, public_path):
        if p.exists():
            raise CheckpointError(f"{p} exists; a checkpoint key is never overwritten")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    try:
        fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        public_path.write_bytes(_public_pem(key))
    except OSError as exc:
        raise CheckpointError(f"cannot write the key to {private_path}: {exc.strerror}") from None
    return public_path


def _public_pem(key: Ed25519PrivateKey) -> bytes:
    """Return ``key``'s public key as PEM (SubjectPublicKeyInfo)."""
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _finish_public(private_path: Path, public_path: Path) -> None:
    """Write the public key of a private key whose ``.pub`` is missing (a run killed between
    the two writes), then refuse as for any existing key, saying so."""
    key = load_private_key(private_path)
    try:
        fd = os.open(public_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(_public_pem(key))
    except OSError as exc:
        raise CheckpointError(f"cannot write the key to {public_path}: {exc.strerror}") from None
    raise CheckpointError(
        f"{private_path} exists without its public key (a key written by an interrupted run):"
        f" its public key is now {public_path}; a checkpoint key is never overwritten"
    )


def load_private_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """Read an Ed25519 private key (PEM, unencrypted) or raise CheckpointError."""
    data = _read(Path(path), "private key")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"{path} is not an unencrypted PEM private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise CheckpointError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def load_public_key(path: str | os.PathLike[str]) -> Ed25519PublicKey:
    """Read an Ed25519 public key (PEM) or raise CheckpointError."""
    data = _read(Path(path), "public key")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"{path} is not a PEM public key: {exc}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise CheckpointError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def sign(
    ledger: Ledger,
    key: Ed25519PrivateKey,
    directory: str | os.PathLike[str],
    *,
    now: datetime | None = None,
) -> tuple[Checkpoint, Path]:
    """Sign the ledger's head and write the checkpoint into ``directory``.

    The file is ``checkpoint-<position>.json``, written atomically; signing a head that
    already has a checkpoint there returns that one. A checkpoint there of another hash or
    another ledger is never overwritten (ADR 0141): it is the evidence a checkpoint exists
    to keep; nor is a new head signed while the folder's last earlier checkpoint disagrees
    with the ledger (ADR 0144): a history rewritten before it would be signed anew, beside
    the proof that it was. Raises CheckpointError for an empty ledger, a checkpoint of this
    position or the last earlier one that disagrees with the ledger, or a directory that
    cannot be written.
    """
    head = ledger.head()
    if head < 1:
        raise CheckpointError("the ledger is empty: there is nothing to sign yet")
    first, last = _hashes(ledger, [1, head])
    out = Path(directory)
    target = out / f"checkpoint-{head:012d}.json"
    if target.exists():
        existing = _decode(target)
        if existing.hash == last and existing.ledger == first:
            # Returned as signed only where it reads as signed: an edited file is no
            # checkpoint, and is kept as the evidence it is (ADR 0168).
            public = key.public_key()
            same_key = existing.key == key_id(public)
            _check_file(target, existing, head, public if same_key else None)
            return existing, target
        what = "another ledger" if existing.ledger != first else "another hash"
        raise CheckpointError(
            f"{target} signed position {head} of {what} than this ledger's: its history was"
            " rewritten, or the folder is another ledger's; the checkpoint is kept, nothing"
            " was signed (`engram verify --checkpoints` names the position)"
        )
    last_good = _agrees_with_the_last(ledger, out, head, first)
    # Never sign a chain that fails: checked from the last checkpoint on, whose hash the
    # ledger agrees with, so a scheduled run costs the events since it (ADR 0163).
    report = verify_chain(ledger.backend, since=last_good)
    if not report.ok:
        raise CheckpointError(
            f"the ledger's chain fails at position {report.first_bad}: {report.reason};"
            " nothing was signed (`engram verify` names it)"
        )
    unsigned = Checkpoint(
        ledger=first,
        position=head,
        hash=last,
        signed_at=now or datetime.now(UTC),
        key=key_id(key.public_key()),
    )
    signature = base64.b64encode(key.sign(unsigned.message())).decode()
    checkpoint = msgspec.structs.replace(unsigned, signature=signature)
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out, prefix=".checkpoint-", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(msgspec.json.format(msgspec.json.encode(checkpoint)) + b"\n")
            os.fchmod(f.fileno(), 0o644)  # published, not secret
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        raise CheckpointError(f"cannot write a checkpoint into {out}: {exc.strerror}") from None
    return checkpoint, target


def _check_file(
    path: Path, checkpoint: Checkpoint, position: int, public: Ed25519PublicKey | None
) -> None:
    """Refuse a checkpoint file holding another position than its name says, or (``public``
    given: the key it was signed by) whose signature does not match its content."""
    if checkpoint.position != position:
        raise CheckpointError(f"{path}: names position {position} but holds {checkpoint.position}")
    if public is None:
        return
    try:
        signature = base64.b64decode(checkpoint.signature, validate=True)
        public.verify(signature, checkpoint.message())
    except (InvalidSignature, ValueError):
        raise CheckpointError(f"{path}: the signature does not match its content") from None


def load_checkpoints(
    directory: str | os.PathLike[str], public: Ed25519PublicKey
) -> list[Checkpoint]:
    """Return the checkpoints in ``directory`` by position, every signature checked.

    Raises CheckpointError naming the file for one that does not parse, was signed by
    another key, or whose signature does not match its content (a forged checkpoint).
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise CheckpointError(f"no checkpoint folder at {folder}")
    expected_key = key_id(public)
    found = []
    for path in sorted(folder.iterdir()):
        match = _FILE.match(path.name)
        if match is None:
            continue
        checkpoint = _decode(path)
        if checkpoint.key != expected_key:
            raise CheckpointError(
                f"{path}: signed by key {checkpoint.key}, not by the key given ({expected_key})"
            )
        _check_file(path, checkpoint, int(match.group(1)), public)
        found.append(checkpoint)
    if not found:
        raise CheckpointError(f"no checkpoint files (checkpoint-*.json) in {folder}")
    return found


def verify_checkpoints(
    ledger: Ledger, checkpoints: list[Checkpoint], *, progress: object = None
) -> CheckpointReport:
    """Verify the chain, then check the ledger against each signed checkpoint."""
    report = ledger.verify(progress=progress)
    findings: list[CheckpointFinding] = []
    if not report.ok:
        return CheckpointReport(False, report.head, str(report), len(checkpoints), 0, findings)
    head = report.checked
    identity = _hashes(ledger, [1])[0] if head else None
    positions = [c.position for c in checkpoints if c.position <= head]
    stored = dict(zip(positions, _hashes(ledger, positions), strict=True))
    covered = 0
    for c in checkpoints:
        when = c.signed_at.astimezone(UTC).isoformat(timespec="seconds")
        if c.ledger != identity:
            findings.append(
                CheckpointFinding(
                    c.position,
                    "other-ledger",
                    f"checkpoint at {c.position} (signed {when}) is for another ledger "
                    f"(first event hash {c.ledger[:16]}..., this one {str(identity)[:16]}...)",
                )
            )
        elif c.position > head:
            findings.append(
                CheckpointFinding(
                    c.position,
                    "truncated",
                    f"the ledger ends at {head}, but position {c.position} was signed {when}: "
                    "events were removed from the tail",
                )
            )
        elif stored[c.position] != c.hash:
            findings.append(
                CheckpointFinding(
                    c.position,
                    "rewritten",
                    f"position {c.position} holds hash {stored[c.position][:16]}..., but "
                    f"{c.hash[:16]}... was signed {when}: history up to it was rewritten "
                    "and the chain recomputed",
                )
            )
        else:
            covered = max(covered, c.position)
    return CheckpointReport(not findings, head, str(report), len(checkpoints), covered, findings)


def _agrees_with_the_last(
    ledger: Ledger, out: Path, head: int, first: str
) -> tuple[int, bytes] | None:
    """Raise CheckpointError unless the checkpoint in ``out`` of the highest position below
    ``head`` names this ledger and its hash there (a rewrite anywhere before it changes
    every hash after it, so the last one is enough; its signature is ``verify``'s to check),
    or if one in ``out`` signed a position beyond ``head`` (ADR 0163); return that last
    checkpoint's position and hash (None: there is none)."""
    signed = sorted(
        (int(m.group(1)), path)
        for path in (out.glob("checkpoint-*.json") if out.is_dir() else ())
        if (m := _NAME.fullmatch(path.name)) is not None
    )
    beyond = [(position, path) for position, path in signed if position > head]
    if beyond:
        # The folder proves the ledger reached further: events were taken off its end.
        position, path = beyond[-1]
        raise CheckpointError(
            f"{path} signed position {position}, beyond this ledger's head {head}: events"
            " were removed after it was signed, or the folder is another ledger's; nothing was"
            " signed (`engram verify --checkpoints` names the position)"
        )
    earlier = [(position, path) for position, path in signed if position < head]
    if not earlier:
        return None
    position, path = earlier[-1]
    last = _decode(path)
    if (
        last.ledger == first
        and last.position == position
        and (last.hash == _hashes(ledger, [position])[0])
    ):
        return position, bytes.fromhex(last.hash)
    what = "ledger" if last.ledger != first else "hash"
    raise CheckpointError(
        f"{path} signed position {position} of another {what}"
        " than this ledger's: its history was rewritten, or the folder is another ledger's;"
        " nothing was signed (`engram verify --checkpoints` names the position)"
    )


_NAME = re.compile(r"checkpoint-(\d{1,20})\.json")


def _hashes(ledger: Ledger, positions: list[int]) -> list[str]:
    events = {e.position: e for e in ledger.get(positions)}
    return [events[p].hash.hex() for p in positions]


def _read(path: Path, what: str) -> bytes:
    try:
        return read_small_file(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        raise CheckpointError(f"no {what} at {path}") from None
    except OSError as exc:
        raise CheckpointError(f"cannot read the {what} {path}: {exc.strerror}") from None


def _decode(path: Path) -> Checkpoint:
    try:
        return msgspec.json.decode(_read(path, "checkpoint"), type=Checkpoint)
    except msgspec.DecodeError as exc:
        raise CheckpointError(f"{path}: not a checkpoint: {exc}") from None
