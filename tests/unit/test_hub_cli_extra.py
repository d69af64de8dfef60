"""`engram hub` without its extra installed: one clear line naming the extra, exit 1."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.cli import cli


def test_hub_without_its_server_says_which_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn now raises ImportError
    result = CliRunner().invoke(cli, ["--ledger", str(tmp_path / "ledger.db"), "hub"])
    assert result.exit_code == 1, result.output
    assert "pip install 'engram[hub]'" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "ledger.db").exists()
