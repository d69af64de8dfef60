""" "kind" names the event kind only (ADR 0069): the renamed flags, and their old spellings."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from engram.cli import main


@pytest.fixture(autouse=True)
def _no_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_CONFIG", os.devnull)
    monkeypatch.delenv("ENGRAM_LEDGER", raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def _deprecations(err: str) -> list[str]:
    return [line for line in err.splitlines() if "deprecated" in line]


def _scar(capsys: pytest.CaptureFixture[str], db: str, flag: str, outcome: str) -> str:
    code, _, err = run(
        capsys, "--ledger", db, "scars", "record", "alice", flag, outcome,
        "--what", f"a {outcome}", "--lesson", "a lesson",
    )  # fmt: skip
    assert code == 0, err
    return err


def test_scars_take_outcome_and_still_take_kind_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "cli.db")
    assert _deprecations(_scar(capsys, db, "--outcome", "failure")) == []
    assert _deprecations(_scar(capsys, db, "--kind", "victory")) == [
        "warning: --kind is deprecated, use --outcome instead"
    ]
    for flag, warned in (("--outcome", 0), ("--kind", 1)):
        code, out, err = run(
            capsys, "--ledger", db, "scars", "list", flag, "victory", "--format", "json"
        )
        assert code == 0, err
        assert [row["kind"] for row in json.loads(out)] == ["victory"]
        assert len(_deprecations(err)) == warned


def test_a_scar_needs_its_outcome(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "cli.db")
    code, _, err = run(
        capsys, "--ledger", db, "scars", "record", "alice", "--what", "w", "--lesson", "l"
    )
    assert code == 2
    assert "--outcome" in err
    assert not Path(db).exists()


def test_graph_top_takes_item_and_still_takes_kind_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "cli.db")
    code, _, err = run(capsys, "--ledger", db, "observe", "alice", "the deploy failed at 3am")
    assert code == 0, err
    for flag, warned in (("--item", 0), ("--kind", 1)):
        code, out, err = run(
            capsys, "--ledger", db, "graph", "top", flag, "memory", "--format", "json"
        )
        assert code == 0, err
        assert [row["kind"] for row in json.loads(out)] == ["memory"]
        assert len(_deprecations(err)) == warned


def test_a_flag_and_its_old_spelling_together_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "cli.db")
    _scar(capsys, db, "--outcome", "failure")
    code, _, err = run(
        capsys, "--ledger", db, "scars", "record", "alice", "--outcome", "failure",
        "--kind", "victory", "--what", "w", "--lesson", "l",
    )  # fmt: skip
    assert code == 2
    assert "give --outcome only" in err
    code, _, err = run(
        capsys, "--ledger", db, "graph", "top", "--item", "neuron", "--kind", "memory"
    )
    assert code == 2
    assert "give --item only" in err
    code, out, _ = run(capsys, "--ledger", db, "scars", "list", "--format", "json")
    assert len(json.loads(out)) == 1  # the refused record wrote nothing
