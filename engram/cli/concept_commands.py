"""The concept tree from the command line: ``engram concepts upsert|show|tree``."""

from __future__ import annotations

import json
from typing import Any

import click

from engram.cli.app import cli, examples
from engram.cli.base import CliError, opened, state

CONCEPT_TYPES = (
    "concept", "skill", "fact", "snippet", "pattern", "episode", "tool", "persona", "task"
)  # fmt: skip


@cli.group(
    epilog=examples(
        'engram concepts upsert coder skill.cpp.templates.sfinae --type skill --label "SFINAE"',
        "engram concepts tree coder skill.cpp",
    )
)
def concepts() -> None:
    """Grow and read the concept tree (path-like ids, typed, linked)."""


def _link(value: str) -> dict[str, Any]:
    parts = value.split(":")
    if len(parts) not in (2, 3):
        raise CliError(f"--link {value!r}: give TO:REL or TO:REL:WEIGHT")
    link: dict[str, Any] = {"to": parts[0], "rel": parts[1]}
    if len(parts) == 3:
        try:
            link["weight"] = float(parts[2])
        except ValueError:
            raise CliError(f"--link {value!r}: the weight must be a number in 0..1") from None
    return link


@concepts.command(
    epilog=examples(
        "engram concepts upsert coder skill.cpp --type skill --label 'C++'",
        """engram concepts upsert coder fact.q3 --type fact --label 'Q3' --payload '{"a": 1}'""",
        "engram concepts upsert coder fact.q3 --type fact --label 'Q3' --link skill.ops:about:0.8",
    )
)
@click.argument("agent")
@click.argument("concept_id", metavar="ID")
@click.option(
    "--type", "concept_type", type=click.Choice(CONCEPT_TYPES), required=True, help="Its type."
)
@click.option("--label", required=True, help="A short human name.")
@click.option("--payload", default="{}", help="A JSON object (a snippet, a fact's source...).")
@click.option("--link", "links", multiple=True, help="TO:REL[:WEIGHT] (repeatable).")
@click.option(
    "--visibility", type=click.Choice(["public", "private"]), default="public", show_default=True
)
def upsert(
    agent: str,
    concept_id: str,
    concept_type: str,
    label: str,
    payload: str,
    links: tuple[str, ...],
    visibility: str,
) -> None:
    """Create or replace concept ID as AGENT (the newest upsert wins)."""
    try:
        data = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise CliError(f"--payload: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CliError(f"--payload: must be a JSON object, got {type(data).__name__}")
    out = state()
    with opened(out.settings(create=True), actor=agent, catch_up=True) as memory:
        position = memory.concepts(agent).upsert(
            concept_id,
            concept_type,  # type: ignore[arg-type]
            label,
            payload=data,
            links=[_link(link) for link in links],
            visibility=visibility,  # type: ignore[arg-type]
        )
    out.echo(f"upserted {concept_id} at position {position}")


@concepts.command(epilog=examples("engram concepts show coder skill.cpp"))
@click.argument("agent")
@click.argument("concept_id", metavar="ID")
def show(agent: str, concept_id: str) -> None:
    """Print concept ID as AGENT sees it, with its links, as JSON."""
    out = state()
    with opened(out.settings()) as memory:
        book = memory.concepts(agent)
        concept = book.get(concept_id)
        if concept is None:
            raise CliError(f"no concept {concept_id!r} that {agent} may read")
        links = [
            {"to": link.target, "rel": link.rel, "weight": link.weight, "label": far.label}
            for link, far in book.neighbours(concept_id)
        ]
    record = {**concept._asdict(), "links": links}
    out.echo(json.dumps(record, indent=2, ensure_ascii=False))


@concepts.command(epilog=examples("engram concepts tree coder", "engram concepts tree coder skill"))
@click.argument("agent")
@click.argument("prefix", default="")
def tree(agent: str, prefix: str) -> None:
    """Print the subtree at PREFIX (default: all) that AGENT may read, as nested JSON."""
    out = state()
    with opened(out.settings()) as memory:
        data = memory.concepts(agent).tree(prefix)
    out.echo(json.dumps(data, indent=2, ensure_ascii=False))
