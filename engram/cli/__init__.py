"""The ``engram`` command line, built with click: one decorator per command.

Shared pieces (global options accepted before or after the command, ``--format``,
``--as-of``, exit codes, opening a ledger without creating it) live in
:mod:`engram.cli.base`; records are printed by :mod:`engram.cli.render`.
"""

from engram.cli import ledger_commands, memory_commands, tools
from engram.cli.app import cli, main

__all__ = ["cli", "main"]

del ledger_commands, memory_commands, tools
