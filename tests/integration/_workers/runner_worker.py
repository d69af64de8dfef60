"""A child process running one counting agent on a shared ledger (a script).

    runner_worker.py LEDGER AGENT CYCLES [PG_SCHEMA]

The agent watches the stream ``neuron:counter``; each cycle it appends one activation whose
cause is the stream's next version, as it read it. Two processes doing this at once must
never both write one number: a lost update would. Prints one JSON line of outcome counts.
"""

from __future__ import annotations

import json
import sys
from collections import Counter

import engram
from engram.agents.runner import AgentSpec, Plan, RetryPolicy, Runner, Situation, ledger_moved
from engram.ledger import NewEvent
from engram.ledger.catalog import NeuronActivated

STREAM = "neuron:counter"


def count(situation: Situation) -> Plan:
    value = situation.versions[STREAM] + 1
    event = NewEvent.of(
        NeuronActivated(id="counter", strength=0.1, cause=str(value)),
        stream=STREAM,
        actor=situation.agent,
    )
    return Plan(events=[event])


def main(ledger: str, agent: str, cycles: int, schema: str | None) -> None:
    options = {"pg_schema": schema} if schema else {}
    with engram.open_memory(ledger, actor=agent, **options) as memory:
        spec = AgentSpec(agent, count, trigger=ledger_moved, watch=[STREAM])
        runner = Runner(
            memory.ledger, memory.engine, [spec], policy=RetryPolicy(attempts=200, backoff=0.001)
        )
        results = runner.run(cycles=cycles)
    print(json.dumps(Counter(r.outcome for r in results)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
