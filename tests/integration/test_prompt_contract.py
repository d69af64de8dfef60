"""The prompt contract on a real store: frame shares, top k per node type, details, influence."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import engram
from engram.agents.context import ContextWeights, build_context
from engram.agents.details import LEAD_CHARS, MARK
from engram.agents.frames import FRAMES, RULE_SHARE, SHARES, TOP_K, encode, for_ledger
from engram.agents.tokens import default_counter
from engram.cli import main
from engram.projections.concepts import SELF
from engram.projections.errors import QueryError
from engram.runtime import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        yield opened


def _leaves(tree: object) -> list[dict[str, object]]:
    """Return the concept entries (the SELF dictionaries) of a knowledge frame."""
    if not isinstance(tree, dict):
        return []
    own = [tree[SELF]] if SELF in tree else []
    return own + [leaf for k, v in tree.items() if k != SELF for leaf in _leaves(v)]


def test_each_node_type_keeps_its_own_top_k(memory: Memory) -> None:
    book = memory.concepts("coder")
    for i in range(12):
        book.upsert(f"snippet.retry.s{i}", "snippet", f"retry backoff snippet {i}")
        book.upsert(f"pattern.retry.p{i}", "pattern", f"retry backoff pattern {i}")
        book.upsert(f"skill.retry.k{i}", "skill", f"retry backoff skill {i}")
    coder = memory.agent("coder")

    def counts(**weights: object) -> dict[str, int]:
        built = build_context(coder, "retry backoff", budget=20_000, save=False,
                              weights=ContextWeights(**weights))  # type: ignore[arg-type]  # fmt: skip
        found: dict[str, int] = {}
        for leaf in _leaves(built.frames["knowledge"]):
            found[str(leaf["type"])] = found.get(str(leaf["type"]), 0) + 1
        return found

    assert counts() == {"snippet": TOP_K["snippet"], "pattern": TOP_K["pattern"],
                        "skill": TOP_K["skill"]}  # fmt: skip
    assert (TOP_K["snippet"], TOP_K["skill"], TOP_K["pattern"]) == (10, 6, 4)
    assert counts(top_k={"pattern": 7}) == {"snippet": 10, "pattern": 7, "skill": 6}
    assert counts(per_type=3) == {"snippet": 3, "pattern": 3, "skill": 3}
    assert counts(per_type=3, top_k={"skill": 12}) == {"snippet": 3, "pattern": 3, "skill": 12}
    for bad in ({"skill": 0}, {"": 3}, {"skill": True}, [("skill", 3)]):
        with pytest.raises(QueryError, match="top_k"):
            ContextWeights(top_k=bad)  # type: ignore[arg-type]


def test_knowledge_takes_at_most_its_share_and_rules_keep_theirs_first(memory: Memory) -> None:
    book = memory.concepts("coder")
    for i in range(10):
        book.upsert(f"fact.deploy.f{i}", "fact", f"deploy migration lock timeout fact {i}",
                    payload={"why": f"deploy migration lock timeout note {i} " * 4})  # fmt: skip
    coder = memory.agent("coder")
    for i in range(6):
        coder.observe(f"The deploy step {i} held the users table for a while")
    position = memory.scars("coder").record(
        "failure", "the deploy migration locked the users table",
        "run deploy migrations with a lock timeout",
    )  # fmt: skip
    (scar,) = memory.ledger.get([position])
    lessons = memory.lessons()
    rule = lessons.propose([scar.id], "rules", "Run every deploy migration with a lock timeout.")
    lessons.apply(rule, "ana", always=True)
    budget = 800
    built = build_context(coder, "deploy migration lock timeout", budget=budget, save=False)
    counter = default_counter()
    assert list(built.frames) == list(FRAMES)
    assert list(built.sections) == list(FRAMES)
    assert built.sections == {n: counter.count(encode({n: c})) for n, c in built.frames.items()}
    assert built.tokens <= budget
    assert built.sections["knowledge"] <= SHARES["knowledge"] * budget
    assert built.frames["constraints"], "the always-on rule is served first"
    assert built.sections["constraints"] <= RULE_SHARE * budget
    # The facts match the query better than the memories: without knowledge's cap they
    # would take the room; with it the last steps keep theirs.
    facts = [i for i in built.items if i.frame == "knowledge"]
    steps = [i for i in built.items if i.type == "observation"]
    assert min(f.score for f in facts) > max(s.score for s in steps)
    assert len(steps) >= 3


def _long_memory(memory: Memory) -> str:
    filler = " ".join(
        f"Step {i} of the rollout went as planned and nobody was paged." for i in range(40)
    )
    text = (
        "The nightly deploy failed after the schema change. "
        + filler
        + " The root cause was the index rebuild holding a lock on the invoices table."
        + " We wrote it down for the next rollout."
    )
    memory.agent("coder").observe(text)
    return text


def test_long_text_goes_to_details_summarised_when_the_budget_is_tight(memory: Memory) -> None:
    text = _long_memory(memory)
    coder = memory.agent("coder")
    counter = default_counter()
    roomy = build_context(coder, "invoices lock index rebuild", budget=4000, save=False)
    (entry,) = roomy.frames["episodic"]  # type: ignore[misc]
    # The lead: the first whole sentences within LEAD_CHARS, a prefix of the text.
    assert entry["text"].startswith("The nightly deploy failed after the schema change. Step 0")
    assert entry["text"].endswith("paged.")
    assert len(entry["text"]) <= LEAD_CHARS
    assert text.startswith(entry["text"])
    assert entry["details"] == text[len(entry["text"]) :].strip()
    sizes = []
    for budget in (700, 400, 260):
        tight = build_context(coder, "invoices lock index rebuild", budget=budget, save=False)
        assert tight.tokens <= budget
        assert counter.count(encode(tight.frames)) == tight.tokens
        (entry,) = tight.frames["episodic"]  # type: ignore[misc]
        details = entry.get("details", "")
        assert len(details) < len(text) - len(entry["text"])
        sizes.append(len(details))
        if details:  # an extract: the sentence the query asks about is kept, the gap marked
            assert "invoices table" in details
            assert MARK in details
        else:
            assert entry["text"].endswith(MARK)
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[0] > 0
    # What is saved quotes by position: neither the lead nor the details are copied.
    (kept,) = for_ledger(roomy.frames)["episodic"]  # type: ignore[misc]
    assert set(kept) == {"pos", "type", "agent", "at"}


def test_a_concept_s_long_payload_is_its_details(memory: Memory) -> None:
    code = "\n".join(f"line {i}: retry with jittered backoff and a cap" for i in range(30))
    memory.concepts("coder").upsert("snippet.retry", "snippet", "retry helper",
                                    payload={"code": code, "lang": "python"})  # fmt: skip
    memory.concepts("coder").upsert("snippet.short", "snippet", "retry short",
                                    payload={"code": "retry()"})  # fmt: skip
    built = build_context(memory.agent("coder"), "retry", budget=4000, save=False)
    knowledge = built.frames["knowledge"]["snippet"]  # type: ignore[index]
    long, short = knowledge["retry"][SELF], knowledge["short"][SELF]
    assert short == {"type": "snippet", "label": "retry short", "payload": {"code": "retry()"}}
    assert set(long) == {"type", "label", "details"}
    assert long["details"].startswith("code: line 0: retry")
    assert long["details"].endswith("lang: python")


def test_an_influences_connection_raises_the_target_s_items_without_activating_it(
    memory: Memory,
) -> None:
    coder = memory.agent("coder")
    billing = coder.observe("The billing service timed out during the night")
    search = coder.observe("The search service timed out during the night")
    network = memory.network
    network.create_neuron("n_incident", "incident")
    network.create_neuron("n_billing", "billing")
    network.stimulate({"n_incident": 1.0})

    def ranked(**weights: float) -> list[int]:
        built = build_context(coder, "which service timed out", budget=2000, save=False,
                              weights=ContextWeights(**weights))  # fmt: skip
        return [i.position for i in built.items if i.frame == "episodic"]

    assert ranked() == [search, billing]  # alike: the newer first
    network.connect("n_incident", "n_billing", "influences", 65535)
    assert ranked() == [billing, search]
    built = build_context(coder, "which service timed out", budget=2000, save=False)
    swayed = {i.position: i.components["influence"] for i in built.items}
    assert swayed[billing] > 0.5
    assert swayed[search] == 0
    assert ranked(influence=0.0) == [search, billing]
    # The target was swayed, not activated: no activation of it was appended.
    assert "n_billing" not in network.working_set().resonance
    kinds = [e.kind for e in memory.ledger.read_stream("neuron:n_billing")]
    assert kinds == ["neuron.created"]
    # A source that has gone quiet sways nothing: the sway follows the source's salience.
    network.archive("n_incident")
    assert ranked() == [search, billing]


def test_the_context_command_shows_the_sections_and_takes_a_top_k(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = str(tmp_path / "c.db")
    for i in range(5):
        args = ["concepts", "upsert", "coder", f"pattern.retry.p{i}", "--type", "pattern"]
        assert main(["--ledger", ledger, *args, "--label", f"retry pattern {i}"]) == 0
    capsys.readouterr()

    def context(*argv: str) -> tuple[int, str, str]:
        out = io.StringIO()
        code = main(["--ledger", ledger, "context", "retry", "--agent", "coder", "--no-save",
                     *argv], out=out)  # fmt: skip
        return code, out.getvalue(), capsys.readouterr().err

    code, out, err = context()
    assert code == 0, err
    assert list(json.loads(out)) == list(FRAMES)
    sections = next(line for line in err.splitlines() if "sections:" in line)
    assert [p.split()[0] for p in sections.split("sections: ")[1].split(", ")] == list(FRAMES)
    assert len(_leaves(json.loads(out)["knowledge"])) == TOP_K["pattern"] == 4
    code, out, err = context("--top-k", "pattern=2", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert len(_leaves(record["frames"]["knowledge"])) == 2
    assert list(record["sections"]) == list(FRAMES)
    assert sum(record["sections"].values()) >= record["tokens"] - 10
    for bad in ("pattern", "pattern=0", "=3", "pattern=x"):
        code, _, err = context("--top-k", bad)
        assert code == 2
        assert "--top-k" in err
