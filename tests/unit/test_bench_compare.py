"""`engram bench --compare`: two runs side by side, each figure's change told from its noise."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engram.bench.common import Figure
from engram.bench.compare import compare_files, compare_runs
from engram.bench.ledger_bench import GOALS
from engram.cli import cli


def _figure(name: str, engram: list[float], reference: list[float], unit: str = "events/s") -> Any:
    figure = Figure(name, unit, "raw", 0.9, engram_samples=engram, reference_samples=reference)
    return figure.as_json()


def _write(path: Path, *figures: Any) -> str:
    path.write_text(json.dumps({"environment": {}, "figures": list(figures)}))
    return str(path)


def test_a_clear_gain_is_told_and_noise_is_not(tmp_path: Path) -> None:
    old = _write(
        tmp_path / "old.json",
        _figure("append", [70, 72, 71, 73, 69], [100, 100, 100, 100, 100]),
        _figure("replay", [80, 90, 70, 85, 75], [100, 100, 100, 100, 100]),
    )
    new = _write(
        tmp_path / "new.json",
        _figure("append", [90, 91, 89, 92, 90], [100, 100, 100, 100, 100]),
        _figure("replay", [82, 88, 72, 84, 76], [100, 100, 100, 100, 100]),
    )
    by_name = {
        c.name: c
        for c in compare_runs(json.loads(Path(old).read_text()), json.loads(Path(new).read_text()))
    }
    assert by_name["append"].significant is True
    assert by_name["append"].verdict == "1.27x better"
    assert by_name["replay"].significant is False
    assert by_name["replay"].verdict == "not significant"
    text = compare_files(old, new)
    assert "0.71x ± 0.02" in text
    assert "0.90x ± 0.01" in text
    assert "1.27x better" in text
    assert "not significant" in text


def test_a_loss_in_a_lower_is_better_figure_reads_as_worse(tmp_path: Path) -> None:
    # Times: engram taking longer against the same reference is a loss.
    old = _write(tmp_path / "old.json", _figure("lag", [10, 10, 10], [10, 10, 10], unit="ms"))
    new = _write(tmp_path / "new.json", _figure("lag", [20, 20, 21], [10, 10, 10], unit="ms"))
    (comparison,) = compare_runs(
        json.loads(Path(old).read_text()), json.loads(Path(new).read_text())
    )
    assert comparison.verdict.endswith("x worse")


def test_a_figure_of_one_run_only_is_listed_as_such(tmp_path: Path) -> None:
    old = _write(tmp_path / "old.json", _figure("append", [70, 71], [100, 100]))
    new = _write(
        tmp_path / "new.json",
        _figure("append", [70, 71], [100, 100]),
        _figure("new figure", [1, 1], [1, 1]),
    )
    assert "only in one run" in compare_files(old, new)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not JSON"),
        ('{"figures": 3}', "is not a run of `engram bench --json`"),
        ('{"figures": [{"name": "other", "engram_samples": [1], "reference_samples": [1]}]}',
         "share no measured figure"),
    ],
)  # fmt: skip
def test_the_cli_refuses_what_is_not_a_run(tmp_path: Path, content: str, message: str) -> None:
    old = _write(tmp_path / "old.json", _figure("append", [70, 71], [100, 100]))
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    result = CliRunner().invoke(cli, ["bench", "--compare", old, str(bad)])
    assert result.exit_code == 2
    assert message in result.stderr


def test_the_cli_prints_the_comparison_and_measures_nothing(tmp_path: Path) -> None:
    old = _write(tmp_path / "old.json", _figure("append", [70, 72, 71], [100, 100, 100]))
    new = _write(tmp_path / "new.json", _figure("append", [90, 91, 89], [100, 100, 100]))
    result = CliRunner().invoke(cli, ["bench", "--compare", old, new])
    assert result.exit_code == 0, result.stderr
    assert "append" in result.stdout
    assert "1.27x better" in result.stdout
    assert "engram bench:" not in result.stderr  # no suite ran


def test_the_ledger_figures_print_the_project_goals() -> None:
    # Not a floor of 0.5x: a figure below the goal shows as FAIL in the run that made it.
    assert GOALS == {
        "append_vs_raw": 0.9,
        "append_vs_peer": 1.5,
        "replay_vs_raw": 0.85,
        "pg_append_vs_raw": 0.9,
        "sealed_append": 0.9,
        "sealed_replay": 0.85,
    }
    figure = Figure("x", "events/s", "raw", GOALS["append_vs_raw"], [80.0], [100.0])
    assert figure.verdict == "FAIL"


def test_the_ledger_profile_names_every_part(capsys: pytest.CaptureFixture[str]) -> None:
    from engram.bench import ledger_profile

    assert ledger_profile.main(["--append", "200", "--replay", "300"]) == 0
    out = capsys.readouterr().out
    for part in ("  prepare (", "sealing,", "hash chain", "no triggers", "whole append, sealed"):
        assert out.count(part) == 2, part  # the mix and the observations
    assert "ledger.read" in out
    assert "raw scan + msgspec" in out


def test_data_home_points_key_stores_at_the_folder_and_puts_the_old_home_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engram.bench.common import data_home
    from engram.config import default_key_store_path

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "before"))
    with data_home(str(tmp_path / "bench")) as folder:
        assert os.environ["XDG_DATA_HOME"] == folder
        assert default_key_store_path("0" * 32).startswith(folder + os.sep)
    assert os.environ["XDG_DATA_HOME"] == str(tmp_path / "before")
    monkeypatch.delenv("XDG_DATA_HOME")
    with pytest.raises(RuntimeError), data_home(str(tmp_path / "bench")):
        raise RuntimeError("a step failed")
    assert "XDG_DATA_HOME" not in os.environ


def test_the_table_shows_shares_and_counts_of_distinct_items_as_numbers() -> None:
    from engram.bench.report import table

    share = Figure("quality unanswerable (hash)", "share", "goal", 1.0)
    share.engram_samples, share.reference_samples = [0.825], [0.9]
    distinct = Figure("quality copies (hash)", "distinct", "goal", 1.0)
    distinct.engram_samples, distinct.reference_samples = [10.0], [9.5]
    shown = table([share, distinct])
    for value in ("0.825", "0.900", "10.0", "9.5"):
        assert value in shown
    assert "/s" not in shown
