"""Shared test configuration: Hypothesis profiles, the random seed, opt-in slow tests, databases,
an opened engram."""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
from hypothesis import settings
from psycopg import sql

if TYPE_CHECKING:
    from xdist.workermanage import WorkerController

    from engram.agents.memory import AgentMemory
    from engram.runtime import Memory

settings.register_profile("default", max_examples=50, deadline=None)
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=False, print_blob=True)
settings.register_profile("dev", max_examples=20)
settings.load_profile(
    "ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "default")
)

# `python -m pytest` puts the working directory first on sys.path; from the repository root that
# makes its folders importable under bare names (agents/, ledger/...), which shadows the OpenAI
# Agents SDK's `agents` package. engram's folders install under engram.* only (ADR 0016).
_ROOT = str(Path(__file__).resolve().parents[1])
sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.abspath(p) != _ROOT]

# The suite expects the deterministic hash embedder wherever nothing routes one, whatever
# extras are installed (ADR 0061: MiniLM on ONNX is the default where it can run); the tests
# of that default unset this. Set in the environment so that CLI subprocesses inherit it.
os.environ.setdefault("ENGRAM_EMBEDDER", "hash")

# Personal fields are sealed by default, under a key store in the user's data directory
# (ADR 0086): no test may write keys (or a default ledger) into the real home. Set in the
# environment so that CLI subprocesses inherit it, and again for every test (below).
_DATA_HOME = tempfile.mkdtemp(prefix="engram-test-data-")
os.environ["XDG_DATA_HOME"] = _DATA_HOME
# A subprocess given an environment of its own (the MCP SDK passes HOME and PATH only) would
# fall back to the real one: the session fails if a key store appears there.
_REAL_KEYS = Path.home() / ".local" / "share" / "engram-keys"


def _real_key_stores() -> set[str]:
    return set(os.listdir(_REAL_KEYS)) if _REAL_KEYS.is_dir() else set()


_REAL_KEYS_BEFORE = _real_key_stores()

_SEED = pytest.StashKey[int]()
_DEFAULT_PG_DSN = "postgresql://127.0.0.1:5432/test"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="run tests marked slow")


def pytest_configure(config: pytest.Config) -> None:
    worker = getattr(config, "workerinput", None)
    if worker is not None:  # a worker of pytest-xdist runs on the seed its controller drew
        seed = int(worker["engram_seed"])
    else:
        seed = int(os.environ.get("ENGRAM_TEST_SEED") or time.time_ns() % 2**32)
    config.stash[_SEED] = seed
    random.seed(seed)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: WorkerController) -> None:
    """Hand every pytest-xdist worker the controller's seed, so the header's seed reruns any
    worker's tests."""
    node.workerinput["engram_seed"] = node.config.stash[_SEED]


#: The most workers ``-n auto`` starts (the suite's default, pyproject.toml): past a few,
#: the tests' own processes and the one PostgreSQL server contend more than they gain.
MAX_WORKERS = 8


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Return how many workers ``-n auto`` starts: ``ENGRAM_TEST_WORKERS`` when set, else
    one per CPU this process may run on, at most :data:`MAX_WORKERS`."""
    wanted = os.environ.get("ENGRAM_TEST_WORKERS", "").strip()
    if wanted:
        if not wanted.isdigit():
            raise pytest.UsageError(f"ENGRAM_TEST_WORKERS must be a whole number, not {wanted!r}")
        return int(wanted)
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    return max(1, min(cpus, MAX_WORKERS))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    written = sorted(_real_key_stores() - _REAL_KEYS_BEFORE)
    if written:
        sys.stderr.write(
            f"\nthe tests wrote key stores into the real home ({_REAL_KEYS}): {written};"
            " give the subprocess XDG_DATA_HOME\n"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_DATA_HOME, ignore_errors=True)


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.stash[_SEED]
    return f"random seed: {seed} (rerun with ENGRAM_TEST_SEED={seed})"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip_slow = pytest.mark.skip(reason="opt-in: pass --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(autouse=True)
def _seed_random(request: pytest.FixtureRequest) -> None:
    # Reseed per test so a single test reproduces alone, whatever ran before it.
    random.seed(request.config.stash[_SEED])


@pytest.fixture(autouse=True)
def _data_home(monkeypatch: pytest.MonkeyPatch) -> str:
    """Point the user's data directory (default ledger, key stores) at the session's folder.

    One folder for the session, not one per test: a module-scoped fixture's ledger keeps
    its key store across the module's tests. Key stores are named by ledger id, so tests
    never share keys; a test about the data directory itself sets its own.
    """
    monkeypatch.setenv("XDG_DATA_HOME", _DATA_HOME)
    return _DATA_HOME


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """Return the DSN of the test PostgreSQL server; fail in CI, skip elsewhere, if unreachable."""
    dsn = os.environ.get("ENGRAM_TEST_PG_DSN", _DEFAULT_PG_DSN)
    try:
        psycopg.connect(dsn, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        reason = (str(exc).strip() or type(exc).__name__).splitlines()[0]
        message = f"PostgreSQL not reachable at {dsn} ({reason})"
        if os.environ.get("CI"):
            pytest.fail(f"{message}\nCI runs every postgres test; .ci/run starts the server.")
        pytest.skip(
            f"{message}; start it with "
            "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"
            " (or set ENGRAM_TEST_PG_DSN); CI never skips these"
        )
    return dsn


@pytest.fixture
def pg_schema(pg_dsn: str) -> Iterator[str]:
    """Yield a fresh schema name; the code under test creates it. Dropped at teardown."""
    name = f"engram_t_{uuid.uuid4().hex[:8]}"
    yield name
    with psycopg.connect(pg_dsn, autocommit=True, connect_timeout=3) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


@pytest.fixture
def tmp_ledger_path(tmp_path: Path) -> str:
    """Return the path of a not-yet-created SQLite ledger file in a fresh directory."""
    return str(tmp_path / "ledger.db")


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    """Yield engram opened on a fresh SQLite ledger, no config file, its projections beside it.

    A module that needs another setup declares its own ``memory``, which takes precedence.
    """
    import engram  # imported late: the environment above is set before engram reads it

    with engram.open_memory(
        str(tmp_path / "ledger.db"), config=os.devnull, projections=str(tmp_path / "store")
    ) as opened:
        yield opened


#: The ``people`` fixture's store: named people, four facts each, all observed at ``PEOPLE_AT``.
PEOPLE = ("Alice Moreau", "Bilal Haddad", "Chen Wei", "Dmitri Volkov", "Eva Lindqvist")
PEOPLE_FACTS = (
    "{n} lives in Lisbon.",
    "{n} works at Northwind Bank.",
    "{n} plays the cello every evening.",
    "{n} drives an old red Volvo.",
)
PEOPLE_AT = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def people(tmp_path: Path) -> Iterator[AgentMemory]:
    """Yield an agent's memory of :data:`PEOPLE`, each with every one of :data:`PEOPLE_FACTS`
    (the questions about names and details no memory holds ask it, ADR 0090, ADR 0095)."""
    import engram  # imported late: the environment above is set before engram reads it

    with engram.open_memory(str(tmp_path / "people.db")) as opened:
        agent = opened.agent("ana")
        for person in PEOPLE:
            for fact in PEOPLE_FACTS:
                agent.observe(fact.format(n=person), at=PEOPLE_AT)
        yield agent
