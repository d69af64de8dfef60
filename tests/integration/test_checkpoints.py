"""Signed checkpoints (ADR 0033): what a hash chain alone cannot see, a signature does.

The attacker here rewrites history the strong way: a ledger whose chain is valid from end to
end (built by appending other events after a shared prefix, exactly what recomputing the
chain after an edit produces), or cut short, or built from scratch. ``verify`` alone passes
on each; ``verify`` against the checkpoints signed on the original must name the problem.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram.cli import main
from engram.ledger import CheckpointError, Ledger, NewEvent, default_registry
from engram.ledger.catalog import NeuronActivated, NeuronCreated
from engram.ledger.checkpoints import (
    CheckpointReport,
    generate_key,
    load_checkpoints,
    load_private_key,
    load_public_key,
    sign,
    verify_checkpoints,
)

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
IDS = [f"0196a3c0-0000-7000-8000-{n:012x}" for n in range(1, 100)]


def history(n: int, *, fork_at: int | None = None) -> list[NewEvent]:
    """``n`` events; from ``fork_at`` on, other strengths (a rewritten tail, same ids)."""
    events = [
        NewEvent.of(
            NeuronCreated(id="n1", concept="perception", type="core"),
            stream="neuron:n1",
            id=IDS[0],
            at=T0,
        )
    ]
    for i in range(1, n):
        strength = 0.5 if fork_at is None or i + 1 < fork_at else 0.9
        events.append(
            NewEvent.of(
                NeuronActivated(id="n1", strength=strength),
                stream="neuron:n1",
                id=IDS[i],
                at=T0 + timedelta(minutes=i),
            )
        )
    return events


def ledger_with(path: Path, events: list[NewEvent]) -> Ledger:
    ledger = Ledger.open(str(path), default_registry())
    ledger.append(events)
    return ledger


@pytest.fixture
def key(tmp_path: Path) -> Path:
    key = tmp_path / "keys" / "signing.pem"
    key.parent.mkdir()
    generate_key(key)
    return key


def signed_original(tmp_path: Path, key: Path, sizes: tuple[int, ...] = (3, 6)) -> Path:
    anchors = tmp_path / "anchors"
    with Ledger.open(str(tmp_path / "original.db"), default_registry()) as ledger:
        done = 0
        for size in sizes:
            ledger.append(history(size)[done:])
            done = size
            sign(ledger, load_private_key(key), anchors)
    return anchors


def check(ledger: Ledger, anchors: Path, key: Path) -> CheckpointReport:
    public = load_public_key(key.with_name(key.name + ".pub"))
    return verify_checkpoints(ledger, load_checkpoints(anchors, public))


def test_the_original_agrees_with_its_checkpoints(tmp_path: Path, key: Path) -> None:
    anchors = signed_original(tmp_path, key)
    with Ledger.open(str(tmp_path / "original.db"), default_registry()) as ledger:
        ledger.append(history(8)[6:])
        report = check(ledger, anchors, key)
    assert report.ok, report
    assert (report.checkpoints, report.covered, report.head) == (2, 6, 8)
    assert "2 event(s) after the newest checkpoint" in str(report)


def test_a_recomputed_chain_is_named_a_rewrite(tmp_path: Path, key: Path) -> None:
    anchors = signed_original(tmp_path, key)
    with ledger_with(tmp_path / "forged.db", history(6, fork_at=5)) as forged:
        assert forged.verify().ok  # the chain alone cannot tell
        report = check(forged, anchors, key)
    assert not report.ok
    assert [(f.position, f.problem) for f in report.findings] == [(6, "rewritten")]
    assert report.covered == 3  # the checkpoint before the fork still agrees


def test_signing_a_rewritten_head_never_overwrites_its_checkpoint(
    tmp_path: Path, key: Path
) -> None:
    # ADR 0141: a routine `engram checkpoint` over a rewritten history replaced the file that
    # proved the rewrite with a signature of the new hash; verify then said all agreed.
    anchors = signed_original(tmp_path, key)
    kept = (anchors / "checkpoint-000000000006.json").read_bytes()
    with ledger_with(tmp_path / "forged.db", history(6, fork_at=5)) as forged:
        with pytest.raises(CheckpointError, match="another hash"):
            sign(forged, load_private_key(key), anchors)
        assert (anchors / "checkpoint-000000000006.json").read_bytes() == kept
        assert [f.position for f in check(forged, anchors, key).findings] == [6]
    with ledger_with(tmp_path / "same.db", history(6)) as same:
        sign(same, load_private_key(key), anchors)  # the same history: the same checkpoint


def test_a_new_head_is_not_signed_over_a_rewritten_history(tmp_path: Path, key: Path) -> None:
    # ADR 0144: after a rewrite before the last checkpoint and one more event, `engram
    # checkpoint` signed the forged head beside the checkpoint that proved the rewrite.
    anchors = signed_original(tmp_path, key)
    with (
        ledger_with(tmp_path / "forged.db", history(7, fork_at=5)) as forged,
        pytest.raises(CheckpointError, match="position 6 of another hash"),
    ):
        sign(forged, load_private_key(key), anchors)
    assert sorted(p.name for p in anchors.glob("*.json")) == [
        "checkpoint-000000000003.json", "checkpoint-000000000006.json",
    ]  # fmt: skip
    with ledger_with(tmp_path / "grown.db", history(7)) as grown:
        _, path = sign(grown, load_private_key(key), anchors)  # the same history grown
        assert path.name == "checkpoint-000000000007.json"
    with (
        ledger_with(tmp_path / "other.db", history(9, fork_at=1)) as other,
        pytest.raises(CheckpointError, match="another"),
    ):
        sign(other, load_private_key(key), anchors)


def test_a_cut_tail_is_named_a_truncation(tmp_path: Path, key: Path) -> None:
    anchors = signed_original(tmp_path, key)
    with ledger_with(tmp_path / "short.db", history(4)) as short:
        assert short.verify().ok
        report = check(short, anchors, key)
    assert [(f.position, f.problem) for f in report.findings] == [(6, "truncated")]
    assert "ends at 4" in str(report)


def test_a_cut_tail_is_not_signed_below_the_checkpoint_that_proves_it(
    tmp_path: Path, key: Path
) -> None:
    # ADR 0160: with checkpoints at 3 and 6, a ledger cut to 4 was signed at 4.
    anchors = signed_original(tmp_path, key)
    with (
        ledger_with(tmp_path / "short.db", history(4)) as short,
        pytest.raises(CheckpointError, match="position 6, beyond this ledger's head 4"),
    ):
        sign(short, load_private_key(key), anchors)
    assert sorted(p.name for p in anchors.glob("*.json")) == [
        "checkpoint-000000000003.json", "checkpoint-000000000006.json",
    ]  # fmt: skip


def test_a_ledger_built_from_scratch_is_another_ledger(tmp_path: Path, key: Path) -> None:
    anchors = signed_original(tmp_path, key)
    other = history(6)
    other[0] = NewEvent.of(
        NeuronCreated(id="n1", concept="other", type="core"), stream="neuron:n1", at=T0
    )
    with ledger_with(tmp_path / "other.db", other) as ledger:
        report = check(ledger, anchors, key)
    assert {f.problem for f in report.findings} == {"other-ledger"}


def test_a_broken_chain_fails_before_the_checkpoints(tmp_path: Path, key: Path) -> None:
    anchors = signed_original(tmp_path, key)
    path = tmp_path / "original.db"
    with sqlite3.connect(path) as raw:  # an edit in place, behind the triggers' back
        for (name,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
            raw.execute(f'DROP TRIGGER "{name}"')
        raw.execute("UPDATE events SET payload = replace(payload, '0.5', '0.7') WHERE position = 2")
    with Ledger.open(str(path), default_registry()) as ledger:
        report = check(ledger, anchors, key)
    assert not report.ok
    assert "FAILED at position 2" in str(report)


def test_a_chain_that_fails_since_the_last_checkpoint_is_not_signed(
    tmp_path: Path, key: Path
) -> None:
    # ADR 0163: a payload edited after the last checkpoint, its stored hash untouched, was
    # signed at the next head; the chain is checked from that checkpoint on.
    anchors = signed_original(tmp_path, key)
    path = tmp_path / "original.db"
    with Ledger.open(str(path), default_registry()) as ledger:
        ledger.append(history(9)[6:])
    with sqlite3.connect(path) as raw:
        for (name,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
            raw.execute(f'DROP TRIGGER "{name}"')
        raw.execute("UPDATE events SET payload = replace(payload, '0.5', '0.7') WHERE position = 8")
    with (
        Ledger.open(str(path), default_registry()) as ledger,
        pytest.raises(CheckpointError, match="chain fails at position 8"),
    ):
        sign(ledger, load_private_key(key), anchors)
    assert not (anchors / "checkpoint-000000000009.json").exists()


def test_a_forged_or_foreign_checkpoint_is_refused(tmp_path: Path, key: Path) -> None:
    anchors = signed_original(tmp_path, key)
    public = load_public_key(key.with_name(key.name + ".pub"))
    target = anchors / "checkpoint-000000000006.json"
    data = json.loads(target.read_text())
    data["hash"] = "0" * 64  # point the anchor at a forged history
    target.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="signature does not match"):
        load_checkpoints(anchors, public)
    other = tmp_path / "keys" / "other.pem"
    generate_key(other)
    with pytest.raises(CheckpointError, match="not by the key given"):
        load_checkpoints(signed_original(tmp_path / "b", key), load_public_key(f"{other}.pub"))


def test_a_key_left_without_its_public_half_gets_it_and_is_still_never_overwritten(
    tmp_path: Path, key: Path
) -> None:
    # A run killed between writing the private key and its .pub left a key that --new-key
    # refused forever and no verifier could use; the public key is derived from it.
    public = Path(f"{key}.pub")
    expected = public.read_bytes()
    before = key.read_bytes()
    public.unlink()
    with pytest.raises(CheckpointError, match="without its public key") as refused:
        generate_key(key)
    assert str(public) in str(refused.value)
    assert public.read_bytes() == expected
    assert key.read_bytes() == before
    assert load_public_key(public) is not None
    with pytest.raises(CheckpointError, match="never overwritten"):
        generate_key(key)


def test_keys_are_private_and_never_overwritten(tmp_path: Path, key: Path) -> None:
    assert os.stat(key).st_mode & 0o777 == 0o600
    before = key.read_bytes()
    with pytest.raises(CheckpointError, match="never overwritten"):
        generate_key(key)
    assert key.read_bytes() == before
    with pytest.raises(CheckpointError, match=r"not an Ed25519 key|not a PEM public key"):
        load_public_key(key)  # a private key given where the public one goes
    (tmp_path / "junk.pem").write_text("hello")
    with pytest.raises(CheckpointError, match="not an unencrypted PEM private key"):
        load_private_key(tmp_path / "junk.pem")


def test_signing_twice_at_one_head_keeps_one_checkpoint(tmp_path: Path, key: Path) -> None:
    with ledger_with(tmp_path / "l.db", history(3)) as ledger:
        first, path = sign(ledger, load_private_key(key), tmp_path / "a")
        again, same = sign(ledger, load_private_key(key), tmp_path / "a")
    assert (first, path) == (again, same)
    assert [p.name for p in (tmp_path / "a").iterdir()] == [path.name]


def test_an_edited_checkpoint_at_the_head_is_not_taken_as_signed(tmp_path: Path, key: Path) -> None:
    with ledger_with(tmp_path / "l.db", history(3)) as ledger:
        _, path = sign(ledger, load_private_key(key), tmp_path / "a")
        signed = path.read_bytes()
        path.write_bytes(signed.replace(b'"position": 3', b'"position": 2'))
        with pytest.raises(CheckpointError, match="names position 3 but holds 2"):
            sign(ledger, load_private_key(key), tmp_path / "a")
        edited = json.loads(signed)
        edited["signed_at"] = "2020-01-01T00:00:00Z"  # the signature no longer matches
        path.write_text(json.dumps(edited))
        with pytest.raises(CheckpointError, match="signature does not match"):
            sign(ledger, load_private_key(key), tmp_path / "a")
        assert json.loads(path.read_text()) == edited  # kept as the evidence it is
        path.write_bytes(signed)
        assert sign(ledger, load_private_key(key), tmp_path / "a")[1] == path


def test_an_empty_ledger_has_nothing_to_sign(tmp_path: Path, key: Path) -> None:
    with (
        Ledger.open(str(tmp_path / "e.db"), default_registry()) as ledger,
        pytest.raises(CheckpointError, match="empty"),
    ):
        sign(ledger, load_private_key(key), tmp_path / "a")
    assert not (tmp_path / "a").exists()


def test_postgres_ledgers_sign_and_verify_the_same_way(
    tmp_path: Path, key: Path, pg_dsn: str, pg_schema: str
) -> None:
    with Ledger.open(pg_dsn, default_registry(), pg_schema=pg_schema) as ledger:
        ledger.append(history(5))
        sign(ledger, load_private_key(key), tmp_path / "pg")
        assert check(ledger, tmp_path / "pg", key).ok
    with ledger_with(tmp_path / "copy.db", history(5, fork_at=2)) as forged:
        report = check(forged, tmp_path / "pg", key)
    assert [f.problem for f in report.findings] == ["rewritten"]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def test_the_command_line_signs_and_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, key, anchors = str(tmp_path / "l.db"), tmp_path / "k.pem", tmp_path / "anchors"
    with ledger_with(Path(db), history(4)):
        pass
    code, out, err = cli(
        capsys, "--ledger", db, "checkpoint", "--new-key", "--key", str(key), "--dir", str(anchors)
    )
    assert code == 0, err
    assert "signed position 4" in out
    assert f"{key}.pub" in err
    pub = f"{key}.pub"
    code, out, _ = cli(
        capsys, "--ledger", db, "verify", "--checkpoints", str(anchors), "--public-key", pub
    )
    assert (code, out.strip()) == (
        0,
        "ok: 1 signed checkpoint(s) agree; the chain holds to head 4, signed up to 4",
    )
    forged = tmp_path / "forged.db"
    with ledger_with(forged, history(4, fork_at=3)):
        pass
    code, out, _ = cli(
        capsys,
        "--ledger",
        str(forged),
        "verify",
        "--checkpoints",
        str(anchors),
        "--public-key",
        pub,
    )
    assert code == 1
    assert "history up to it was rewritten" in out
    code, _, err = cli(
        capsys, "--ledger", db, "checkpoint", "--new-key", "--key", str(key), "--dir", str(anchors)
    )
    assert code == 1
    assert "never overwritten" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = cli(capsys, "--ledger", db, "verify", "--checkpoints", str(anchors))
    assert code == 2
    assert "--public-key" in err


def test_a_device_a_fifo_or_a_huge_file_is_refused_as_a_key_or_a_checkpoint(
    tmp_path: Path, key: Path
) -> None:
    fifo = tmp_path / "fifo.pem"
    os.mkfifo(fifo)  # a FIFO with no writer would block a plain open
    big = tmp_path / "big.pem"
    with open(big, "wb") as out:  # sparse: 1 GiB that takes no disk
        out.truncate(1 << 30)
    for path in (Path("/dev/zero"), fifo):  # /dev/zero read whole fills the memory
        with pytest.raises(CheckpointError, match="not a regular file"):
            load_private_key(path)
        with pytest.raises(CheckpointError, match="not a regular file"):
            load_public_key(path)
    with pytest.raises(CheckpointError, match="larger than 65,536 bytes"):
        load_public_key(big)
    anchors = signed_original(tmp_path, key)
    public = load_public_key(key.with_name(key.name + ".pub"))
    target = anchors / "checkpoint-000000000006.json"
    target.unlink()
    target.symlink_to("/dev/zero")  # a tampered folder: the newest anchor made endless
    with pytest.raises(CheckpointError, match=r"checkpoint-000000000006.json: not a regular"):
        load_checkpoints(anchors, public)
