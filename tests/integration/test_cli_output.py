"""What ``engram`` prints: the shared --format, help texts, append's summary, kinds, -q/-v."""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from engram.cli import cli, logs
from engram.cli.app import load_all
from engram.ledger import default_registry

FORMATS = ("table", "csv", "json", "jsonl")


def invoke(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(argv), input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("output") / "out.db")
    assert invoke("--ledger", path, "init")[0] == 0
    for text in ("the deploy failed at 3am", "roll the deploy back", "the database is slow"):
        assert invoke("--ledger", path, "observe", "alice", text)[0] == 0
    return path


LISTINGS = [
    ["log"],
    ["sql", "SELECT kind, count(*) AS n, max(position) AS last FROM events GROUP BY kind"],
    ["recall", "alice", "deploy", "--no-record"],
    ["status"],
    ["rebuild", "salience"],
    ["graph", "top", "--item", "memory"],
    ["graph", "propagate", "n_perception_001"],
    ["kinds"],
]


def parse(fmt: str, text: str) -> tuple[list[str], list[list[str]]]:
    """Return the header and the rows of a table or CSV output."""
    if fmt == "csv":
        header, *rows = list(csv.reader(io.StringIO(text)))
        return header, rows
    header, rule, *rows = text.splitlines()
    assert set(rule) <= {"-", " "}
    starts = [m.start() for m in re.finditer(r"-+", rule)]
    ends = [m.end() for m in re.finditer(r"-+", rule)]
    cells = [[row[a:b].strip() for a, b in zip(starts, ends, strict=True)] for row in rows]
    return header.split(), cells


@pytest.mark.parametrize("argv", LISTINGS, ids=" ".join)
def test_every_listing_speaks_every_format(db: str, argv: list[str]) -> None:
    outputs = {}
    for fmt in FORMATS:
        code, out, _ = invoke("--ledger", db, *argv, "--format", fmt)
        assert code == 0, out
        outputs[fmt] = out
    records: list[dict[str, Any]] = json.loads(outputs["json"])
    assert records, f"{argv} printed no records"
    lines = [json.loads(line) for line in outputs["jsonl"].splitlines()]
    assert [_stable(r) for r in lines] == [_stable(r) for r in records]
    header, rows = parse("csv", outputs["csv"])
    assert header == list(records[0])
    assert len(rows) == len(records)
    for row, record in zip(rows, records, strict=True):
        for name, cell in zip(header, row, strict=True):
            if name == "generation":  # a rebuild makes a new one each run
                continue
            value = record[name]
            if value is None:
                assert cell == ""
            elif isinstance(value, str | int) and not isinstance(value, bool):
                assert cell == str(value)
    shown, cells = parse("table", outputs["table"])
    assert set(shown) <= set(records[0])
    assert len(cells) == len(records)
    first = shown[0]
    assert [c[0] for c in cells] == [_table_text(r[first]) for r in records]


def _stable(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "generation"}


def _table_text(value: Any) -> str:
    return str(value) if len(str(value)) <= 60 else str(value)[:59] + "…"


def test_numbers_are_right_aligned_in_tables(db: str) -> None:
    code, out, _ = invoke("--ledger", db, "status")
    assert code == 0
    header, _, *rows = out.splitlines()
    end = header.index("checkpoint") + len("checkpoint")
    for row in rows:
        assert row[end - 1].isdigit()
        assert row[end] == " "
    name_start = header.index("name")
    assert all(row[name_start] != " " for row in rows)  # text stays left-aligned


def test_follow_streams_records_and_stops_after_the_idle_timeout(db: str) -> None:
    args = ("--ledger", db, "log", "--follow", "--timeout", "0.2", "--after", "8")
    code, out, _ = invoke(*args, "--format", "jsonl")
    assert code == 0
    assert [json.loads(line)["position"] for line in out.splitlines()] == [9, 10]
    code, out, _ = invoke(*args, "--limit", "1")
    assert (code, len(out.splitlines())) == (0, 3)
    code, _, err = invoke("--ledger", db, "log", "--timeout", "1")
    assert code == 2
    assert "--timeout applies only with --follow" in err


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in group.commands.items():
        found.append((*prefix, name))
        if isinstance(command, click.Group):
            found += _commands(command, (*prefix, name))
    return found


