"""Command-line arguments no command can use: one usage error naming the argument, no trace.

Bytes of the command line that are not UTF-8 reach Python as lone surrogates ("\\udcff" for
the byte 0xff); every read that handed one to SQLite, DuckDB or an index ended in a
``UnicodeEncodeError`` (or DuckDB's ``TypeError``) traceback.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engram.cli import main
from engram.ledger import Ledger

#: What Python makes of the byte 0xff in a command line (PEP 383).
BYTE_FF = os.fsdecode(b"\xff")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("args") / "args.db")
    assert main(["--ledger", path, "-q", "observe", "alice", "the deploy failed"]) == 0
    return path


def head(db: str) -> int:
    with Ledger.open(db, readonly=True) as ledger:
        return ledger.head()


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["recall", BYTE_FF, "deploy"], "AGENT"),
        (["recall", "alice", f"deploy{BYTE_FF}"], "QUERY"),
        (["log", "--kind", BYTE_FF], "--kind"),
        (["log", "--stream", BYTE_FF], "--stream"),
        (["sql", f"SELECT 1 {BYTE_FF}"], "QUERY"),
        (["memo", "read", BYTE_FF], "SESSION"),
        (["signals", "list", BYTE_FF], "AGENT"),
        (["scars", "list", "--agent", BYTE_FF], "--agent"),
        (["scars", "show", BYTE_FF], "POSITION|ID"),
        (["suggestions", "show", BYTE_FF], "SUGGESTION"),
        (["concepts", "tree", BYTE_FF], "AGENT"),
        (["context", "deploy", "--agent", BYTE_FF], "--agent"),
        (["reflections", "show", BYTE_FF], "ID|POSITION"),
        (["supersessions", "list", "--agent", BYTE_FF], "--agent"),
        (["forget", BYTE_FF, "--yes"], "SUBJECT"),
        (["observe", "alice", f"caf{BYTE_FF}"], "TEXT"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else v,
)
def test_a_text_argument_that_is_not_utf8_is_a_usage_error_naming_it(
    db: str, capsys: pytest.CaptureFixture[str], argv: list[str], name: str
) -> None:
    before = head(db)
    code, out, err = run(capsys, "--ledger", db, *argv)
    assert (code, out) == (2, ""), err
    assert err.splitlines()[-1] == f"Error: Invalid value for '{name}': not valid UTF-8 (byte 0xff)"
    assert head(db) == before


def test_a_real_process_given_bytes_that_are_not_utf8_says_which_argument(db: str) -> None:
    exe = Path(sys.executable).with_name("engram")
    proc = subprocess.run(
        [os.fsencode(exe), b"--ledger", os.fsencode(db), b"recall", b"alice", b"d\xc3ploy"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert b"Traceback" not in proc.stderr
    assert (
        proc.stderr.splitlines()[-1]
        == b"Error: Invalid value for 'QUERY': not valid UTF-8 (byte 0xc3)"
    )


#: One past the largest integer SQLite binds: the driver raised OverflowError on each.
PAST_INT64 = str(2**63)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["log", "--after", PAST_INT64], f"Error: after must be at most {2**63 - 1}"),
        (["log", "--limit", PAST_INT64], f"Error: limit must be at most {2**63 - 1}"),
        (["graph", "top", "-k", PAST_INT64], "engram graph top: error: k must be at most"),
        (["scars", "list", "--limit", PAST_INT64], "engram scars list: error: limit must be"),
        (["signals", "list", "bob", "--limit", PAST_INT64], "engram signals list: error: limit"),
        (["suggestions", "list", "--limit", PAST_INT64], "engram suggestions list: error: limit"),
        (["reflections", "-n", PAST_INT64], "engram reflections: error: limit must be at most"),
        (["reflections", "show", "9" * 23], "engram reflections show: error: position must be"),
        (["scars", "show", "9" * 23], f"engram scars show: error: no scar at '{'9' * 23}'"),
        (
            ["supersessions", "apply", PAST_INT64, "--reviewer", "ana"],
            "engram supersessions apply: error: proposal must be at most",
        ),
        (
            ["supersessions", "revert", PAST_INT64, "--reviewer", "ana"],
            "engram supersessions revert: error: event must be at most",
        ),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_a_number_past_64_bits_is_refused_with_one_line(
    db: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    before = head(db)
    code, out, err = run(capsys, "--ledger", db, *argv)
    assert code in (1, 2), err
    assert out == ""
    assert err.splitlines()[-1].startswith(message), err
    assert "Traceback" not in err
    assert head(db) == before


@pytest.mark.parametrize(
    ("window", "reason"),
    [
        ("nan", "'nan' is not a finite number."),  # ValueError traceback before
        ("inf", "inf is not in the range 0<x<=1000000.0."),  # OverflowError traceback
        ("1e308", "1e+308 is not in the range 0<x<=1000000.0."),
    ],
)
def test_vitality_refuses_a_window_no_time_span_holds(
    db: str, capsys: pytest.CaptureFixture[str], window: str, reason: str
) -> None:
    code, out, err = run(capsys, "--ledger", db, "vitality", "--window", window)
    assert (code, out) == (2, ""), err
    assert err.splitlines()[-1] == f"Error: Invalid value for '--window': {reason}"


def test_vitality_as_of_the_first_day_counts_growth_from_the_beginning(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A day before 0001-01-01 is no date: the window's start raised OverflowError.
    at = "0001-01-01T00:00:00+00:00"
    code, out, err = run(capsys, "--ledger", db, "vitality", "--as-of", at, "--format", "json")
    assert code == 0, err
    assert f'"at": "{at}"' in out
    assert '"growth": 0' in out


@pytest.mark.parametrize(
    "argv",
    [
        ("recall", "alice", "q", "--min-score", "nan"),
        ("sql", "SELECT 1", "--timeout", "nan"),
        ("graph", "propagate", "n1", "--strength", "nan"),
    ],
)
def test_a_number_that_is_not_finite_is_a_usage_error(
    db: str, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    # ADR 0141: nan passed click's ranges, and the API's refusal exited 1, not 2.
    before = head(db)
    code, out, err = run(capsys, "--ledger", db, *argv)
    assert (code, out) == (2, ""), err
    assert "'nan' is not a finite number." in err
    assert head(db) == before
