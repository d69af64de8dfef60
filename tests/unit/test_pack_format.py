"""The pack file: sealing, authentication, checksums, node checks and key sources."""

from __future__ import annotations

import hashlib
import io
import os
import struct
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import numpy as np
import pytest

from engram.agents.packs import (
    ConceptNode,
    Manifest,
    MemoryNode,
    PackAuthError,
    PackChecksumError,
    PackFormatError,
    PackKey,
    PackKeyError,
    pack_id,
    peek,
    read_pack,
    write_pack,
)
from engram.agents.packs.format import MAGIC, MAX_NODES, encode_nodes, encode_vector

RAW = PackKey(bytes(range(32)), True, "test key")
PASSPHRASE = PackKey(b"correct horse battery staple", False, "test passphrase")


def _manifest(jsonl: bytes, nodes: int, **fields: object) -> Manifest:
    base: dict[str, object] = {
        "id": pack_id("t", "1"),
        "name": "t",
        "version": "1",
        "created_at": datetime(2026, 1, 1, tzinfo=UTC),
        "checksum": hashlib.sha256(jsonl).hexdigest(),
        "nodes": nodes,
    }
    return Manifest(**{**base, **fields})  # type: ignore[arg-type]


def _nodes() -> list[ConceptNode | MemoryNode]:
    vector = encode_vector(np.arange(4, dtype="float32"))
    return [
        ConceptNode(id="py.idiom", type="concept", label="Idioms"),
        MemoryNode(
            id="m1", text="Prefer enumerate over range(len(x)).", tags=["python"], embedding=vector
        ),
    ]


def _write(path: Path, key: PackKey = RAW) -> Manifest:
    jsonl = encode_nodes(_nodes())
    manifest = _manifest(jsonl, 2, embedding_model="m", dimension=4)
    write_pack(path, manifest, jsonl, key)
    return manifest


@pytest.mark.parametrize("key", [RAW, PASSPHRASE], ids=["raw", "passphrase"])
def test_a_pack_round_trips_under_its_key(tmp_path: Path, key: PackKey) -> None:
    path = tmp_path / "p.pack"
    manifest = _write(path, key)
    assert read_pack(path, key) == (manifest, _nodes())
    assert peek(path) == manifest  # the manifest is readable without the key
    assert b"enumerate" not in path.read_bytes()  # the nodes are not


def test_every_changed_byte_fails_authentication(tmp_path: Path) -> None:
    path = tmp_path / "p.pack"
    _write(path)
    data = path.read_bytes()
    (length,) = struct.unpack(">I", data[8:12])
    # A byte of the header's manifest (the AAD), of the ciphertext, and the last (the tag).
    header_byte = 12 + data[12 : 12 + length].index(b'"nodes":2') + len('"nodes":')
    for where, value in ((header_byte, ord("3")), (12 + length + 5, None), (len(data) - 1, None)):
        changed = bytearray(data)
        changed[where] = value if value is not None else changed[where] ^ 0x01
        path.write_bytes(bytes(changed))
        with pytest.raises(PackAuthError, match="authentication failed"):
            read_pack(path, RAW)


def test_a_wrong_key_or_kind_of_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.pack"
    _write(path, PASSPHRASE)
    with pytest.raises(PackAuthError, match="not this pack's"):
        read_pack(path, PackKey(b"another passphrase", False, "other"))
    with pytest.raises(PackAuthError, match="sealed with a passphrase"):
        read_pack(path, RAW)


@pytest.mark.parametrize("keep", [0, 5, 11, 40, -17, -1])
def test_a_truncated_pack_is_refused(tmp_path: Path, keep: int) -> None:
    path = tmp_path / "p.pack"
    _write(path)
    data = path.read_bytes()
    path.write_bytes(data[:keep] if keep >= 0 else data[: len(data) + keep])
    with pytest.raises((PackFormatError, PackAuthError)):
        read_pack(path, RAW)


def test_not_a_pack_and_a_missing_file_say_so(tmp_path: Path) -> None:
    path = tmp_path / "x.pack"
    path.write_bytes(b"PK\x03\x04 a zip, not a pack")
    with pytest.raises(PackFormatError, match="not an engram pack"):
        read_pack(path, RAW)
    with pytest.raises(PackFormatError, match="cannot read the pack"):
        read_pack(tmp_path / "missing.pack", RAW)