load_all()  # the root group loads command modules on use (ADR 0088); list them all here
COMMANDS = [(), *_commands(cli)]


def test_every_command_is_listed() -> None:
    assert {" ".join(c) for c in COMMANDS} >= {
        "",
        "init", "append", "log", "verify", "sql", "kinds", "observe", "archive", "recall",
        "status", "rebuild", "graph", "graph top", "graph propagate", "graph export", "bench",
        "demo",
    }  # fmt: skip


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "engram")
def test_help_has_a_description_and_an_example(path: tuple[str, ...]) -> None:
    code, out, _ = invoke(*path, "--help")
    assert code == 0
    usage, blank, description, *rest = out.splitlines()
    assert usage.startswith(" ".join(["Usage: engram", *path]))
    assert blank == ""
    assert len(description.split()) >= 3
    assert "  Examples:" in rest
    examples = rest[rest.index("  Examples:") + 1 :]
    assert examples
    assert all("engram " in line for line in examples if line)
    for raw in ("``", ":class:", ":func:", ":meth:", "\\b"):
        assert raw not in out, f"{raw!r} in the help of {' '.join(path)}"


def test_append_help_shows_the_line_format() -> None:
    _, out, _ = invoke("append", "--help")
    assert '{"stream": "neuron:n1", "kind": "neuron.created",' in out
    assert '"payload": {"id": "n1", "concept": "perception", "type": "core"},' in out


