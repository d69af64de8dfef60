"""Where the MCP server dispatches a tool call: its arguments are checked as the model sees them.

:class:`ToolServer` is the SDK's :class:`MCPServer` with one change at the place every tool
call passes (:meth:`ToolServer.call_tool`): an argument no tool parameter has is refused by
name (the SDK would drop it: ``agnet="bob"`` would write as the default agent), and an argument
that fails validation is told in one line per field, naming the argument and what it must be,
instead of pydantic's dump (model names, one line per detail, a URL to the library's docs).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import ValidationError

__all__ = ["ToolServer", "explain"]

#: How pydantic's messages begin ("Input should be ...", "String should have ...").
_SHOULD = re.compile(r"^(?:Input|String|List|Value|Dictionary|Tuple|Set|Object|Data) should ")
#: Characters of a refused value a message quotes at most.
_QUOTE = 60


class ToolServer(MCPServer[Any]):
    """The SDK's server, refusing unknown arguments and telling argument errors plainly."""

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self._parameters: dict[str, tuple[str, ...]] = {}

    def add_tool(
        self, fn: Callable[..., Any], name: str | None = None, *args: Any, **options: Any
    ) -> None:
        """Add a tool as the SDK does, remembering its parameters (its arguments' names)."""
        super().add_tool(fn, name, *args, **options)
        self._parameters[name or fn.__name__] = tuple(inspect.signature(fn).parameters)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        """Call tool ``name``: refuse an unknown argument, and say which argument is wrong how.

        Raises:
            ToolError: an unknown argument, an argument that fails validation (one line per
                field), or the tool's own refusal.
        """
        known = self._parameters.get(name)
        unknown = [a for a in arguments if known is not None and a not in known]
        if unknown:
            names = ", ".join(known or ())
            raise ToolError(
                f"Error executing tool {name}: "
                + "\n".join(f"unknown argument {a!r}; the arguments are: {names}" for a in unknown)
            )
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            cause = exc.__cause__
            raise ToolError(f"Error executing tool {name}: {explain(cause, arguments)}") from cause


def explain(error: ValidationError, arguments: Mapping[str, Any]) -> str:
    """Return ``error`` as one line per field: the field, what it must be, the value given.

    A union's alternatives for one field are joined with "or" (``context`` must be an object
    or a string); ``arguments`` locates each field, so the union's branch names are not shown.
    """
    lines: dict[str, list[str]] = {}
    given: dict[str, Any] = {}
    for detail in error.errors(include_url=False):
        field = _field(detail["loc"], arguments)
        kind = detail["type"]
        if kind == "missing":
            must = "is required"
        elif kind == "extra_forbidden":
            must = "is not a field here; leave it out"
        else:
            must = _SHOULD.sub("must ", detail["msg"])
            given.setdefault(field, detail.get("input"))
        if must not in lines.setdefault(field, []):
            lines[field].append(must)
    return "\n".join(
        f"{field} {_joined(musts)}{_got(given[field]) if field in given else ''}"
        for field, musts in lines.items()
    )


def _joined(musts: list[str]) -> str:
    """Join a field's requirements: "must be a valid dictionary or a valid string"."""
    if len(musts) > 1 and all(m.startswith("must be ") for m in musts):
        return "must be " + " or ".join(m.removeprefix("must be ") for m in musts)
    return " or ".join(musts)


def _field(loc: Sequence[int | str], arguments: Mapping[str, Any]) -> str:
    """Name the field ``loc`` points at, e.g. ``observations[0].text``.

    ``loc`` is followed through ``arguments``; a part that does not step into them is a
    union's branch name (``dict[str,any]``, ``str``) and ends the name.
    """
    name, value = "", cast(Any, arguments)
    for part in loc:
        if isinstance(part, str) and isinstance(value, Mapping):
            name, value = (f"{name}.{part}" if name else part), value.get(part)
        elif isinstance(part, int) and isinstance(value, list) and 0 <= part < len(value):
            name, value = f"{name}[{part}]", value[part]
        else:
            break
    return name or "arguments"


def _got(value: Any) -> str:
    """Return ", got VALUE" for a short scalar value as JSON, else nothing."""
    if isinstance(value, dict | list):
        return ""
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return ""
    return f", got {shown}" if len(shown) <= _QUOTE else ""
