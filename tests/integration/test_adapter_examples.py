"""The adapters' examples run offline, end to end, and say what the docs quote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples"


def _run(script: str, ledger: Path) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), str(ledger)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.stdout


def test_the_langgraph_example_shares_a_memory_across_threads(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.graph")
    out = _run("langgraph_store.py", tmp_path / "ledger.db")
    assert "recalled: ['Remember that I am vegetarian.']" in out
    assert "store.put events in the ledger: 1" in out


def test_the_openai_agents_example_recalls_across_sessions(tmp_path: Path) -> None:
    pytest.importorskip("agents.memory.session_settings")
    out = _run("openai_agents_session.py", tmp_path / "ledger.db")
    assert "session trip-1 holds 4 items" in out
    assert "popped: 'Your seat is 12A.'" in out
    assert "session trip-2 holds 0 items" in out
    assert "recalled (" in out
    assert "Book me the Friday flight to Lisbon." in out.split("trip-2")[1]
