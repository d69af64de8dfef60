"""One home for each thing: one reader of TOML files, one HTTP client."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ledger", "projections", "agents", "jobs", "engram")


def _imports() -> dict[str, set[str]]:
    """Return every product module (by path) with the top-level modules it imports."""
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            names: set[str] = set()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names.add(node.module)
            found[str(path.relative_to(ROOT))] = names
    return found


@pytest.mark.parametrize(
    ("modules", "home"),
    [
        ({"tomllib", "tomli"}, "projections/tomlfile.py"),
        (
            {"httpx", "urllib.request", "http.client", "requests"},
            "projections/embedding/http_client.py",
        ),
    ],
)
def test_one_module_owns_it(modules: set[str], home: str) -> None:
    users = sorted(path for path, names in _imports().items() if names & modules)
    assert users == [home]
