"""``engram supersessions list|apply|refuse|revert`` end to end on a real ledger (ADR 0075)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import engram
from engram.cli import main
from engram.ledger import NewEvent
from engram.ledger.catalog import SupersessionProposed


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def _seed(ledger: str) -> dict[str, int]:
    with engram.open_memory(ledger, supersede="off") as memory:
        ana = memory.agent("ana")
        found = {
            "paris": ana.observe("Alice Moreau lives in Paris."),
            "berlin": ana.observe("Alice Moreau moved to Berlin."),
            "tea": ana.observe("Alice Moreau likes green tea."),
        }
        for name, (new, old) in {"moved": ("berlin", "paris"), "tea": ("tea", "paris")}.items():
            payload = SupersessionProposed(
                agent="ana", position=found[new], replaces=[found[old]], similarity=0.4,
                reason=f"because {name}",
            )  # fmt: skip
            event = NewEvent.of(payload, stream="agent:ana", actor="ana")
            found[name] = memory.ledger.append(event)[0]
    return found


def _decisions(ledger: str, after: int) -> list[tuple[str, str, str]]:
    with engram.open(ledger) as led:
        return [
            (e.kind, e.actor, e.payload.note) for e in led.read(after) if e.kind.startswith("sup")
        ]


def test_list_apply_refuse_and_revert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = str(tmp_path / "l.db")
    s = _seed(ledger)
    base = ["--ledger", ledger]
    code, out, _ = run(capsys, *base, "supersessions", "list", "--format", "json")
    assert code == 0
    listed = json.loads(out)
    assert [(r["event"], r["why"]) for r in listed] == [
        (s["moved"], "because moved"),
        (s["tea"], "because tea"),
    ]
    assert listed[0]["new"] == f"#{s['berlin']} Alice Moreau moved to Berlin."
    assert listed[0]["replaces"] == f"#{s['paris']} Alice Moreau lives in Paris."
    code, out, _ = run(
        capsys, *base, "supersessions", "apply", str(s["moved"]), "--reviewer", "lead"
    )
    assert code == 0, out
    assert f"proposal {s['moved']} applied by lead" in out
    code, out, _ = run(
        capsys, *base, "supersessions", "refuse", str(s["tea"]), "--reviewer", "lead",
        "--note", "both are true",
    )  # fmt: skip
    assert code == 0, out
    code, out, _ = run(capsys, *base, "supersessions", "list", "--status", "applied",
                       "--format", "json")  # fmt: skip
    (applied,) = json.loads(out)
    assert applied["method"] == "reviewed"
    code, out, _ = run(
        capsys, *base, "supersessions", "revert", str(applied["event"]), "--reviewer", "erin"
    )
    assert code == 0, out
    assert _decisions(ledger, s["tea"]) == [
        ("supersession.reviewed", "lead", ""),
        ("supersession.reviewed", "lead", "both are true"),
        ("supersession.reverted", "erin", ""),
    ]


def test_bad_decisions_are_refused_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = str(tmp_path / "l.db")
    s = _seed(ledger)
    base = ["--ledger", ledger]
    for argv, needle in (
        (["apply", str(s["paris"]), "--reviewer", "lead"], "no supersession proposal"),
        (["revert", str(s["moved"]), "--reviewer", "lead"], "no supersession in force"),
        (["apply", str(s["moved"]), "--reviewer", " "], "reviewer must be a non-empty name"),
        (["apply", "0", "--reviewer", "lead"], "0"),
        (["apply", str(s["moved"])], "--reviewer"),
    ):
        code, out, err = run(capsys, *base, "supersessions", *argv)
        assert code != 0, (argv, out)
        assert needle in err, (argv, err)
    assert _decisions(ledger, s["tea"]) == []


def test_the_recall_table_says_what_replaced_an_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "ledger.db")
    assert run(capsys, "--ledger", db, "observe", "ana", "The backup runs at 02:00 UTC.")[0] == 0
    code, _, err = run(
        capsys, "--ledger", db, "observe", "ana", "Backups moved to 04:30 UTC.", "--supersedes", "1"
    )
    assert code == 0, err
    code, out, _ = run(capsys, "--ledger", db, "recall", "ana", "when does the backup run")
    assert code == 0
    header, _, *rows = out.splitlines()
    assert "replaced_by" in header.split()
    replaced = next(r for r in rows if "02:00" in r)
    assert replaced.split()[3] == "2"  # position, score, copies, replaced_by
    assert rows.index(replaced) > next(i for i, r in enumerate(rows) if "04:30" in r)
