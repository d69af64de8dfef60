"""A command's process loads what that command needs: the lazy command table and its cost.

``engram recall`` runs as a fresh process from an agent's shell or a hook, so what it imports
is latency a user pays on every call (ADR 0088). These tests hold the table of commands true
and keep the heavy modules no recall needs (DuckDB, the scheduler, the hub, httpx, the
PostgreSQL dialect, the MCP SDK) out of a recall process.
"""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import engram.cli
from engram.cli.app import COMMANDS, cli, load_all

#: Modules a recall on an existing SQLite ledger must not import.
NOT_FOR_RECALL = (
    "duckdb",
    "apscheduler",
    "httpx",
    "mcp",
    "engram.hub",
    "engram.ledger.audit",
    "engram.jobs.daemon",
    "engram.jobs.runner",
    "sqlalchemy.dialects.postgresql",
    "engram.cli.ledger_commands",
    "engram.cli.jobs_commands",
)


def test_the_table_names_every_command_where_it_is_defined() -> None:
    # Import every module of the package, listed or not: a new module's command must be in
    # the table, or the lazy group would never load it.
    for module in pkgutil.iter_modules(engram.cli.__path__):
        __import__(f"engram.cli.{module.name}")
    load_all()
    defined = {
        name: command.callback.__module__.rpartition(".")[2]
        for name, command in cli.commands.items()
        if command.callback is not None
    }
    assert defined == COMMANDS


def test_help_lists_every_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "engram", "--help"], capture_output=True, text=True, check=True
    )
    commands = result.stdout.split("Commands:", 1)[1].split("Examples:", 1)[0]
    listed = {
        line.split()[0] for line in commands.splitlines() if line.startswith("  ") and line.strip()
    }
    assert listed == set(COMMANDS)


def test_an_unknown_command_is_a_usage_error() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "engram", "recal", "alice", "x"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "No such command 'recal'" in result.stderr


def test_recall_does_not_load_what_it_does_not_need(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    env = {**os.environ, "ENGRAM_EMBEDDER": "hash"}
    subprocess.run(
        [sys.executable, "-m", "engram", "--ledger", str(ledger), "observe", "alice",
         "The deploy failed at 3am because the disk was full"],
        check=True, capture_output=True, env=env,
    )  # fmt: skip
    probe = (
        "import json, sys\n"
        "from engram.cli import main\n"
        f"code = main(['--ledger', {str(ledger)!r}, '-q', 'recall', 'alice', 'why did the"
        " deploy fail', '--no-record'])\n"
        "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert report["code"] == 0
    assert "deploy failed" in result.stdout
    loaded = [
        name
        for name in report["modules"]
        if any(name == heavy or name.startswith(heavy + ".") for heavy in NOT_FOR_RECALL)
    ]
    assert loaded == []
