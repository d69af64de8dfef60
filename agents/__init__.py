"""What an agent uses: memory stream, signals, context frames (built on projections).

Agents read projections and change the world only by appending to the ledger.
"""

__all__: list[str] = []
