"""The root ``engram`` group and :func:`main`, the console script."""

from __future__ import annotations

import errno
import sys
from collections.abc import Sequence
from typing import IO

import click

import engram
from engram.cli.base import Group, State, _silence_stdout


@click.group(
    name="engram",
    cls=Group,
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
