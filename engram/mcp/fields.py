"""The argument types the MCP tools share.

Numbers are strict: pydantic's lax mode would read JSON ``true`` as ``1`` (``k: true`` served
one item), where the Python API refuses a bool; a strict integer refuses a bool, a float and a
string, a strict number refuses a bool and a string and takes an integer, and a strict flag
takes only ``true`` and ``false``. The JSON schema the tools publish is the same either way.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, Strict

__all__ = ["Agent", "Flag", "Number", "Whole"]

#: An integer argument: JSON ``true``, ``1.5`` and ``"10"`` are refused, not coerced.
Whole = Annotated[int, Strict()]
#: A number argument: JSON ``true`` and ``"0.5"`` are refused; an integer is taken.
Number = Annotated[float, Strict()]
#: A yes-or-no argument: JSON ``1`` and ``"yes"`` are refused, only ``true``/``false`` taken.
Flag = Annotated[bool, Strict()]
#: The agent a call acts as.
Agent = Annotated[
    str | None,
    Field(description="Act as this agent (one the server was started for); default: its first."),
]