def test_a_checksum_that_does_not_match_is_refused_when_sealing(tmp_path: Path) -> None:
    jsonl = encode_nodes(_nodes())
    with pytest.raises(PackChecksumError):
        write_pack(tmp_path / "p.pack", _manifest(jsonl + b"\n", 2), jsonl, RAW)
    assert not (tmp_path / "p.pack").exists()


@pytest.mark.parametrize(
    ("jsonl", "message"),
    [
        (b'{"kind": "concept", "id": "Bad Id", "type": "fact", "label": "x"}\n', "line 1"),
        (b'{"kind": "memory", "id": "m", "text": ""}\n', "line 1"),
        (b'{"kind": "neuron", "id": "n"}\n', "line 1"),
        (
            b'{"kind": "memory", "id": "m", "text": "a"}\n{"kind": "memory", "id": "m", '
            b'"text": "b"}\n',
            "line 2: node 'm' repeats",
        ),
        (
            b'{"kind": "memory", "id": "m", "text": "a", "embedding": "AAAAAA=="}\n',
            "1 floats, not 4",
        ),
        (b"not json\n", "not JSON"),
        # ADR 0188: nested as deep as append refuses (a payload 600 deep broke `engram log`,
        # 50,000 deep crashed the import), or with a lone surrogate, named as such.
        (
            b'{"kind": "concept", "id": "c", "type": "pattern", "label": "x", "payload": {"v": '
            + b"[" * 600
            + b"]" * 600
            + b"}}\n",
            "line 1: JSON nested more than 200 levels deep",
        ),
        (b'{"kind": "concept", "id": "c", "payload": ' + b"[" * 50_000 + b"\n", "200 levels"),
        (b'{"kind": "memory", "id": "m", "text": "lone \\ud800 x"}\n', r"surrogate escape \\ud800"),
    ],
)
def test_a_node_that_does_not_fit_names_its_line(
    tmp_path: Path, jsonl: bytes, message: str
) -> None:
    path = tmp_path / "p.pack"
    write_pack(path, _manifest(jsonl, jsonl.count(b"\n"), dimension=4), jsonl, RAW)
    with pytest.raises(PackFormatError, match=message):
        read_pack(path, RAW)


def test_the_node_count_must_match_the_manifest(tmp_path: Path) -> None:
    jsonl = encode_nodes(_nodes())
    write_pack(tmp_path / "p.pack", _manifest(jsonl, 3, dimension=4), jsonl, RAW)
    with pytest.raises(PackFormatError, match=r"holds 2 nodes, pack\.json says 3"):
        read_pack(tmp_path / "p.pack", RAW)


def test_keys_come_from_a_named_variable_or_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PACK_TEST_KEY", raising=False)
    with pytest.raises(PackKeyError, match="PACK_TEST_KEY is not set"):
        PackKey.from_env("PACK_TEST_KEY")
    monkeypatch.setenv("PACK_TEST_KEY", "  ")
    with pytest.raises(PackKeyError, match="is empty"):
        PackKey.from_env("PACK_TEST_KEY")
    monkeypatch.setenv("PACK_TEST_KEY", "short")
    with pytest.raises(PackKeyError, match="at least 8"):
        PackKey.from_env("PACK_TEST_KEY")
    monkeypatch.setenv("PACK_TEST_KEY", bytes(range(32)).hex().upper())
    assert PackKey.from_env("PACK_TEST_KEY").material == RAW.material
    (tmp_path / "raw.key").write_bytes(os.urandom(32))
    assert PackKey.from_file(tmp_path / "raw.key").raw
    (tmp_path / "pass.key").write_text("a long passphrase\n")
    key = PackKey.from_file(tmp_path / "pass.key")
    assert (key.raw, key.material) == (False, b"a long passphrase")
    with pytest.raises(PackKeyError, match="cannot read the key file"):
        PackKey.from_file(tmp_path / "missing.key")


