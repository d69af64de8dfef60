"""The projection and graph commands of ``engram``, end to end on real SQLite files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from engram.cli import main
from engram.projections.salience import INITIAL


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    path = str(tmp_path / "cli.db")
    assert run(capsys, "--ledger", path, "init")[0] == 0
    return path


def test_status_rebuild_and_json(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--ledger", db, "status", "--format", "json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert {"neuron_graph", "salience"} <= set(rows)
    assert rows["neuron_graph"]["head"] == 7
    assert rows["neuron_graph"]["checkpoint"] + rows["neuron_graph"]["lag"] == 7

    code, out, _ = run(capsys, "--ledger", db, "rebuild")
    assert code == 0
    assert "neuron_graph" in out
    assert out.splitlines()[0].split()[-1] == "digest"
    code, out, _ = run(capsys, "--ledger", db, "status", "--format", "json", "--digest")
    rows = {r["name"]: r for r in json.loads(out)}
    for row in (rows["neuron_graph"], rows["salience"]):
        assert (row["state"], row["checkpoint"], row["lag"], row["error"]) == ("live", 7, 0, None)
        assert len(row["digest"]) == 64
    code, again, _ = run(capsys, "--ledger", db, "rebuild", "salience")
    assert code == 0
    assert rows["salience"]["digest"] in again  # a rebuild reproduces the same state

    code, _, err = run(capsys, "--ledger", db, "rebuild", "nope")
    assert code == 2
    assert "unknown projection(s) 'nope'" in err


def test_graph_export_has_the_documented_shape(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--ledger", db, "graph", "export")
    assert code == 0
    graph = json.loads(out)
    assert set(graph) == {"neurons", "metadata"}
    assert {"version", "last_modified", "active_agents"} <= set(graph["metadata"])
    assert graph["metadata"]["active_agents"] == ["engram"]
    assert len(graph["neurons"]) == 3
    for neuron in graph["neurons"]:
        assert set(neuron) == {
            "id",
            "concept",
            "type",
            "salience",
            "last_salience_update",
            "connections",
        }
        assert 0 <= neuron["salience"] <= INITIAL
        for link in neuron["connections"]:
            assert set(link) == {"target", "weight", "type"}
    perception = next(n for n in graph["neurons"] if n["id"] == "n_perception_001")
    assert perception["connections"] == [
        {"target": "n_decision_001", "weight": 30000, "type": "triggers"},
        {"target": "n_memory_001", "weight": 52000, "type": "feeds_into"},
    ]
    target = tmp_path / "graph.json"
    code, out, err = run(capsys, "--ledger", db, "graph", "export", "--out", str(target))
    assert (code, out) == (0, "")
    assert "wrote 3 neurons" in err
    assert json.loads(target.read_text())["neurons"] == graph["neurons"]
    # ADR 0186: an existing file, or a link to one, is replaced only with --force, and then
    # the link itself: the file it points to is left as it was.
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    for path in (victim, link):
        code, out, err = run(capsys, "--ledger", db, "graph", "export", "--out", str(path))
        assert code == 2
        assert "exists; pass --force" in err
    assert victim.read_text() == "keep me\n"
    code, _, _ = run(capsys, "--ledger", db, "graph", "export", "--out", str(link), "--force")
    assert code == 0
    assert victim.read_text() == "keep me\n"
    assert not link.is_symlink()
    assert json.loads(link.read_text())["neurons"] == graph["neurons"]


def test_graph_propagate(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--ledger", db, "graph", "propagate", "n_perception_001")
    assert code == 0
    header, rule, *lines = out.splitlines()
    assert header.split() == ["neuron", "hop", "activation"]
    assert set(rule) == {"-", " "}
    seed, hop, level = lines[0].split()
    # Nothing comes back to the seed: decision -recalls-> perception runs backward (ADR 0064),
    # from perception to decision, so it is how decision is reached, not a way home.
    assert (seed, hop) == ("n_perception_001", "0")
    assert float(level) == 1.0
    assert {line.split()[0] for line in lines} == {
        "n_perception_001",
        "n_memory_001",
        "n_decision_001",
    }
    code, out, _ = run(capsys, "--ledger", db, "log", "--format", "json")
    assert len(json.loads(out)) == 7  # propagate writes nothing

    code, out, err = run(
        capsys, "--ledger", db, "graph", "propagate", "n_perception_001", "--append"
    )
    assert code == 0
    assert err.startswith("appended 3 activations (correlation ")
    assert out.splitlines()[0].split() == ["neuron", "hop", "activation"]

    code, out, err = run(capsys, "--ledger", db, "graph", "propagate", "n_nope_404")
    assert (code, out) == (1, "")
    assert "engram graph propagate: error:" in err
    assert "seed neuron 'n_nope_404' does not exist" in err


def test_graph_top_as_of(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, now, _ = run(capsys, "--ledger", db, "graph", "top", "-k", "2")
    assert code == 0
    assert len(now.splitlines()) == 2 + 2  # the header, its rule, two rows
    # Long after the bootstrap everything has decayed: 0.99**(24*365) is about 0.
    for as_of in ("2999-01-01T00:00:00Z", "2999-01-01T05:30:00+05:30"):
        code, out, _ = run(capsys, "--ledger", db, "graph", "top", "--as-of", as_of)
        assert code == 0
        rows = [line.split() for line in out.splitlines()[2:]]
        assert len(rows) == 3
        assert all(float(row[2]) == 0 for row in rows)
        assert all(float(row[3]) == round(INITIAL / 65535, 4) for row in rows)
    # Before the bootstrap the store knew no neuron (ADR 0019).
    code, out, _ = run(capsys, "--ledger", db, "graph", "top", "--as-of", "2000-01-01T00:00Z")
    assert code == 0
    assert out.splitlines()[2:] == []

    code, _, err = run(capsys, "--ledger", db, "graph", "top", "--as-of", "2030-01-01T00:00:00")
    assert code == 2
    assert "has no timezone" in err
    assert "2030-01-01T00:00:00Z" in err
    # A date alone: the hint is a time the command takes (it offered "2030-01-01Z").
    code, _, err = run(capsys, "--ledger", db, "graph", "top", "--as-of", "2030-01-01")
    assert code == 2
    hint = err.split("e.g. ")[1].split()[0]
    assert hint == "2030-01-01T00:00:00Z"
    assert run(capsys, "--ledger", db, "graph", "top", "--as-of", hint)[0] == 0


def test_graph_top_shows_salience_from_0_to_1_and_what_each_item_is(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--ledger", db, "graph", "top", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert rows
    assert all(0 <= row["salience"] <= row["stored"] <= 1 for row in rows)
    assert {row["text"] for row in rows} >= {"perception"}


def test_graph_top_shows_a_private_memory_only_to_its_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ADR 0144: the one listing that printed another agent's private text whole.
    db = str(tmp_path / "l.db")
    secret = "the vault code is 4711"
    args = ("--ledger", db, "observe", "alice", secret, "--visibility", "private")
    assert run(capsys, *args)[0] == 0
    assert run(capsys, "--ledger", db, "observe", "bob", "lunch is at noon")[0] == 0
    top = ("--ledger", db, "graph", "top", "--item", "memory", "--format", "json")
    code, out, _ = run(capsys, *top)
    assert code == 0
    assert sorted(r["text"] for r in json.loads(out)) == ["[private]", "lunch is at noon"]
    code, out, _ = run(capsys, *top, "--as", "alice")
    assert sorted(r["text"] for r in json.loads(out)) == ["lunch is at noon", secret]
    code, out, _ = run(capsys, *top, "--as", "bob")
    assert secret not in out
