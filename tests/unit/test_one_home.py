"""One home for each thing: one reader of TOML files, one HTTP client."""

from __future__ import annotations

import ast
import re
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


#: Modules that hold SQL a user types: `engram sql`'s examples and the demo's audit, run
#: through the read-only audit session (the user's own SQL, not a read of engram's tables).
_USER_SQL = {"engram/cli/ledger_commands.py", "engram/cli/vitality_commands.py", "engram/demo.py"}
_SQL = re.compile(
    r"\s*(SELECT\s.+\sFROM\s|INSERT\s+INTO\s|UPDATE\s+\S+\s+SET\s|DELETE\s+FROM\s"
    r"|CREATE\s+(TABLE|INDEX|VIEW|TRIGGER)\s|DROP\s+(TABLE|VIEW|INDEX)\s|PRAGMA\s+\w)",
    re.S,
)


def _above_projections() -> list[Path]:
    # The benches measure engram beside raw sqlite3 and psycopg: their SQL is the reference.
    found = [*(ROOT / "agents").rglob("*.py"), *(ROOT / "jobs").rglob("*.py")]
    found += [p for p in (ROOT / "engram").rglob("*.py") if "bench" not in p.parts]
    return sorted(found)


def test_no_sql_above_the_projections() -> None:
    offenders: list[str] = []
    for path in _above_projections():
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("execute", "executemany", "executescript")
            ):
                offenders.append(f"{where}:{node.lineno} calls .{node.func.attr}()")
            elif (
                where not in _USER_SQL
                and isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _SQL.match(node.value)
            ):
                offenders.append(f"{where}:{node.lineno} holds SQL {node.value[:40]!r}")
    assert offenders == []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts if parts[0] == "engram" else ["engram", *parts])


def _runtime_imports(path: Path) -> set[str]:
    """Return the engram modules ``path`` imports, at load or in a function (a deferred
    import is a dependency all the same), leaving out ``if TYPE_CHECKING`` blocks."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and inner.module and not inner.level:
                if inner.module.startswith("engram"):
                    found.add(inner.module)
                    found.update(f"{inner.module}.{alias.name}" for alias in inner.names)
            elif isinstance(inner, ast.Import):
                found.update(a.name for a in inner.names if a.name.startswith("engram"))
    return found


def test_no_import_cycles() -> None:
    files = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    modules = {_module_name(p): p for p in files}
    graph = {
        name: {m for m in _runtime_imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }
    # A package's __init__ re-exports its modules: an edge into a package is not a cycle
    # through its modules, so only module-to-module edges count.
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    edges = {n: {m for m in targets if m not in packages} for n, targets in graph.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    assert cycles == []
