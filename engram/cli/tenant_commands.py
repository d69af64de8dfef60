"""Tenants from the command line: ``engram tenants`` lists the namespaces of a ledger."""

from __future__ import annotations

import click

from engram.cli.app import cli, examples
from engram.cli.base import output_format, redacted, state
from engram.config import resolve_settings
from engram.ledger import ConfigError
from engram.tenancy import list_tenants

COLUMNS = ("tenant", "location")


@cli.command(
    epilog=examples(
        "engram tenants",
        "engram --ledger postgresql://127.0.0.1:5432/engram tenants --format json",
        "engram --tenant acme init    # creates tenant acme's ledger",
    )
)
@output_format()
def tenants(fmt: str) -> None:
    """List the tenants of the ledger: each one's name and where its ledger lives.

    A tenant is a namespace of its own (ADR 0040): a PostgreSQL schema <pg_schema>__<name>
    in the same database, or a SQLite file <ledger>.tenants/<name>/ledger.db. Reads names
    only. A tenant has no tenants: --tenant is refused here, ENGRAM_TENANT and the config
    file's tenant are ignored.
    """
    out = state()
    o = out.options
    if o.get("tenant"):
        raise click.UsageError("engram tenants lists every tenant: drop --tenant")
    try:
        settings = resolve_settings(
            o.get("ledger"), config=o.get("config"), pg_schema=o.get("pg_schema"), untenanted=True
        )
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    found = list_tenants(settings)
    rows = (
        {
            "tenant": t.name,
            "location": f"{redacted(settings.ledger)} {t.location}"
            if settings.on_server
            else t.location,
        }
        for t in found
    )
    out.render(rows, fmt, columns=COLUMNS)
