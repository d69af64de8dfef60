"""The knowledge pack file: a manifest and nodes, zipped, inside an AES-GCM envelope (ADR 0041).

Layout of one ``.engrampack`` file::

    MAGIC (8 bytes) | header length (4 bytes, big-endian) | header (JSON) | ciphertext

The header holds the cipher's parameters (key derivation, salt, nonce) and the manifest
(``pack.json``) in clear, so a pack can be listed without its key; the ciphertext is
AES-256-GCM over a zip of ``pack.json`` and ``nodes.jsonl``, with the magic, the length and
the header bytes as associated data: changing any byte of the file fails authentication.
The manifest's ``checksum`` is the SHA-256 of ``nodes.jsonl``; :func:`read_pack` checks the
tag, the inner manifest against the header's and the checksum before returning anything.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import lzma
import os
import re
import stat
import struct
import tempfile
import uuid
import zipfile
import zlib
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal, NamedTuple

import msgspec
import numpy as np
import numpy.typing as npt
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from engram.agents.arguments import refuse_unwritable
from engram.agents.errors import AgentError
from engram.ledger.catalog import ConceptId, ConceptLink, ConceptType, MemoryType, Name, Text
from engram.ledger.collector import collector_paused
from engram.ledger.json_values import LONE_SURROGATE, MAX_LINE_DEPTH, nested_deeper
from engram.projections.errors import QueryError

MAGIC = b"ENGRAMPK"
FORMAT = 1
#: A namespace for pack ids: a pack's id is uuid5(PACKS, "name@version").
PACKS = uuid.UUID("6f1d2c3e-9a41-5b7e-8f0c-2d4e6a8b0c1e")
#: scrypt's cost for passphrases: about 0.1 s and 32 MiB, once per export or import.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 1
#: The most a pack's header may ask scrypt for, checked before deriving: memory (128·n·r
#: bytes) twice the default's, work (n·r·p) four times it. A forged header cannot make an
#: import allocate gigabytes or spin for minutes before its key is even tried.
MAX_SCRYPT_MEMORY = 2 * 128 * SCRYPT_N * SCRYPT_R
MAX_SCRYPT_WORK = 4 * SCRYPT_N * SCRYPT_R * SCRYPT_P
MAX_HEADER = 1 << 20
#: The largest pack file read; larger ones are refused before a byte of them is read.
MAX_PACK_BYTES = 256 << 20
#: The most nodes a pack may hold (about 1.5 GB to decode): a forged manifest cannot make
#: an import build more (ADR 0186).
MAX_NODES = 1_000_000
#: A key file holds a key or a passphrase: anything longer is not one.
_MAX_KEY_FILE = 4096
#: What the zip inside may unpack to, as a multiple of the file's size limit.
_UNPACK_FACTOR = 4

Tag = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")]
NodeId = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
Sha256 = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]


class PackError(AgentError):
    """Root of the pack errors.

    PackError
    ├── PackKeyError       no key, an empty key, or a key source that cannot be read
    ├── PackFormatError    not a pack, truncated, or a manifest or node that does not fit
    ├── PackAuthError      authentication failed: the wrong key, or the file was changed
    ├── PackChecksumError  nodes.jsonl does not match the manifest's checksum
    └── PackConflictError  the pack collides with the ledger (a private concept, other content)
    """


class PackKeyError(PackError):
    """The key is missing, empty, or its source cannot be read."""


class PackFormatError(PackError):
    """The file is not a pack, is truncated, or holds a manifest or node that does not fit."""


class PackAuthError(PackError):
    """The pack failed authentication: the wrong key, or a changed byte."""


class PackChecksumError(PackError):
    """``nodes.jsonl`` does not hash to the manifest's checksum."""


class PackConflictError(PackError):
    """Importing would overwrite something the importer may not, or contradict the ledger."""


