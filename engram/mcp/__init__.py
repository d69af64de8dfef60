"""engram as an MCP server: memory tools for models (ADR 0041).

:mod:`engram.mcp.tools` holds what each tool does, over the same Python API as the CLI (no
SDK needed); :mod:`engram.mcp.server` registers them with the official MCP SDK, which is
imported only there, so ``engram`` starts without it. Run it with ``engram mcp``.
"""

from engram.mcp.tools import CONTEXT_SCOPES, KEY_ENV, MemoryTools, ToolInputError

__all__ = ["CONTEXT_SCOPES", "KEY_ENV", "MemoryTools", "ToolInputError"]
