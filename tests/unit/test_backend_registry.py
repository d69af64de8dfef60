"""One place per ledger backend: the registry answers, nobody else spells a backend."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engram.ledger import ConfigError, Ledger, backends
from engram.ledger.audit import AuditSession
from engram.ledger.backend import AuditTarget
from engram.ledger.errors import AuditUnavailableError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ledger", "projections", "agents", "jobs", "engram")
#: The registry, the adapters it opens, and the schema's per-dialect column types.
_HOMES = {
    "ledger/backends.py",
    "ledger/sqlite.py",
    "ledger/postgres.py",
    "ledger/postgres_server.py",
    "ledger/schema.py",
}
_PREFIX_CALLS = {"startswith", "endswith", "removeprefix", "removesuffix", "replace"}


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple):
        return [s for e in node.elts for s in _strings(e)]
    return []


def _dispatch_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """Return (line, literal) where code compares a backend's name or tests a URL scheme."""
    names = set(backends.names())
    schemes = tuple(s for name in names for s in backends.named(name).schemes)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found += ((node.lineno, s) for s in _strings(operand) if s in names or s == "://")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _PREFIX_CALLS
        ):
            found += (
                (node.lineno, s)
                for arg in node.args
                for s in _strings(arg)
                if s.startswith(schemes) or s == "://"
            )
    return found


def test_no_backend_name_or_scheme_is_spelt_in_dispatch_outside_the_registry() -> None:
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            if where in _HOMES:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            offenders += [f"{where}:{line} {text!r}" for line, text in _dispatch_literals(tree)]
    assert offenders == []


def test_the_check_sees_a_dispatch_it_must_refuse() -> None:
    code = (
        'if target.backend == "postgresql": pass\n'
        'if url.startswith(("postgres://", "x")): pass\n'
        'if "://" in url: pass\n'
        'path = url.removeprefix("sqlite:///")\n'
    )
    assert [line for line, _ in _dispatch_literals(ast.parse(code))] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("target", "name", "location"),
    [
        ("ledger.db", "sqlite", "ledger.db"),
        ("sqlite:////tmp/ledger.db", "sqlite", "/tmp/ledger.db"),
        ("postgres://u@h/db", "postgresql", "postgresql://u@h/db"),
        ("postgresql+psycopg://h/db", "postgresql", "postgresql+psycopg://h/db"),
    ],
)
def test_a_target_resolves_to_its_backend(target: str, name: str, location: str) -> None:
    kind = backends.resolve(target)
    assert (kind.name, kind.location(target)) == (name, location)
    assert kind.owns(target)


def test_an_unowned_or_blank_target_is_refused() -> None:
    assert backends.find("mysql://h/db") is None
    with pytest.raises(ConfigError, match="unsupported ledger URL 'mysql://h/db'"):
        backends.resolve("mysql://h/db")
    with pytest.raises(ConfigError, match="must be a path or URL"):
        backends.resolve("  ")
    with pytest.raises(ConfigError, match="unknown ledger backend 'mysql'"):
        backends.named("mysql")


def test_a_scheme_can_be_registered_once() -> None:
    clash = backends.BackendKind(
        name="other",
        title="Other",
        schemes=("postgres://",),
        aliases=(),
        server=True,
        duckdb_type="x",
        duckdb_extension="x",
        lease="advisory",
        opener=backends.POSTGRESQL.opener,
    )
    with pytest.raises(ConfigError, match="already registered"):
        backends.register(clash)
    assert "other" not in backends.names()


def test_the_audit_refuses_a_backend_nobody_registered(tmp_path: Path) -> None:
    with pytest.raises(AuditUnavailableError, match="unknown ledger backend 'mysql'"):
        AuditSession(AuditTarget("mysql", str(tmp_path / "x")))


def test_the_jobs_lease_follows_the_backend_s_lease_style(tmp_path: Path) -> None:
    from engram.jobs.lease import LEASES, FileLease, lease_for

    assert set(LEASES) == {backends.named(n).lease for n in backends.names()}
    with Ledger.open(str(tmp_path / "ledger.db")) as ledger:
        assert isinstance(lease_for(ledger), FileLease)
