"""An OpenAI Agents SDK agent whose session lives in engram, offline (the SDK's scripted model).

Run: ``python examples/openai_agents_session.py [LEDGER]`` (needs
``pip install 'engram[openai-agents]'``). The first session's turns are session items (events)
and, with ``remember=``, memories; a second session starts empty, yet recall serves what the
first one said.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile

from agents import Agent, RunConfig, Runner
from agents.testing import ScriptedModel, assistant_message

import engram
from engram.integrations.openai_agents import EngramSession, item_text


async def main(ledger: str) -> None:
    """Run two turns in one session, then recall them from another."""
    model = ScriptedModel(
        [
            [assistant_message("Booked: Lisbon, Friday 9:40, seat 12A.")],
            [assistant_message("Your seat is 12A.")],
        ]
    )
    agent = Agent(name="travel", model=model, instructions="Answer briefly.")
    config = RunConfig(tracing_disabled=True)
    with engram.open_memory(ledger, config=os.devnull) as memory:
        session = EngramSession("trip-1", memory, remember="travel")
        for text in ["Book me the Friday flight to Lisbon.", "Which seat did I get?"]:
            result = await Runner.run(agent, text, session=session, run_config=config)
            print(f"user> {text}\n  agent: {result.final_output}")
        items = await session.get_items()
        print(f"session trip-1 holds {len(items)} items")
        print(f"popped: {item_text(await session.pop_item() or {})!r}")
        later = EngramSession("trip-2", memory, remember="travel")
        print(f"session trip-2 holds {len(await later.get_items())} items")
        for hit in memory.agent("travel").recall("Lisbon flight seat", k=2, record=False).items:
            print(f"  recalled ({hit.match:.2f}): {hit.event.payload.text}")


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "ledger.db")
    asyncio.run(main(path))
