"""``engram append`` on arbitrary bytes: a one-line error with the line number, or success.

Invalid UTF-8 (in a file or on stdin) and a payload nested 100,000 deep used to end in a
traceback. Every input error is now one line naming the line, exit 1, and nothing written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import jsonl_lines

from engram.cli import cli
from engram.ledger import Ledger

VALID = b'{"stream": "agent:a", "kind": "signal.sent", "payload": {"to": "b", "topic": "t"}}'


def append(db: str, data: bytes, *args: str) -> tuple[int, str, str, BaseException | None]:
    result = CliRunner().invoke(cli, ["--ledger", db, "append", *args], input=data)
    return result.exit_code, result.stdout, result.stderr, result.exception


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("fuzz") / "fuzz.db")
    assert append(path, VALID)[0] == 0
    return path


def head(db: str) -> int:
    with Ledger.open(db, readonly=True) as ledger:
        return ledger.head()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (VALID.replace(b'"t"', b'"\xff\xfe"'), "line 2: not valid UTF-8 (byte 79: 0xff)"),
        (b"\x80\x81 not json", "line 2: not valid UTF-8 (byte 1: 0x80)"),
        (
            VALID.replace(b'"t"', b"[" * 100_000 + b"]" * 100_000),
            "line 2: the JSON is nested too deeply",
        ),
        # ADR 0146: a lone surrogate inside a string was "Input data was truncated".
        (
            VALID.replace(b'"t"', b'"a\\ud800b"'),
            "line 2: a lone UTF-16 surrogate escape \\ud800 at character 79: text must be valid"
            " Unicode (a high surrogate \\ud800-\\udbff followed by a low one \\udc00-\\udfff,"
            " or neither)",
        ),
    ],
    ids=["utf8-in-a-string", "utf8-at-the-start", "nested-100000", "lone-surrogate"],
)
def test_bad_bytes_are_one_line_errors_and_write_nothing(
    db: str, tmp_path: Path, line: bytes, message: str
) -> None:
    before = head(db)
    source = tmp_path / "events.jsonl"
    source.write_bytes(VALID + b"\n" + line + b"\n")
    for args, data in (((str(source),), b""), ((), VALID + b"\n" + line + b"\n")):
        code, out, err, exc = append(db, data, *args)
        assert (code, out) == (1, ""), err
        assert isinstance(exc, SystemExit)
        assert err == f"engram append: error: {message}\n"
    assert head(db) == before


def test_a_line_too_long_for_any_payload_is_refused_before_it_is_read_whole(db: str) -> None:
    before = head(db)
    limit = 6 * (1 << 20) + (64 << 10)  # six bytes a stored byte, escaped, and some slack
    too_long = f"longer than {limit:,} bytes (a payload may hold at most 1,048,576)"
    # /dev/zero has no line break: read whole, it filled the memory until the process died.
    for args, data, line in (
        (("/dev/zero",), b"", 1),
        ((), VALID + b"\n" + b"a" * (limit + 1), 2),
    ):
        code, out, err, exc = append(db, data, *args)
        assert (code, out) == (1, ""), err
        assert isinstance(exc, SystemExit)
        assert err == f"engram append: error: line {line}: {too_long}\n"
    assert head(db) == before


# A failing example holding the 100,000-deep line has a repr of ~200 kB: Hypothesis warns as
# it prints it, and the warning (an error here) would stand in for the failure itself.
@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(jsonl_lines(), min_size=1, max_size=4))
def test_any_bytes_append_cleanly_or_fail_with_one_line(db: str, lines: list[bytes]) -> None:
    before = head(db)
    code, out, err, exc = append(db, b"\n".join(lines) + b"\n")
    assert isinstance(exc, SystemExit) or exc is None, f"crashed: {exc!r}"
    if code == 0:
        assert out.startswith("appended ")
        assert head(db) > before
        return
    assert code == 1, (code, err)
    assert err.startswith("engram append: error: ")
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert head(db) == before


def test_an_error_quoting_input_with_line_breaks_stays_on_one_line(db: str) -> None:
    field = b'"x\\ny\\u2028z": 1'
    line = VALID.replace(b'"topic": "t"', b'"topic": "t", ' + field)
    before = head(db)
    code, out, err, _ = append(db, line + b"\n")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1, err
    assert "\u2028" not in err
    assert "x\\ny\\u2028z" in err  # shown escaped, so the user still sees the field's name
    assert head(db) == before
