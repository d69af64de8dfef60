"""engram: a memory engine for multi-agent LLM systems, built as an event-sourced ledger.

This package is the composition root (ADR 0002): it wires the layers together and holds the
``engram`` command line. Start with :func:`open`.
"""

from engram.config import Settings, resolve_settings
from engram.errors import EngramError
from engram.runtime import Memory, open, open_memory

__version__ = "0.2.0.dev0"

__all__ = [
    "EngramError",
    "Memory",
    "Settings",
    "__version__",
    "open",
    "open_memory",
    "resolve_settings",
]
