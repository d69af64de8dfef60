"""The ``engram`` command line, built with click: one decorator per command (ADR 0017).

Shared pieces (global options accepted before or after the command, ``--format``,
``--as-of``, exit codes, opening a ledger without creating it) live in
:mod:`engram.cli.base`; records are printed by :mod:`engram.cli.render`. The command
modules register their commands on :data:`cli` when imported; :data:`cli` imports one only
when its command is asked for (:data:`engram.cli.app.COMMANDS`), so a command's process loads
what that command needs and no more.
"""

from engram.cli.app import cli, main

__all__ = ["cli", "main"]