class Manifest(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``pack.json``: what the pack is, how its vectors were made, and its nodes' checksum."""

    id: str
    name: Name
    version: Name
    domain: list[Tag] = []
    embedding_model: str | None = None  # the embedder's canonical fingerprint
    dimension: Annotated[int, msgspec.Meta(ge=1, le=65536)] | None = None
    created_at: datetime
    checksum: Sha256
    nodes: Annotated[int, msgspec.Meta(ge=0, le=MAX_NODES)]
    format: int = FORMAT


class ConceptNode(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, tag="concept",
    tag_field="kind",
):  # fmt: skip
    """A concept of the tree: its path id, type, label, free payload and links."""

    id: ConceptId
    type: ConceptType
    label: Text
    payload: dict[str, object] = {}
    links: list[ConceptLink] = []


class MemoryNode(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, tag="memory",
    tag_field="kind",
):  # fmt: skip
    """A memory: its text, type, importance and tags, and optionally its vector (base64 f32)."""

    id: NodeId
    text: Text
    type: MemoryType = "observation"
    importance: Annotated[int, msgspec.Meta(ge=1, le=10)] | None = None
    tags: list[Name] = []
    embedding: str | None = None


Node = ConceptNode | MemoryNode


class _Header(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    format: int
    cipher: Literal["AES-256-GCM"]
    kdf: Literal["raw", "scrypt"]
    salt: str = ""
    n: int = SCRYPT_N
    r: int = SCRYPT_R
    p: int = SCRYPT_P
    nonce: str
    pack: Manifest


#: What documentation writes where a key goes: "<your key>", "…64 hex digits…", "...key...".
_PLACEHOLDER = re.compile(rb"^<.*>$|^(\xe2\x80\xa6|\.\.\.).*(\xe2\x80\xa6|\.\.\.)$", re.S)


class PackKey(NamedTuple):
    """Key material: 32 raw bytes, or a passphrase stretched with scrypt per pack."""

    material: bytes
    raw: bool
    source: str  # where it came from, for messages (never the key itself)

    @classmethod
    def from_env(cls, name: str) -> PackKey:
        """Read the key from environment variable ``name`` (64 hex digits, or a passphrase)."""
        value = os.environ.get(name)
        if value is None:
            raise PackKeyError(f"environment variable {name} is not set; put the pack key in it")
        return cls._parse(value.encode(), f"environment variable {name}")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> PackKey:
        """Read the key from a file: 32 raw bytes, 64 hex digits, or a passphrase."""
        try:
            data = _read(path, _MAX_KEY_FILE, "the key file")
        except PackFormatError as exc:
            raise PackKeyError(str(exc)) from None
        if len(data) == 32:
            return cls(data, True, f"key file {os.fspath(path)}")
        return cls._parse(data, f"key file {os.fspath(path)}")

    @classmethod
    def _parse(cls, data: bytes, source: str) -> PackKey:
        text = data.strip()
        if not text:
            raise PackKeyError(f"{source} is empty")
        try:
            raw = bytes.fromhex(text.decode("ascii")) if len(text) == 64 else b""
        except (ValueError, UnicodeDecodeError):
            raw = b""
        if len(raw) == 32:
            return cls(raw, True, source)
        if len(text) < 8:
            raise PackKeyError(f"{source}: a passphrase must have at least 8 characters")
        if _PLACEHOLDER.search(text):
            raise PackKeyError(
                f"{source} holds a placeholder (<...>, or text between ellipses), not a key: "
                "put 64 hex digits there (python3 -c 'import os; print(os.urandom(32).hex())')"
                " or a passphrase of your own"
            )
        return cls(text, False, source)

    def derive(self, header: _Header) -> bytes:
        """Return the 32-byte AES key for a pack with this header."""
        if self.raw:
            if header.kdf != "raw":
                raise PackAuthError("the pack was sealed with a passphrase, the key given is raw")
            return self.material
        if header.kdf != "scrypt":
            raise PackAuthError("the pack was sealed with a raw key, the key given is a passphrase")
        n, r, p = header.n, header.r, header.p
        if not (
            2**10 <= n <= 2**20
            and n & (n - 1) == 0
            and 1 <= r <= 32
            and 1 <= p <= 4
            and 128 * n * r <= MAX_SCRYPT_MEMORY
            and n * r * p <= MAX_SCRYPT_WORK
        ):
            raise PackFormatError(
                f"the pack's scrypt parameters (n={n}, r={r}, p={p}) are out of range: at most"
                f" {MAX_SCRYPT_MEMORY >> 20} MiB and {MAX_SCRYPT_WORK // (SCRYPT_N * SCRYPT_R)}"
                " times the default work, n a power of two"
            )
        kdf = Scrypt(
            salt=_unhex(header.salt, "salt"), length=32, n=header.n, r=header.r, p=header.p
        )
        return kdf.derive(self.material)


def pack_id(name: str, version: str) -> str:
    """Return the pack's id: the same name and version always give the same id."""
    return str(uuid.uuid5(PACKS, f"{name}@{version}"))


def node_event_id(pack: str, node: str) -> str:
    """Return the id of the event a node becomes: uuid5 of the pack id and the node id.

    The same as ``str(uuid.uuid5(uuid.UUID(pack), node))``, computed without building UUID
    objects: an import derives one per node, and this is a third of the cost otherwise.
    """
    digest = bytearray(
        hashlib.sha1(_namespace(pack) + node.encode(), usedforsecurity=False).digest()[:16]
    )
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@functools.lru_cache(maxsize=64)
def _namespace(pack: str) -> bytes:
    try:
        return uuid.UUID(pack).bytes
    except ValueError:
        raise PackFormatError(f"pack.json: id {pack!r} is not a UUID") from None


def encode_vector(vector: npt.NDArray[np.float32]) -> str:
    """Return a vector as base64 of little-endian float32."""
    return base64.b64encode(np.ascontiguousarray(vector, dtype="<f4").tobytes()).decode()


def decode_vector(text: str, dimension: int, where: str) -> npt.NDArray[np.float32]:
    """Return the float32 vector base64 ``text`` holds, checking its dimension and that every
    value is finite."""
    try:
        blob = base64.b64decode(text, validate=True)
    except ValueError:
        raise PackFormatError(f"{where}: embedding is not base64") from None
    if len(blob) != 4 * dimension:
        raise PackFormatError(f"{where}: embedding has {len(blob) // 4} floats, not {dimension}")
    vector = np.frombuffer(blob, dtype="<f4").astype(np.float32)
    if not np.isfinite(vector).all():
        # NaN or infinity in a cached vector made every score of a recall NaN (ADR 0144).
        raise PackFormatError(f"{where}: embedding holds NaN or infinity")
    return vector


_NODE = msgspec.json.Decoder(Node)
_NODES = msgspec.json.Decoder(list[Node])
_ENCODE = msgspec.json.Encoder()


def encode_nodes(nodes: Sequence[Node]) -> bytes:
    """Return ``nodes.jsonl``: one node per line."""
    buffer = bytearray()
    for node in nodes:
        _ENCODE.encode_into(node, buffer, len(buffer))
        buffer += b"\n"
    return bytes(buffer)


def write_pack(
    path: str | os.PathLike[str], manifest: Manifest, nodes_jsonl: bytes, key: PackKey
) -> None:
    """Seal the manifest and nodes under ``key`` and write the pack file atomically.

    The bytes go to a new temporary file beside ``path`` (created exclusively under a random
    name, mode 0600, so never through a link), renamed to ``path`` once on disk; a failure
    removes it.
    """
    if hashlib.sha256(nodes_jsonl).hexdigest() != manifest.checksum:
        raise PackChecksumError("the manifest's checksum is not nodes.jsonl's")
    manifest_json = msgspec.json.encode(manifest)
    plain = io.BytesIO()
    with zipfile.ZipFile(plain, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("pack.json", manifest_json)
        z.writestr("nodes.jsonl", nodes_jsonl)
    nonce = os.urandom(12)
    if key.raw:
        header = _Header(
            format=FORMAT, cipher="AES-256-GCM", kdf="raw", nonce=nonce.hex(), pack=manifest
        )
    else:
        header = _Header(
            format=FORMAT, cipher="AES-256-GCM", kdf="scrypt", salt=os.urandom(16).hex(),
            nonce=nonce.hex(), pack=manifest,
        )  # fmt: skip
    head = msgspec.json.encode(header)
    prefix = MAGIC + struct.pack(">I", len(head)) + head
    sealed = AESGCM(key.derive(header)).encrypt(nonce, plain.getvalue(), prefix)
    target = Path(path)
    # A new file of an unpredictable name, created exclusively (mode 0600): a link or a file
    # planted beside the target is never followed nor reused.
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(prefix + sealed)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def peek(path: str | os.PathLike[str], *, max_bytes: int = MAX_PACK_BYTES) -> Manifest:
    """Return a pack's manifest without its key (unauthenticated: for listing only)."""
    return _split(_read(path, max_bytes), os.fspath(path))[0].pack


def read_pack(
    path: str | os.PathLike[str], key: PackKey, *, max_bytes: int = MAX_PACK_BYTES
) -> tuple[Manifest, list[Node]]:
    """Open, authenticate and check a pack; return its manifest and nodes.

    Only a regular file of at most ``max_bytes`` is read (a device, a FIFO or a larger file
    is refused before reading), and its archive may unpack to a bounded size only.

    Raises:
        PackFormatError: not a pack, too large, truncated, or a node does not fit (the line
            is named).
        PackAuthError: the wrong key, or any byte of the file changed.
        PackChecksumError: nodes.jsonl does not match the manifest.
    """
    where = os.fspath(path)
    data = _read(path, max_bytes)
    header, prefix, sealed = _split(data, where)
    try:
        nonce = _unhex(header.nonce, "nonce")
        if len(nonce) != 12:
            raise PackFormatError(f"{where}: the nonce must be 12 bytes, not {len(nonce)}")
        plain = AESGCM(key.derive(header)).decrypt(nonce, sealed, prefix)
    except InvalidTag:
        raise PackAuthError(
            f"{where}: authentication failed: the key ({key.source}) is not this pack's,"
            " or the file was changed or truncated"
        ) from None
    try:
        with zipfile.ZipFile(io.BytesIO(plain)) as z:
            room = _UNPACK_FACTOR * max_bytes
            inner, nodes_jsonl = (
                _member(z, "pack.json", room, where),
                _member(z, "nodes.jsonl", room, where),
            )
    except PackFormatError:
        raise  # a member too large to unpack, said as such
    except _DAMAGED_ZIP as exc:
        # A zip made by the key's holder, not by engram: any of these is its damage (an
        # encrypted member, an unknown compression method, a broken deflate stream...).
        why = str(exc) or type(exc).__name__
        raise PackFormatError(f"{where}: the sealed content is not a pack archive: {why}") from None
    try:
        inside = msgspec.json.decode(inner, type=Manifest)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise PackFormatError(
            f"{where}: pack.json inside is not a pack's manifest: {exc}"
        ) from None
    if inside != header.pack:
        raise PackFormatError(f"{where}: pack.json inside differs from the header's")
    manifest = header.pack
    if hashlib.sha256(nodes_jsonl).hexdigest() != manifest.checksum:
        raise PackChecksumError(f"{where}: nodes.jsonl does not match the checksum in pack.json")
    return manifest, decode_nodes(nodes_jsonl, manifest, where)


def decode_nodes(nodes_jsonl: bytes, manifest: Manifest, where: str) -> list[Node]:
    """Decode and check ``nodes.jsonl``: types, unique ids, vectors of the manifest's size.

    The lines are decoded as one JSON array (a tenth of the time of a decode per line);
    only when that fails are they decoded one by one, to name the line that is wrong.
    """
    # Counted before a line is split out: a pack of empty lines, or of more lines than its
    # manifest says, is refused without building a list of them (ADR 0186).
    count = nodes_jsonl.count(b"\n") + (not nodes_jsonl.endswith(b"\n"))
    if nodes_jsonl and count != manifest.nodes:
        raise PackFormatError(
            f"{where}: nodes.jsonl holds {count:,} nodes, pack.json says {manifest.nodes:,}"
        )
    if nodes_jsonl.startswith(b"\n") or b"\n\n" in nodes_jsonl:
        raise PackFormatError(f"{where}: nodes.jsonl holds an empty line")
    lines = nodes_jsonl.splitlines()
    # Nested as deep as append refuses, a payload would break the readers that walk it
    # (ADR 0188): refused before any line is decoded.
    for number, line in enumerate(lines, 1):
        if nested_deeper(line, MAX_LINE_DEPTH):
            raise PackFormatError(
                f"{where}: nodes.jsonl line {number}: JSON nested more than {MAX_LINE_DEPTH}"
                " levels deep (dicts and lists)"
            )
    with collector_paused():
        try:
            nodes = _NODES.decode(b"[" + b",".join(lines) + b"]")
        except (msgspec.ValidationError, msgspec.DecodeError):
            nodes = [_line(line, number, where) for number, line in enumerate(lines, 1)]
    seen: set[tuple[str, str]] = set()
    for number, node in enumerate(nodes, 1):
        identity = (type(node).__name__, node.id)
        if identity in seen:
            raise PackFormatError(f"{where}: nodes.jsonl line {number}: node {node.id!r} repeats")
        seen.add(identity)
        if isinstance(node, MemoryNode):
            # What observe refuses, an import refuses: a NUL, a text of control characters
            # (ADR 0160).
            try:
                refuse_unwritable(node.text, f"node {node.id!r} text")
            except QueryError as exc:
                raise PackFormatError(f"{where}: nodes.jsonl line {number}: {exc}") from None
        if isinstance(node, MemoryNode) and node.embedding is not None:
            if manifest.dimension is None:
                raise PackFormatError(
                    f"{where}: line {number} has an embedding, pack.json no dimension"
                )
            decode_vector(node.embedding, manifest.dimension, f"{where}: nodes.jsonl line {number}")
    if len(nodes) != manifest.nodes:
        raise PackFormatError(
            f"{where}: nodes.jsonl holds {len(nodes)} nodes, pack.json says {manifest.nodes}"
        )
    return nodes


def _line(line: bytes, number: int, where: str) -> Node:
    try:
        node: Node = _NODE.decode(line)
        return node
    except msgspec.ValidationError as exc:
        raise PackFormatError(f"{where}: nodes.jsonl line {number}: {exc}") from None
    except msgspec.DecodeError as exc:
        lone = LONE_SURROGATE.search(line.decode("utf-8", "replace"))
        if lone is not None:  # the decoder says "truncated" of some (ADR 0188)
            raise PackFormatError(
                f"{where}: nodes.jsonl line {number}: a lone UTF-16 surrogate escape"
                f" {lone.group()}: text must be valid Unicode"
            ) from None
        raise PackFormatError(f"{where}: nodes.jsonl line {number}: not JSON: {exc}") from None


#: What reading a damaged zip raises (zipfile's own errors, and the codecs' beneath it).
_DAMAGED_ZIP = (
    zipfile.BadZipFile,
    KeyError,
    OSError,
    RuntimeError,
    NotImplementedError,
    EOFError,
    ValueError,
    zlib.error,
    lzma.LZMAError,
)


def _member(archive: zipfile.ZipFile, name: str, room: int, where: str) -> bytes:
    """Return one member of the archive, refusing one that unpacks beyond ``room`` bytes."""
    if archive.getinfo(name).file_size > room:
        raise PackFormatError(f"{where}: {name} unpacks to more than {room:,} bytes")
    with archive.open(name) as member:
        data = member.read(room + 1)
    if len(data) > room:
        raise PackFormatError(f"{where}: {name} unpacks to more than {room:,} bytes")
    return data


def _read(
    path: str | os.PathLike[str], max_bytes: int = MAX_PACK_BYTES, what: str = "the pack"
) -> bytes:
    """Read a pack (or key) file: a regular file of at most ``max_bytes``, in chunks.

    Opened without blocking (a FIFO would wait for a writer) and checked on the open file,
    so what is read is what was checked; a file growing meanwhile is cut at the limit.
    """
    where = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise PackFormatError(f"cannot read {what} {where}: {exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        os.close(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PackFormatError(f"{where} is not a regular file")
        raise PackFormatError(
            f"{where} is {info.st_size:,} bytes; {what} may have at most {max_bytes:,}"
        )
    with os.fdopen(fd, "rb", buffering=0) as file:
        chunks: list[bytes] = []
        size = 0
        try:
            while chunk := file.read(min(1 << 20, max_bytes + 1 - size)):
                chunks.append(chunk)
                size += len(chunk)
                if size > max_bytes:
                    raise PackFormatError(
                        f"{where} grew past {max_bytes:,} bytes while it was read"
                    )
        except OSError as exc:
            raise PackFormatError(f"cannot read {what} {where}: {exc.strerror}") from None
    return b"".join(chunks)


def _split(data: bytes, where: str) -> tuple[_Header, bytes, bytes]:
    if len(data) < 12 or data[:8] != MAGIC:
        raise PackFormatError(f"{where}: not an engram pack (no {MAGIC.decode()} header)")
    (length,) = struct.unpack(">I", data[8:12])
    if length > MAX_HEADER or len(data) < 12 + length + 16:
        raise PackFormatError(f"{where}: truncated (the header says {length} bytes)")
    prefix = data[: 12 + length]
    try:
        header = msgspec.json.decode(data[12 : 12 + length], type=_Header)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise PackFormatError(f"{where}: the header does not fit: {exc}") from None
    if header.format != FORMAT:
        raise PackFormatError(f"{where}: pack format {header.format}; this engram reads {FORMAT}")
    return header, prefix, data[12 + length :]


def _unhex(text: str, what: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise PackFormatError(f"the pack's {what} is not hexadecimal") from None
