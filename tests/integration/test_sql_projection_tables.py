"""Every default projection table answers the queries a user types first in ``engram sql``."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from engram.cli import main
from engram.demo import run_demo


@pytest.fixture(scope="module")
def demo_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sqlviews") / "demo"
    assert run_demo(str(folder), io.StringIO()) == 0
    return folder / "ledger.db"


def _views(ledger: Path) -> list[str]:
    store = ledger.with_name(ledger.name + ".projections") / "projections.db"
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
        return [
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='view'")
        ]


def _sql(ledger: Path, query: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    code = main(["--ledger", str(ledger), "sql", "--format", "json", query])
    out, err = capsys.readouterr()
    assert code == 0, f"{query}: {err}"
    rows: list[dict[str, object]] = json.loads(out)
    return rows


def test_the_demo_fills_the_projection_tables(demo_ledger: Path) -> None:
    assert {"neurons", "connections", "salience", "scars", "memories"} & set(_views(demo_ledger))
    assert len(_views(demo_ledger)) >= 10


def test_count_select_and_join_on_every_projection_table(
    demo_ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    views = _views(demo_ledger)
    # Every view counted in one query (each CLI call attaches the stores anew), then each
    # selected whole on its own.
    counts = _sql(
        demo_ledger,
        " UNION ALL ".join(
            f"SELECT '{view}' AS view, count(*) AS n FROM projections.\"{view}\"" for view in views
        ),
        capsys,
    )
    assert sorted(c["view"] for c in counts) == sorted(views)
    for count in counts:
        rows = _sql(demo_ledger, f'SELECT * FROM projections."{count["view"]}"', capsys)
        assert count["n"] == len(rows), count["view"]
    joined = _sql(
        demo_ledger,
        "SELECT count(*) AS n FROM projections.neurons AS p"
        " JOIN events AS e ON e.position = p.created_position",
        capsys,
    )
    assert joined[0]["n"] > 0


def test_a_duckdb_error_reads_as_one_line_without_escapes(
    demo_ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--ledger", str(demo_ledger), "sql", "SELECT * FROM nosuch"])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.count("\n") == 1
    assert "\\n" not in err
    assert "Did you mean" in err
