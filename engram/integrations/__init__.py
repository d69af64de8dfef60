"""Adapters that plug engram into agent frameworks, each behind its own optional extra.

``engram.integrations.langgraph`` — :class:`EngramStore`, a LangGraph ``BaseStore``
(``engram[langgraph]``, ADR 0062). ``engram.integrations.openai_agents`` —
:class:`EngramSession`, an OpenAI Agents SDK session (``engram[openai-agents]``, ADR 0063).
They wire the ledger, the projections and recall, so they live in the composition root.
Import the submodule you need: this package imports no framework.
"""

__all__: list[str] = []
