"""Context frames from the command line: ``engram context QUERY --agent A``."""

from __future__ import annotations

import json
from datetime import datetime

import click

from engram.agents.context import MAX_BUDGET, MIN_BUDGET, ContextWeights, build_context
from engram.agents.frames import TOP_K
from engram.cli.app import cli, examples
from engram.cli.base import Finite, as_of_option, note, opened, state, sync_vectors


@cli.command(
    "context",
    epilog=examples(
        'engram context "why did the deploy fail" --agent coder --task "fix the build"',
        'engram context "gcc templates" --agent coder --budget 500 --json --no-save',
        'engram context "retry" --agent coder --top-k snippet=20 --top-k pattern=2',
        'engram context "deploy rollback" --agent coder --min-score 0.3',
    ),
)
@click.argument("query")
@click.option("--agent", required=True, help="Whose context: what this agent may see.")
@click.option("--task", default="", help="The task at hand (items that name it score higher).")
@click.option(
    "--budget",
    type=click.IntRange(MIN_BUDGET, MAX_BUDGET),
    default=2000,
    show_default=True,
    help="Tokens the frames may take (counted by the MiniLM tokenizer if installed).",
)
@click.option(
    "--top-k",
    "top_k",
    multiple=True,
    metavar="TYPE=N",
    callback=lambda _ctx, _param, value: _top_k(value),
    help="Keep at most N items of a node type (repeatable); defaults: "
    + ", ".join(f"{t} {k}" for t, k in TOP_K.items())
    + ".",
)
@click.option(
    "--min-score",
    type=Finite(0.0, 1.0),
    default=0.0,
    show_default=True,
    help="Leave out recalled items whose similarity to the query (components.similarity, "
    "0..1) is under this; rules and signals stay.",
)
@click.option("--json", "as_json", is_flag=True, help="Print frames, items and counts as JSON.")
@click.option("--no-save", is_flag=True, help="Do not append context.saved.")
@as_of_option
def context(
    query: str,
    agent: str,
    task: str,
    budget: int,
    top_k: dict[str, int],
    min_score: float,
    as_json: bool,
    no_save: bool,
    as_of: datetime | None,
) -> None:
    """Build AGENT's context frames for QUERY within a token budget.

    Frames, in this order: identity, problem, knowledge (the concept tree, nested: at most
    half the budget), episodic (memories, scars, reflections), constraints (applied rules:
    taken first, within 40% of the budget), scratchpad (pending signals). Items come from
    the lexical and semantic indexes and what their links and episodes call up, scored by
    similarity, edge pull, recency, usage, task affinity and the sway of influences
    connections; each node type keeps its top k. A long text keeps its lead in "text" and
    the rest in "details", summarised when the budget is tight. AGENT never sees another
    agent's private items. Each frame's tokens are printed on stderr. The frames are
    appended as context.saved unless --no-save.
    """
    out = state()
    with opened(out.settings(), actor=agent) as memory:
        sync_vectors(memory)
        built = build_context(
            memory.agent(agent), query, task=task, budget=budget, save=not no_save, as_of=as_of,
            weights=ContextWeights(top_k=top_k), min_score=min_score,
        )  # fmt: skip
    if as_json:
        record = {
            "agent": built.agent,
            "query": built.query,
            "task": built.task,
            "tokens": built.tokens,
            "budget": built.budget,
            "tokenizer": built.tokenizer,
            "event_id": built.event_id,
            "sections": built.sections,
            "frames": built.frames,
            "items": [
                {
                    "event_id": i.event_id,
                    "position": i.position,
                    "type": i.type,
                    "frame": i.frame,
                    "score": round(i.score, 4),
                    "hop": i.hop,
                    "components": {k: round(v, 4) for k, v in i.components.items()},
                }
                for i in built.items
            ],
        }
        out.echo(json.dumps(record, indent=2, ensure_ascii=False))
    else:
        out.echo(json.dumps(built.frames, indent=2, ensure_ascii=False))
        note(f"{len(built.items)} items, {built.tokens}/{built.budget} tokens ({built.tokenizer})")
        note("sections: " + ", ".join(f"{n} {t}" for n, t in built.sections.items()) + " tokens")
    if built.event_id is not None:
        note(f"saved as context.saved {built.event_id}")


def _top_k(values: tuple[str, ...]) -> dict[str, int]:
    """Parse ``TYPE=N`` pairs (N in 1..100) into the top k of each node type."""
    out: dict[str, int] = {}
    for value in values:
        node_type, _, k = value.partition("=")
        if not node_type or not k.isdigit() or not 1 <= int(k) <= 100:
            raise click.BadParameter(f"{value!r} is not TYPE=N with N in 1..100")
        out[node_type] = int(k)
    return out
