"""Derived state: the projection engine and one module per projection (built next).

Projections are pure functions of the ledger; they import ``ledger`` and nothing above it.
"""

__all__: list[str] = []
