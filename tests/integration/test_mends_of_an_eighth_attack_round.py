"""What an eighth attack round found, mended (ADR 0188): a payload nested deep, already in a
ledger, is shown by `engram log`, never a RecursionError; a refused name is quoted short; a
config file's bad `max_payload_bytes` and a projection store that is a file are named as
such (the packs' own refusal of deep nesting is tested with the packs' format)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

import engram
from engram.cli import main
from engram.ledger import NewEvent
from engram.ledger.errors import EnvelopeError
from engram.ledger.json_values import MAX_LINE_DEPTH, nested_deeper


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def _deep(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_a_payload_nested_deep_is_shown_by_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "ledger.db")
    with engram.open(path, config="/dev/null") as ledger:
        ledger.append(
            NewEvent(
                stream="concept:deep",
                kind="concept.upserted",
                payload={
                    "id": "deep",
                    "type": "pattern",
                    "label": "x",
                    "agent": "victim",
                    "payload": {"v": _deep(600)},
                },
            )
        )
    for fmt in ("table", "json", "jsonl"):
        code, out, err = run(
            capsys, "--ledger", path, "--config", "/dev/null", "log", "--format", fmt
        )
        assert code == 0, err
        assert "concept.upserted" in out
        assert "RecursionError" not in out + err
    code, out, _ = run(capsys, "--ledger", path, "--config", "/dev/null", "log", "--format", "json")
    # Too deep to walk, the payload is its JSON text: what the ledger holds, whole.
    (row,) = json.loads(out)
    text = row["payload"] if isinstance(row["payload"], str) else json.dumps(row["payload"])
    assert "[" * 600 + "]" * 600 in text


def test_nesting_is_measured_outside_strings() -> None:
    assert not nested_deeper(b"[" * MAX_LINE_DEPTH + b"]" * MAX_LINE_DEPTH)
    assert nested_deeper(b"[" * (MAX_LINE_DEPTH + 1) + b"]" * (MAX_LINE_DEPTH + 1))
    assert not nested_deeper(b'{"text": "' + b"[" * 5000 + b'"}')


def test_a_refused_name_is_quoted_short(tmp_path: Path) -> None:
    with engram.open(str(tmp_path / "l.db"), config="/dev/null") as ledger:
        with pytest.raises(EnvelopeError, match=r"\(100,000 characters\)") as refused:
            ledger.append(NewEvent(stream="a" * 100_000, kind="memory.observed",
                                   payload={"agent": "a", "text": "x"}))  # fmt: skip
        assert len(str(refused.value)) < 400
        assert ledger.head() == 0


def test_a_config_file_s_bad_values_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "engram.toml"
    config.write_text(f'ledger = "{tmp_path / "l.db"}"\nmax_payload_bytes = -1\n')
    code, _, err = run(capsys, "--config", str(config), "status")
    assert code == 2
    assert f"config file {config}: max_payload_bytes must be a positive int, got -1" in err
    afile = tmp_path / "not-a-folder"
    afile.write_text("")
    config.write_text(f'ledger = "{tmp_path / "l.db"}"\nprojections = "{afile}"\n')
    code, _, err = run(capsys, "--config", str(config), "observe", "alice", "hello")
    assert code != 0
    assert f"store {afile} exists and is not a directory" in err
    assert not (tmp_path / "l.db").exists() or "Errno" not in err


def test_mcp_says_which_import_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = str(tmp_path / "l.db")
    # A module of engram's own that cannot be imported is no missing SDK.
    monkeypatch.setitem(sys.modules, "engram.mcp.server", None)
    code, _, err = run(capsys, "--ledger", ledger, "--config", "/dev/null", "mcp", "--agent", "a")
    assert code != 0
    assert "cannot start the MCP server" in err
    assert "not installed" not in err
    # The SDK missing is said as such.
    monkeypatch.delitem(sys.modules, "engram.mcp.server")
    monkeypatch.setitem(sys.modules, "mcp", None)
    for name in [m for m in sys.modules if m.startswith("mcp.")]:
        monkeypatch.delitem(sys.modules, name)
    code, _, err = run(capsys, "--ledger", ledger, "--config", "/dev/null", "mcp", "--agent", "a")
    assert code != 0
    assert "the MCP SDK is not installed" in err
