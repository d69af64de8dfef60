"""The ``engram`` command line, built with click: one decorator per command (ADR 0017).

Shared pieces (global options accepted before or after the command, ``--format``,
``--as-of``, exit codes, opening a ledger without creating it) live in
:mod:`engram.cli.base`; records are printed by :mod:`engram.cli.render`. Importing the
command modules registers their commands on :data:`cli`.
"""

from engram.cli import (  # noqa: F401
    checkpoint_commands,
    concept_commands,
    context_commands,
    doctrine_commands,
    dream_commands,
    forget_commands,
    hub_commands,
    jobs_commands,
    ledger_commands,
    lessons_commands,
    mcp_commands,
    memory_commands,
    pack_commands,
    reflection_commands,
    scars_commands,
    signal_commands,
    tenant_commands,
    tools,
    vitality_commands,
)
from engram.cli.app import cli, main

__all__ = ["cli", "main"]