@pytest.mark.parametrize(
    "placeholder", ["…64 hex digits or a passphrase…", "<your pack key>", "...set me..."]
)
def test_a_documentation_placeholder_is_not_a_key(
    placeholder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PACK_TEST_KEY", placeholder)
    with pytest.raises(PackKeyError, match="placeholder"):
        PackKey.from_env("PACK_TEST_KEY")


def test_the_header_is_authenticated_data_and_starts_with_the_magic(tmp_path: Path) -> None:
    path = tmp_path / "p.pack"
    manifest = _write(path)
    data = path.read_bytes()
    assert data.startswith(MAGIC)
    (length,) = struct.unpack(">I", data[8:12])
    header = msgspec.json.decode(data[12 : 12 + length])
    assert header["pack"]["checksum"] == manifest.checksum
    assert header["cipher"] == "AES-256-GCM"
    assert len(bytes.fromhex(header["nonce"])) == 12


def test_node_event_ids_are_uuid5_of_the_pack_and_the_node() -> None:
    import uuid

    from engram.agents.packs import node_event_id

    pack = pack_id("idioms", "3")
    for node in ("MemoryNode:m1", "ConceptNode:py.idiom", "é 😀", ""):
        assert node_event_id(pack, node) == str(uuid.uuid5(uuid.UUID(pack), node))
    with pytest.raises(PackFormatError, match="not a UUID"):
        node_event_id("not-a-uuid", "n")


def _forge(path: Path, **params: int) -> None:
    """Rewrite a passphrase pack's header with other scrypt parameters (its tag then fails)."""
    data = path.read_bytes()
    (length,) = struct.unpack(">I", data[8:12])
    header = msgspec.json.decode(data[12 : 12 + length])
    head = msgspec.json.encode({**header, **params})
    path.write_bytes(MAGIC + struct.pack(">I", len(head)) + head + data[12 + length :])


@pytest.mark.parametrize(
    "params",
    [
        {"n": 2**20, "r": 32, "p": 1},  # 4 GiB of memory
        {"n": 2**17, "r": 8, "p": 4},  # 128 MiB and 16 times the default work
        {"n": 2**16, "r": 16, "p": 1},  # 128 MiB
        {"n": 3 * 2**12, "r": 8, "p": 1},  # not a power of two: scrypt itself would raise
    ],
    ids=["4GiB", "work", "memory", "not-a-power"],
)
def test_a_forged_scrypt_header_is_refused_before_deriving(
    tmp_path: Path, params: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p.pack"
    _write(path, PASSPHRASE)
    _forge(path, **params)
    derived: list[object] = []
    monkeypatch.setattr("engram.agents.packs.format.Scrypt", lambda **kw: derived.append(kw))
    with pytest.raises(PackFormatError, match="scrypt parameters"):
        read_pack(path, PASSPHRASE)
    assert derived == []


def test_the_default_and_a_doubled_scrypt_cost_still_open(tmp_path: Path) -> None:
    path = tmp_path / "p.pack"
    manifest = _write(path, PASSPHRASE)
    assert read_pack(path, PASSPHRASE)[0] == manifest
    _forge(path, n=2**16)  # twice the default's memory: allowed, then the tag decides
    with pytest.raises(PackAuthError):
        read_pack(path, PASSPHRASE)


def test_a_device_a_fifo_and_a_folder_are_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "p.pack"
    os.mkfifo(fifo)
    for path in (Path("/dev/zero"), fifo, tmp_path):
        with pytest.raises(PackFormatError, match="not a regular file"):
            read_pack(path, RAW)  # a FIFO with no writer would block a plain open
        with pytest.raises(PackFormatError, match="not a regular file"):
            peek(path)
    with pytest.raises(PackKeyError, match="not a regular file"):
        PackKey.from_file("/dev/zero")


def test_a_pack_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "p.pack"
    _write(path)
    size = path.stat().st_size
    assert read_pack(path, RAW, max_bytes=size)[1] == _nodes()
    with pytest.raises(PackFormatError, match=f"at most {size - 1:,}"):
        read_pack(path, RAW, max_bytes=size - 1)
    sparse = tmp_path / "big.pack"
    with open(sparse, "wb") as out:  # 257 MiB that take no disk: refused by its size alone
        out.write(MAGIC)
        out.truncate(257 << 20)
    with pytest.raises(PackFormatError, match="the pack may have at most"):
        read_pack(sparse, RAW)


def test_an_archive_that_unpacks_beyond_its_bound_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p.pack"
    _write(path)
    monkeypatch.setattr("engram.agents.packs.format._UNPACK_FACTOR", 0)
    with pytest.raises(PackFormatError, match="unpacks to more than 0 bytes"):
        read_pack(path, RAW)


def _resealed(path: Path, inner: bytes) -> None:
    """Seal ``inner`` as the pack's archive under the pack's own key (RAW): what anyone who
    holds a shared pack's key can make."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from engram.agents.packs.format import _split

    header, prefix, _sealed = _split(path.read_bytes(), str(path))
    nonce = bytes.fromhex(header.nonce)
    path.write_bytes(prefix + AESGCM(RAW.derive(header)).encrypt(nonce, inner, prefix))


def _archive(members: dict[str, bytes], method: int = zipfile.ZIP_STORED) -> bytearray:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return bytearray(out.getvalue())


def _flagged(archive: bytearray, signature: bytes, offset: int, value: bytes) -> bytes:
    """Overwrite ``value`` at ``offset`` after every ``signature`` (the zip's headers)."""
    at = 0
    while (at := archive.find(signature, at)) != -1:
        archive[at + offset : at + offset + len(value)] = value
        at += 4
    return bytes(archive)


@pytest.mark.parametrize(
    "damage",
    ["manifest not JSON", "manifest an array", "member encrypted", "unknown method", "bad deflate"],
)
def test_an_authentic_pack_with_a_damaged_archive_is_a_format_error(
    tmp_path: Path, damage: str
) -> None:
    path = tmp_path / "p.pack"
    _write(path)
    manifest, _ = read_pack(path, RAW)
    jsonl = encode_nodes(_nodes())
    members = {"pack.json": msgspec.json.encode(manifest), "nodes.jsonl": jsonl}
    if damage == "manifest not JSON":
        inner = bytes(_archive({**members, "pack.json": b"{x"}))
    elif damage == "manifest an array":
        inner = bytes(_archive({**members, "pack.json": b"[]"}))
    elif damage == "member encrypted":  # the general-purpose flag's bit 0, both headers
        inner = _flagged(_archive(members), b"PK\x03\x04", 6, b"\x01")
        inner = _flagged(bytearray(inner), b"PK\x01\x02", 8, b"\x01")
    elif damage == "unknown method":  # compression method 99, both headers
        inner = _flagged(_archive(members), b"PK\x03\x04", 8, b"\x63\x00")
        inner = _flagged(bytearray(inner), b"PK\x01\x02", 10, b"\x63\x00")
    else:
        archive = _archive(members, zipfile.ZIP_DEFLATED)
        start = archive.find(b"pack.json") + len(b"pack.json")
        for i in range(start, start + 30):
            archive[i] ^= 0x55
        inner = bytes(archive)
    _resealed(path, inner)
    with pytest.raises(PackFormatError, match=r"not a pack archive|not a pack's manifest"):
        read_pack(path, RAW)


def test_a_pack_of_empty_lines_or_too_many_nodes_is_refused_before_it_is_split(
    tmp_path: Path,
) -> None:
    # ADR 0186: 100 MiB of newlines in a 458 KB pack took 9 GB to refuse; the lines are
    # counted before one is split out, and a manifest may claim at most MAX_NODES nodes.
    jsonl = b"\n" * 50_000
    write_pack(tmp_path / "p.pack", _manifest(jsonl, 0), jsonl, RAW)
    with pytest.raises(PackFormatError, match=r"holds 50,000 nodes, pack\.json says 0"):
        read_pack(tmp_path / "p.pack", RAW)
    write_pack(tmp_path / "q.pack", _manifest(jsonl, 50_000), jsonl, RAW)
    with pytest.raises(PackFormatError, match="an empty line"):
        read_pack(tmp_path / "q.pack", RAW)
    claimed = msgspec.json.encode(_manifest(jsonl, MAX_NODES + 1))
    with pytest.raises(msgspec.ValidationError, match="nodes"):
        msgspec.json.decode(claimed, type=Manifest)
