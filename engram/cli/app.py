"""The root ``engram`` group and :func:`main`, the console script."""

from __future__ import annotations

import errno
import importlib
import sys
from collections.abc import Sequence
from typing import IO

import click

import engram
from engram.cli.base import Group, State, _silence_stdout

#: Each top-level command and the module of :mod:`engram.cli` that defines it. The root group
#: imports a module only when one of its commands is asked for, so ``engram recall`` does not
#: load DuckDB, the scheduler or the hub (ADR 0088). A test checks this table against what
#: the modules register.
COMMANDS: dict[str, str] = {
    "append": "ledger_commands",
    "archive": "memory_commands",
    "bench": "tools",
    "catch-up": "jobs_commands",
    "checkpoint": "checkpoint_commands",
    "cold": "jobs_commands",
    "concepts": "concept_commands",
    "context": "context_commands",
    "demo": "tools",
    "dream": "dream_commands",
    "forget": "forget_commands",
    "graph": "memory_commands",
    "hub": "hub_commands",
    "hygiene": "dream_commands",
    "init": "ledger_commands",
    "jobs": "jobs_commands",
    "keys": "forget_commands",
    "kinds": "ledger_commands",
    "learn": "lessons_commands",
    "log": "ledger_commands",
    "mcp": "mcp_commands",
    "memo": "signal_commands",
    "observe": "memory_commands",
    "pack": "pack_commands",
    "rebuild": "memory_commands",
    "recall": "memory_commands",
    "reflect": "reflection_commands",
    "reflections": "reflection_commands",
    "rules": "lessons_commands",
    "run": "jobs_commands",
    "scars": "scars_commands",
    "signals": "signal_commands",
    "sleep": "jobs_commands",
    "sql": "ledger_commands",
    "status": "memory_commands",
    "suggestions": "lessons_commands",
    "supersessions": "supersession_commands",
    "sweep": "jobs_commands",
    "tenants": "tenant_commands",
    "verify": "ledger_commands",
    "vitality": "vitality_commands",
}


class RootGroup(Group):
    """The ``engram`` group: loads a command's module on first use (see :data:`COMMANDS`)."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            importlib.import_module(f"engram.cli.{module}")
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        load_all()
        return super().list_commands(ctx)


def load_all() -> None:
    """Import every command module, so :data:`cli` holds every command."""
    for module in sorted(set(COMMANDS.values())):
        importlib.import_module(f"engram.cli.{module}")


@click.group(
    name="engram",
    cls=RootGroup,
    epilog='\b\nExamples:\n  engram init\n  engram observe alice "The deploy failed at 3am"\n'
    '  engram recall alice "what went wrong?" --format json\n'
    "  engram log --ledger team.db --kind memory.observed | head",
)
@click.version_option(
    engram.__version__, "--version", prog_name="engram", message="%(prog)s %(version)s"
)
def cli() -> None:
    """engram: a memory engine for multi-agent LLM systems, built as an event-sourced ledger.

    The ledger is found through --ledger, then ENGRAM_LEDGER, then a TOML config file
    (--config, ENGRAM_CONFIG, ./engram.toml, ~/.config/engram/config.toml), else
    ~/.local/share/engram/ledger.db. --tenant (ENGRAM_TENANT, tenant = in the config) picks
    a tenant's own namespace within it. Global options may also follow the command.
    Only init, append and observe create a ledger; every other command needs one.

    Exit codes: 0 success, 1 a failure at run time, 2 a usage error.
    """


def examples(*lines: str) -> str:
    """Return a help epilog listing example command lines, kept as written."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


def main(argv: Sequence[str] | None = None, out: IO[str] | None = None) -> int:
    """Run the ``engram`` command with ``argv`` (default: the process's); return its exit code.

    Records are written to ``out`` (default: stdout); messages and errors go to stderr.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = cli.main(args, prog_name="engram", standalone_mode=False, obj=State(out))
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        click.echo(file=sys.stderr)
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        _silence_stdout()
        return 0
    return result if isinstance(result, int) else 0