def test_append_prints_one_summary_line_or_json(tmp_path: Path) -> None:
    db = str(tmp_path / "a.db")
    line = {
        "stream": "neuron:n9",
        "kind": "neuron.activated",
        "payload": {"id": "n9", "strength": 1},
    }
    batch = "".join(json.dumps(line) + "\n" for _ in range(3))
    assert invoke("--ledger", db, "append", stdin=batch) == (
        0,
        "appended 3 events, positions 1..3\n",
        "",
    )
    code, out, _ = invoke("--ledger", db, "append", "--format", "json", stdin=batch)
    assert code == 0
    assert json.loads(out) == {"appended": 3, "positions": [4, 5, 6]}
    assert invoke("--ledger", db, "append", stdin=batch[: len(batch) // 3])[1] == (
        "appended 1 event, position 7\n"
    )
    code, _, err = invoke("--ledger", db, "append", "--expect", "zero", stdin=batch)
    assert code == 2
    assert "expected any, no_stream or a version >= 1, got 'zero'" in err


def test_verify_head_and_hash_go_together(db: str) -> None:
    for extra in (["--head", "3"], ["--hash", "ab" * 32]):
        code, out, err = invoke("--ledger", db, "verify", *extra)
        assert (code, out) == (2, "")
        assert "--head and --hash go together" in err


def test_choices_are_named_in_errors(db: str) -> None:
    code, _, err = invoke("--ledger", db, "observe", "alice", "x", "--type", "dream")
    assert code == 2
    assert "'dream' is not one of 'observation', 'plan', 'thought'" in err
    code, _, err = invoke("--ledger", db, "rebuild", "nope")
    assert code == 2
    assert "unknown projection(s) 'nope'" in err
    assert "neuron_graph" in err


def test_kinds_lists_each_field_without_opening_a_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_LEDGER", str(tmp_path / "nowhere" / "ledger.db"))
    code, out, _ = invoke("kinds", "--format", "json")
    assert code == 0
    assert list(tmp_path.iterdir()) == []
    rows = json.loads(out)
    assert {r["kind"] for r in rows} == {spec.name for spec in default_registry()}
    observed = {r["field"]: r for r in rows if r["kind"] == "memory.observed"}
    assert observed["agent"] == {
        "kind": "memory.observed",
        "schema": 1,
        "field": "agent",
        "type": "str",
        "required": True,
        "default": None,
    }
    assert (observed["importance"]["type"], observed["importance"]["required"]) == (
        "int | None",
        False,
    )
    assert observed["tags"]["type"] == "list[str]"
    assert observed["tags"]["default"] == []
    assert observed["type"]["type"] == "'observation' | 'plan' | 'thought'"
    assert {r["field"] for r in rows if r["kind"] == "memory.archived"} == {
        "agent",
        "positions",
        "reason",
    }


def test_sql_has_a_view_for_every_registered_kind(db: str) -> None:
    code, out, _ = invoke(
        "--ledger",
        db,
        "sql",
        "SELECT table_name FROM information_schema.tables",
        "--format",
        "json",
    )
    assert code == 0
    views = {row["table_name"] for row in json.loads(out)}
    assert {spec.name.replace(".", "_") for spec in default_registry()} <= views


def test_quiet_and_verbose_set_the_log_levels(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY"):
        monkeypatch.delenv(key, raising=False)
    code, _, err = invoke("--ledger", db, "status", "-v")
    assert code == 0
    assert f"ledger {db} (from --ledger)" in err
    code, _, err = invoke("--ledger", db, "status")
    assert (code, err) == (0, "")

    library = logging.getLogger("transformers")
    before = library.level  # transformers, when installed, sets its own level on import
    with logs.configured(logs.NORMAL):
        assert library.level == logging.ERROR
        assert logging.getLogger("sentence_transformers").level == logging.ERROR
        assert logs.logger.level == logging.INFO
        assert os.environ["TQDM_DISABLE"] == "1"
        assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
        assert os.environ["TRANSFORMERS_VERBOSITY"] == "error"
    with logs.configured(logs.VERBOSE):
        assert library.level == logging.INFO
        assert logs.logger.level == logging.DEBUG
        assert "TQDM_DISABLE" not in os.environ
    monkeypatch.setenv("TQDM_DISABLE", "0")  # what the user set is left alone
    with logs.configured(logs.QUIET):
        assert os.environ["TQDM_DISABLE"] == "0"
        assert logs.logger.level == logging.ERROR
    # Afterwards the process's own logging is as it was.
    assert library.level == before
    assert logs.logger.propagate
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ


def test_bench_skips_the_recall_figures_without_their_data(tmp_path: Path) -> None:
    missing = tmp_path / "locomo-dev.json"
    no_beam = tmp_path / "beam-100k-dev.json"
    code, out, err = invoke(
        "bench", "--quick", "--suite", "recall", "--repeat", "1", "--locomo", str(missing),
        "--beam", str(no_beam),
    )  # fmt: skip
    assert code == 0, err
    assert f"no LoCoMo data at {missing}; pass --locomo FILE" in err
    assert f"BEAM data not found at {no_beam}" in err
    rows = [line.split() for line in out.splitlines() if line.endswith("SKIP")]
    assert [row[0] for row in rows] == ["BEAM", "LoCoMo", "recall", "semantic"]
    assert list(tmp_path.iterdir()) == []


def test_recall_min_score_lets_nothing_be_the_answer(db: str) -> None:
    code, out, _ = invoke(
        "--ledger", db, "recall", "alice", "zzzz qqqq", "--no-record",
        "--min-score", "0.05", "--format", "json",
    )  # fmt: skip
    assert (code, json.loads(out)) == (0, [])
    code, out, _ = invoke(
        "--ledger", db, "recall", "alice", "deploy failed", "--no-record",
        "--min-score", "0.05", "--format", "json",
    )  # fmt: skip
    items = json.loads(out)
    assert code == 0
    assert items[0]["text"] == "the deploy failed at 3am"
    assert all(item["score"] >= 0.05 for item in items)  # min_score floors score
    assert {"match", "fused", "bm25", "cosine"} <= items[0].keys()
    code, _, err = invoke("--ledger", db, "recall", "alice", "deploy", "--min-score", "1.5")
    assert code == 2
    assert "1.5" in err


def test_kinds_declared_in_the_config_are_appended_listed_and_queried(tmp_path: Path) -> None:
    config = tmp_path / "engram.toml"
    config.write_text(
        f'ledger = "{tmp_path / "tasks.db"}"\n'
        '[kinds."task.assigned"]\n'
        'fields = { task = "str", assignee = "str", priority = "int?" }\n'
    )
    good = '{"stream": "task:1", "kind": "task.assigned", "payload": {"task": "ship", "assignee": "ada", "priority": 2}}\n'  # noqa: E501
    code, out, err = invoke("--config", str(config), "append", stdin=good)
    assert (code, out) == (0, "appended 1 event, position 1\n"), err
    bad = '{"stream": "task:2", "kind": "task.assigned", "payload": {"task": "ship"}}\n'
    code, _, err = invoke("--config", str(config), "append", stdin=bad)
    assert code == 1
    assert "line 1" in err
    assert "assignee" in err

    code, out, _ = invoke("--config", str(config), "kinds", "--format", "json")
    fields = {(r["kind"], r["field"]): r for r in json.loads(out) if r["kind"] == "task.assigned"}
    assert set(fields) == {("task.assigned", f) for f in ("task", "assignee", "priority")}
    assert fields[("task.assigned", "priority")]["required"] is False

    query = "SELECT task, assignee, priority FROM task_assigned"
    code, out, err = invoke("--config", str(config), "sql", query, "--format", "json")
    assert code == 0, err
    assert json.loads(out) == [{"task": "ship", "assignee": "ada", "priority": 2}]


def test_recall_valid_at_asks_what_was_true_then(tmp_path: Path) -> None:
    db = str(tmp_path / "truth.db")
    assert invoke("--ledger", db, "init")[0] == 0

    def observed(*argv: str) -> int:
        code, out, err = invoke("--ledger", db, "observe", "ana", *argv)
        assert code == 0, err
        return int(re.search(r"position (\d+)", out + err).group(1))  # type: ignore[union-attr]

    paris = observed("Alice Moreau lives in Paris.", "--at", "2026-01-01T00:00:00Z")
    observed("The nightly build passed its checks.", "--at", "2026-01-02T00:00:00Z")
    berlin = observed(
        "Alice Moreau moved to Berlin.", "--at", "2026-06-01T00:00:00Z",
        "--supersedes", str(paris), "--valid-from", "2026-03-01T00:00:00Z",
    )  # fmt: skip

    def asked(*extra: str) -> list[tuple[int, int | None]]:
        code, out, err = invoke(
            "--ledger", db, "recall", "ana", "Where does Alice Moreau live?", "--no-record",
            "--min-score", "0", "--format", "json", *extra,
        )  # fmt: skip
        assert code == 0, err
        return [(i["position"], i["replaced_by"]) for i in json.loads(out)][:2]

    # Told in June that she moved in March: in April the move was true, Paris replaced.
    assert asked("--valid-at", "2026-04-01T00:00:00Z") == [(berlin, None), (paris, berlin)]
    assert asked("--valid-at", "2026-02-01T00:00:00Z")[0] == (paris, None)
    assert berlin not in [p for p, _ in asked("--valid-at", "2026-02-01T00:00:00Z")]
    # What the store knew in April (record time) held nothing of the move.
    assert asked("--as-of", "2026-04-01T00:00:00Z")[0] == (paris, None)
    head = invoke("--ledger", db, "sql", "SELECT count(*) AS n FROM events", "--format", "json")
    for bad, why in (("yesterday", "not an ISO-8601 time"), ("2026-04-01T00:00:00", "zone")):
        code, _, err = invoke("--ledger", db, "recall", "ana", "Alice", "--valid-at", bad)
        assert code == 2, err
        assert why in err
    code, _, err = invoke(
        "--ledger", db, "recall", "ana", "Alice", "--scope", "scars", "--valid-at",
        "2026-04-01T00:00:00Z",
    )  # fmt: skip
    assert code != 0
    assert "valid_at" in err
    assert (
        invoke("--ledger", db, "sql", "SELECT count(*) AS n FROM events", "--format", "json")
        == head
    )


def test_context_min_score_leaves_out_what_the_query_does_not_meet(db: str) -> None:
    def items(floor: str) -> list[dict[str, Any]]:
        code, out, err = invoke(
            "--ledger", db, "context", "deploy failed", "--agent", "alice", "--json",
            "--no-save", "--min-score", floor,
        )  # fmt: skip
        assert code == 0, err
        found: list[dict[str, Any]] = json.loads(out)["items"]
        return found

    loose, strict = items("0"), items("0.9")
    assert len(strict) < len(loose)
    assert all(i["components"].get("similarity", 1.0) >= 0.9 for i in strict)
    code, _, err = invoke(
        "--ledger", db, "context", "deploy", "--agent", "alice", "--min-score", "2"
    )
    assert code == 2
    assert "--min-score" in err
