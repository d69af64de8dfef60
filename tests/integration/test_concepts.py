"""The concept tree (HDoD): upserts, subtrees, links, visibility, on a real store."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engram
from engram.agents import ConceptOwnerError
from engram.cli import main
from engram.ledger import PayloadError
from engram.projections import concepts
from engram.projections.concepts import SELF, Concept
from engram.runtime import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        yield opened


def test_the_newest_upsert_wins_and_links_are_replaced(memory: Memory) -> None:
    coder = memory.concepts("coder")
    coder.upsert("skill.cpp", "skill", "C++", links=[{"to": "skill.c", "rel": "extends"}])
    coder.upsert("skill.c", "skill", "C")
    coder.upsert("skill.cpp", "skill", "Modern C++", payload={"level": 3},
                 links=[{"to": "skill.rust", "rel": "rival", "weight": 0.2}])  # fmt: skip
    concept = coder.get("skill.cpp")
    assert concept is not None
    assert (concept.label, concept.payload, concept.versions) == ("Modern C++", {"level": 3}, 2)
    assert coder.neighbours("skill.cpp") == []  # skill.rust does not exist (yet)
    coder.upsert("skill.rust", "skill", "Rust")
    ((link, far),) = coder.neighbours("skill.cpp")
    assert (link.rel, link.weight, far.label) == ("rival", 0.2, "Rust")


def test_a_subtree_is_its_root_and_what_lies_below_it(memory: Memory) -> None:
    coder = memory.concepts("coder")
    for cid in ["skill", "skill.cpp", "skill.cpp.templates.sfinae", "skill.cpp-x", "skills"]:
        coder.upsert(cid, "skill", cid.upper())
    assert coder.tree("skill.cpp") == {
        SELF: {"type": "skill", "label": "SKILL.CPP", "payload": {}},
        "templates": {
            "sfinae": {
                SELF: {"type": "skill", "label": "SKILL.CPP.TEMPLATES.SFINAE", "payload": {}}
            }
        },
    }
    assert set(coder.tree()) == {"skill", "skills"}
    assert set(coder.tree("skill")) == {SELF, "cpp", "cpp-x"}


def test_private_concepts_stay_with_their_agent(memory: Memory) -> None:
    memory.concepts("ana").upsert(
        "persona.ana.diary", "persona", "Ana's diary", visibility="private"
    )
    memory.concepts("ana").upsert("persona.ana", "persona", "Ana")
    memory.concepts("bob").upsert(
        "fact.x", "fact", "x", links=[{"to": "persona.ana.diary", "rel": "r"}]
    )
    assert memory.concepts("bob").get("persona.ana.diary") is None
    assert "diary" not in memory.concepts("bob").tree("persona.ana")
    assert "diary" in memory.concepts("ana").tree("persona.ana")
    assert memory.concepts("bob").neighbours("fact.x") == []
    head = memory.ledger.head()
    with pytest.raises(ConceptOwnerError, match="private to another agent"):
        memory.concepts("bob").upsert("persona.ana.diary", "persona", "mine now")
    with pytest.raises(PayloadError, match=r"\$\.id"):
        memory.concepts("bob").upsert("Persona..Bad", "persona", "bad id")
    with pytest.raises(PayloadError, match="weight"):
        memory.concepts("bob").upsert(
            "fact.y", "fact", "y", links=[{"to": "a", "rel": "r", "weight": 2}]
        )
    assert memory.ledger.head() == head


ids = st.lists(
    st.lists(st.sampled_from(["a", "b", "c-d", "e_f"]), min_size=1, max_size=4).map(".".join),
    min_size=1,
    max_size=15,
)


@settings(max_examples=60, deadline=None)
@given(ids)
def test_tree_holds_every_concept_once_at_its_path(paths: list[str]) -> None:
    rows = [
        Concept(p, "concept", p, "a", "public", {}, i + 1, 0, 0, 1)
        for i, p in enumerate(sorted(set(paths)))
    ]
    tree = concepts.tree(rows)
    found = []

    def walk(node: dict, path: list[str]) -> None:  # type: ignore[type-arg]
        for key, value in node.items():
            if key == SELF:
                found.append(".".join(path))
                assert value["label"] == ".".join(path)
            else:
                walk(value, [*path, key])

    walk(tree, [])
    assert sorted(found) == sorted(set(paths))


def test_the_command_line_upserts_and_prints_trees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def cli(*argv: str) -> tuple[int, str, str]:
        out = io.StringIO()
        code = main(["--ledger", str(tmp_path / "c.db"), *argv], out=out)
        return code, out.getvalue(), capsys.readouterr().err

    assert cli("concepts", "upsert", "coder", "skill.cpp", "--type", "skill", "--label", "C++",
               "--payload", '{"level": 3}', "--link", "skill.c:extends:0.7")[0] == 0  # fmt: skip
    code, out, _ = cli("concepts", "tree", "coder", "skill")
    assert json.loads(out) == {
        "cpp": {SELF: {"type": "skill", "label": "C++", "payload": {"level": 3}}}
    }
    code, _, err = cli("concepts", "upsert", "coder", "x", "--type", "skill", "--label", "x",
                       "--payload", "[1]")  # fmt: skip
    assert (code, err.strip()) == (
        1,
        "engram concepts upsert: error: --payload: must be a JSON object, got list",
    )
    code, _, err = cli("concepts", "upsert", "coder", "x", "--type", "skill", "--label", "x",
                       "--link", "nowhere")  # fmt: skip
    assert code == 1
    assert "TO:REL" in err
    code, _, err = cli("concepts", "show", "coder", "skill.nope")
    assert code == 1
    assert "no concept 'skill.nope'" in err
