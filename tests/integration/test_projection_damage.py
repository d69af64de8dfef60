"""A damaged projection store (its SQLite file truncated or overwritten) is named as damaged,
with the way out, by every command; ``engram rebuild`` sets the file aside and builds the store
again from the ledger, to the same digests as before the damage."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from engram.cli import main
from engram.projections import ProjectionStoreDamagedError
from engram.projections.store import ProjectionStore, set_aside


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def _truncate(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(8192)


def _overwrite(path: Path) -> None:
    path.write_bytes(b"this is not what a database looks like " * 200)


@pytest.mark.parametrize("damage", [_truncate, _overwrite], ids=["truncated", "overwritten"])
def test_a_damaged_store_is_named_and_rebuild_sets_it_aside_and_builds_it_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Callable[[Path], None]
) -> None:
    db = str(tmp_path / "m.db")
    for i in range(40):
        assert run(capsys, "--ledger", db, "observe", "alice", f"deploy note {i}")[0] == 0
    code, before, _ = run(capsys, "--ledger", db, "status", "--format", "json", "--digest")
    assert code == 0
    digests = {r["name"]: r["digest"] for r in json.loads(before)}
    store = tmp_path / "m.db.projections"
    damage(store / "projections.db")
    for path in store.glob("projections.db-*"):
        path.unlink()

    for argv in (["recall", "alice", "deploy"], ["status"]):
        code, _, err = run(capsys, "--ledger", db, *argv)
        assert code != 0
        assert "is damaged" in err, err
        assert "engram rebuild" in err
        assert "Traceback" not in err

    code, out, err = run(capsys, "--ledger", db, "rebuild", "salience")
    assert code == 0, err
    (aside,) = store.glob("projections.db.damaged-*")
    assert "set aside as" in err
    assert aside.name in err
    assert not set_aside(tmp_path / "nowhere")  # nothing there: nothing moved
    code, after, _ = run(capsys, "--ledger", db, "status", "--format", "json", "--digest")
    rebuilt = {r["name"]: r["digest"] for r in json.loads(after)}
    assert rebuilt == digests  # every projection, as before the damage
    code, out, _ = run(capsys, "--ledger", db, "recall", "alice", "deploy note 7", "-k", "1")
    assert code == 0
    assert "deploy note 7" in out


def test_the_python_api_raises_the_damaged_store_error_with_its_directory(
    tmp_path: Path,
) -> None:
    ProjectionStore(tmp_path / "store")._conn.close()
    _overwrite(tmp_path / "store" / "projections.db")
    with pytest.raises(ProjectionStoreDamagedError) as raised:
        ProjectionStore(tmp_path / "store")
    assert raised.value.directory == str(tmp_path / "store")
    assert set_aside(raised.value.directory) is not None
    ProjectionStore(tmp_path / "store")._conn.close()  # a fresh store opens
