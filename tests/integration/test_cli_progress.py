"""Progress on long steps: the bar itself, and the notice before a rebuild on first use."""

from __future__ import annotations

import io
import time
from pathlib import Path

from click.testing import CliRunner

from engram.cli import cli
from engram.progress import ProgressBar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_quick_work_draws_nothing() -> None:
    stream = Terminal()
    with ProgressBar(stream).start("catch-up", 100) as bar:
        bar("catch-up", 100, 100)
    assert stream.getvalue() == ""


def test_a_long_batch_keeps_its_line_alive_and_ends_it() -> None:
    stream = Terminal()
    bar = ProgressBar(stream, delay=0.0)
    with bar.start("rebuild", 1000):
        time.sleep(2.3)  # one long batch: no call from the engine meanwhile
        assert bar._ticker is not None
        bar("rebuild", 1000, 1000)
    assert bar._ticker is None
    frames = stream.getvalue().split("\r")[1:]
    assert frames[0].startswith("rebuild [..............................] 0/1,000  1s")
    assert frames[1].startswith("rebuild [..............................] 0/1,000  2s")
    assert frames[-1].startswith("rebuild [##############################] 1,000/1,000")
    assert frames[-1].endswith(" ETA 0s\n")
    assert stream.getvalue().count("\n") == 1


def test_an_unknown_total_shows_the_time_spent_and_a_closed_line() -> None:
    stream = Terminal()
    with ProgressBar(stream, delay=0.0).start("loading the vector index"):
        time.sleep(1.2)
    assert stream.getvalue().startswith("\rloading the vector index… 1s")
    assert stream.getvalue().endswith("\n")


def test_a_log_file_gets_plain_lines() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, delay=0.0, every=0.0)
    bar("catch-up", 5, 10)
    bar("catch-up", 10, 10)
    lines = stream.getvalue().splitlines()
    assert [line.split("]")[1].split()[0] for line in lines] == ["5/10", "10/10"]
    assert "\r" not in stream.getvalue()


def test_a_changed_projection_is_announced_before_the_command_waits_for_it(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "p.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["--ledger", db, "init"]).exit_code == 0
    assert runner.invoke(cli, ["--ledger", db, "graph", "top"]).exit_code == 0
    config = tmp_path / "engram.toml"
    config.write_text("decay_rate = 0.5\n")  # salience's identity changes with its rate
    result = runner.invoke(cli, ["--ledger", db, "--config", str(config), "graph", "top"])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("rebuilding salience first (")
    assert "7 events" in result.stderr
    config.write_text("decay_rate = 0.25\n")
    quiet = runner.invoke(cli, ["--ledger", db, "--config", str(config), "graph", "top", "-q"])
    assert (quiet.exit_code, quiet.stderr) == (0, "")
    status = runner.invoke(cli, ["--ledger", db, "--config", str(config), "status"])
    assert (
        "rate=0.25"
        in runner.invoke(
            cli, ["--ledger", db, "--config", str(config), "status", "--format", "csv"]
        ).stdout
    )
    assert "stale" not in status.stdout


def test_the_notice_names_an_embedder_switch(tmp_path: Path) -> None:
    # The semantic index built with one embedder and opened with another is rebuilt whole:
    # the notice says which two, and what chose the new one.
    from engram.cli.base import _why_rebuilt
    from engram.projections.embedding import HashEmbedder
    from engram.projections.engine import ProjectionStatus
    from engram.projections.semantic import SemanticIndex

    built = SemanticIndex(HashEmbedder()).identity()
    now = built.replace('"provider":"hash","model":"feature-hash-v1"',
                        '"provider":"onnx","model":"all-MiniLM-L6-v2"')  # fmt: skip
    assert now != built

    def row(identity: str, stored: str, state: str) -> ProjectionStatus:
        return ProjectionStatus("semantic", 6, identity, stored, 3, 9, 9, 0, state, None, None)

    said = _why_rebuilt([row(now, built, "stale")])
    assert "built with the hash embedder (feature-hash-v1)" in said
    assert "runs onnx (all-MiniLM-L6-v2)" in said
    assert "ENGRAM_EMBEDDER" in said
    assert _why_rebuilt([row(built + " passages=64/48", built, "stale")]) == (
        "the projection's code or configuration changed"
    )
    assert _why_rebuilt([row(built, built, "rebuilding")]) == "a rebuild was interrupted"


def test_each_step_s_rate_is_its_own() -> None:
    # A catch-up reported each batch of a step as "5,000/5,000" anew, and the rate, counted
    # from the first batch's start, fell batch after batch (7,156 -> 583 events/s).
    import io
    import time

    from engram.progress import ProgressBar

    out = io.StringIO()
    bar = ProgressBar(out, delay=0.0, every=0.0)
    bar("semantic: embedded", 5_000, 5_000)
    time.sleep(0.5)
    bar("semantic: embedded", 0, 5_000)
    bar("semantic: embedded", 5_000, 5_000)
    first, *_, last = out.getvalue().splitlines()
    rate = int(last.split("  ")[1].split()[0].replace(",", ""))
    assert rate > 20_000, (first, last)  # the second batch's own rate, not 5,000 over 0.5 s
