"""A config file that is not one: a device, a FIFO, bytes that are not UTF-8, endless nesting.

Each used to end in a traceback (``MemoryError`` after filling the memory from /dev/zero,
``UnicodeDecodeError``, ``RecursionError``) or to hang on a FIFO with no writer. Each is now
a one-line usage error naming the file, exit 2, and nothing is created.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from engram.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def test_a_config_file_that_cannot_be_read_as_toml_is_one_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    not_utf8 = tmp_path / "latin1.toml"
    not_utf8.write_bytes(b'ledger = "caf\xe9.db"\n')
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    tables = tmp_path / "tables.toml"
    tables.write_text("a = " + "{b = " * 5000 + "1" + "}" * 5000 + "\n")
    big = tmp_path / "big.toml"
    with open(big, "wb") as out:  # sparse: 1 GiB that takes no disk
        out.truncate(1 << 30)
    cases = {
        "/dev/zero": "cannot be read (not a regular file)",
        str(fifo): "cannot be read (not a regular file)",
        str(big): "cannot be read (larger than 4,194,304 bytes)",
        str(not_utf8): "is not valid TOML (not UTF-8 at byte 14: 0xe9)",
        str(deep): "is not valid TOML (its arrays or tables nest too deeply)",
        str(tables): "is not valid TOML (its arrays or tables nest too deeply)",
    }
    for path, reason in cases.items():
        code, out, err = run(capsys, "--config", path, "status")
        assert (code, out) == (2, ""), err
        assert err.splitlines()[-1] == f"Error: config file {path} {reason}"
        assert "Traceback" not in err
    code, _, err = run(capsys, "--config", os.devnull, "--ledger", str(tmp_path / "l.db"), "init")
    assert code == 0, err  # the null device is an empty config, as it always was
    (tmp_path / "l.db").unlink()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("l.db")) == sorted(
        Path(p).name for p in cases if p != "/dev/zero"
    )
