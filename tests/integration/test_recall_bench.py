"""The recall benchmarks on a small LoCoMo-format file: loading, cleaning, scoring, figures.

Hash vectors only (the MiniLM modes are switched off), so these run on the default install.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

import engram.bench as bench
from engram.bench import locomo, recall_bench, recall_latency, recall_report, recall_scale
from engram.bench.common import QUICK, Config, Figure
from engram.cli import cli

TURNS = [
    ("Ana", "I adopted a puppy named Biscuit last week."),
    ("Ben", "That is lovely! What breed is Biscuit?"),
    ("Ana", "A beagle. He loves long walks by the river."),
    ("Ben", "I started learning the violin. It is hard but fun."),
    ("Ana", "Which teacher do you have for the violin?"),
    ("Ben", "Mrs Ortiz, she plays in the city orchestra."),
]


def _conversation(sample: str, sessions: int) -> dict[str, object]:
    talk: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for number in range(1, sessions + 1):
        talk[f"session_{number}_date_time"] = f"1:56 pm on {number} May, 2023"
        talk[f"session_{number}"] = [
            {"speaker": who, "dia_id": f"D{number}:{i}", "text": f"On day {number}, {text}"}
            for i, (who, text) in enumerate(TURNS, start=1)
        ]
    talk["session_1"][0]["blip_caption"] = "a photo of a beagle puppy"  # type: ignore[index]
    qa = [
        {"question": "What is the name of Ana's puppy?", "evidence": ["D1:1"], "category": 4},
        {"question": "Who teaches Ben the violin?", "evidence": ["D1:6; D2:6"], "category": 1},
        {"question": "When did Ben start violin?", "evidence": ["D:1:4"], "category": 2},
        {"question": "What breed is the dog?", "evidence": ["D01:03"], "category": 3},
        {"question": "Unanswerable", "evidence": ["D1:1"], "category": 5},
        {"question": "No evidence", "evidence": [], "category": 4},
        {"question": "Unknown turn", "evidence": ["D99:1"], "category": 4},
    ]
    return {"sample_id": sample, "conversation": talk, "qa": qa}


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_conversation("c1", 3), _conversation("c2", 2)]))
    return path


@pytest.fixture
def config(tmp_path: Path, locomo_file: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    monkeypatch.setattr(recall_bench, "minilm", lambda _cache, **_: None)
    monkeypatch.setattr(recall_latency, "minilm", lambda _cache, **_: None)
    # The extra's absence, not the variable, says why the latency store takes hash vectors.
    monkeypatch.delenv("ENGRAM_EMBEDDER", raising=False)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    sizes = dataclasses.replace(QUICK, recall_memories=300, rebuild_texts=20)
    return Config("recall", True, 1, None, "", str(scratch), sizes, 7, str(locomo_file), None)


def test_evidence_ids_are_cleaned_as_the_dataset_notes_ask() -> None:
    assert locomo.clean_ids(["D8:6; D9:17", "D:11:26", "D30:05", "D", ""]) == [
        "D8:6",
        "D9:17",
        "D11:26",
        "D30:5",
    ]


def test_session_times_parse_and_bad_ones_are_named() -> None:
    assert locomo.parse_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    with pytest.raises(locomo.LocomoError, match="unreadable session time 'yesterday'"):
        locomo.parse_time("yesterday")


def test_load_keeps_answerable_questions_with_known_evidence(locomo_file: Path) -> None:
    first, second = locomo.load(locomo_file)
    assert first.sample_id == "c1"
    assert len(first.turns) == 18
    assert first.turns[0].text.startswith("Ana: On day 1, I adopted a puppy")
    assert first.turns[0].text.endswith("[shares a photo: a photo of a beagle puppy]")
    assert first.turns[6].at == datetime(2023, 5, 2, 13, 56, tzinfo=UTC)
    assert [(q.category, sorted(q.evidence)) for q in first.questions] == [
        (4, ["D1:1"]),
        (1, ["D1:6", "D2:6"]),
        (2, ["D1:4"]),
        (3, ["D1:3"]),
    ]
    assert first.skipped == 2  # no evidence, and an id that names no turn
    assert sorted(second.questions[1].evidence) == ["D1:6", "D2:6"]


def test_a_missing_or_malformed_file_gets_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(locomo.LocomoError, match="LoCoMo data not found"):
        locomo.load(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"sample_id": "x"}]))
    with pytest.raises(locomo.LocomoError, match="not in the LoCoMo format"):
        locomo.load(bad)


def test_synthetic_memories_are_distinct_seeded_and_bounded(locomo_file: Path) -> None:
    conversations = locomo.load(locomo_file)
    texts = locomo.synthetic_memories(conversations, 200, seed=3)
    assert len(set(texts)) == 200
    assert texts == locomo.synthetic_memories(conversations, 200, seed=3)
    assert texts != locomo.synthetic_memories(conversations, 200, seed=4)
    with pytest.raises(locomo.LocomoError, match="too small for 100,000 distinct memories"):
        locomo.synthetic_memories(conversations, 100_000, seed=3)


def test_quality_scores_every_mode_against_rank_bm25(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    scores = recall_bench.evaluate(config)
    reference = scores.mean(recall_report.REFERENCE, 10)
    lexical = scores.mean("lexical", 10)
    assert reference is not None
    assert lexical is not None
    # Same texts, same tokens: engram's lexical path (Porter stemming, bloom over episode
    # neighbours; ADR 0025) finds at least what rank_bm25 finds here.
    assert lexical >= reference
    assert lexical > 0.5
    assert scores.mean("minilm", 10) is None  # switched off in this test
    assert scores.mean("lexical", 20, category=4) is not None
    figures = recall_bench.quality(config)
    out = capsys.readouterr().out
    assert "LoCoMo evidence recall" in out
    assert "rank_bm25" in out
    by_name = {f.name: f for f in figures}
    assert by_name["LoCoMo recall@10, lexical"].verdict == "info"
    assert by_name["LoCoMo recall@10, hybrid (minilm)"].verdict == "SKIP"
    # Without MiniLM the headline is the best mode scored; its figure carries the interval.
    headline = recall_bench.headline_mode(scores)
    best = max(scores.mean(m.name, 10) or 0.0 for m in recall_bench.MODES)
    assert headline is not None
    assert scores.mean(headline, 10) == best
    assert "95% CI" in by_name[f"LoCoMo recall@10, {headline}"].note
    assert f"seed {config.seed}" in out


def test_each_conversation_gets_its_row(config: Config) -> None:
    scores = recall_bench.evaluate(config)
    rows = recall_report.conversation_rows(scores, "hybrid (hash)")
    assert [(r["conversation"], r["questions"]) for r in rows] == [("c1", 4), ("c2", 4)]
    for row in rows:
        ours = scores.by_question("hybrid (hash)", 10)
        theirs = scores.by_question(recall_report.REFERENCE, 10)
        mine = [v for (c, _), v in ours.items() if c == row["conversation"]]
        reference = [v for (c, _), v in theirs.items() if c == row["conversation"]]
        assert row["hybrid (hash)"] == pytest.approx(sum(mine) / 4)
        assert row[recall_report.REFERENCE] == pytest.approx(sum(reference) / 4)
        assert row["ratio"] == pytest.approx(row["hybrid (hash)"] / row["rank_bm25"])
    table = recall_report.conversation_table(scores, "hybrid (hash)")
    assert [line.split()[0] for line in table.splitlines()] == ["conversation", "c1", "c2"]


def _scores(engram: list[float], reference: list[float]) -> recall_report.Scores:
    scores = recall_report.Scores()
    for i, (ours, theirs) in enumerate(zip(engram, reference, strict=True)):
        conversation = f"c{i % 3}"
        scores.add("hybrid (minilm)", 10, recall_report.Score(conversation, i, 1 + i % 4, ours))
        scores.add(
            recall_report.REFERENCE, 10, recall_report.Score(conversation, i, 1 + i % 4, theirs)
        )
    return scores


def test_the_bootstrap_interval_brackets_the_ratio_and_repeats_with_its_seed() -> None:
    rng = random.Random(11)
    reference = [rng.choice([0.0, 0.5, 1.0]) for _ in range(300)]
    engram = [min(1.0, v + rng.choice([0.0, 0.0, 0.5])) for v in reference]
    scores = _scores(engram, reference)
    interval = recall_report.bootstrap(scores, "hybrid (minilm)", seed=5)
    assert interval is not None
    assert interval.ratio == pytest.approx(sum(engram) / sum(reference))
    assert interval.ratio_low < interval.ratio < interval.ratio_high
    assert interval.ratio_low > 1.0  # engram never finds less here, and often more
    assert interval.difference_low < interval.difference < interval.difference_high
    gaps = [e - r for e, r in zip(engram, reference, strict=True)]
    assert interval.better == sum(g > 0 for g in gaps)
    assert interval.worse == 0
    assert interval.better + interval.tied == interval.questions == 300
    assert (interval.resamples, interval.seed) == (recall_report.RESAMPLES, 5)
    assert recall_report.bootstrap(scores, "hybrid (minilm)", seed=5) == interval
    other = recall_report.bootstrap(scores, "hybrid (minilm)", seed=6)
    assert other is not None
    assert (other.ratio_low, other.ratio_high) != (interval.ratio_low, interval.ratio_high)
    assert other.ratio == interval.ratio


def test_the_bootstrap_of_a_scaled_reference_has_no_spread() -> None:
    reference = [0.1 * (i % 5) for i in range(50)]
    scores = _scores([2 * v for v in reference], reference)
    interval = recall_report.bootstrap(scores, "hybrid (minilm)", seed=1, resamples=200)
    assert interval is not None
    # The ratio of means is the same in every resample: the interval is a point.
    assert interval.ratio_low == pytest.approx(2.0)
    assert interval.ratio_high == pytest.approx(2.0)
    assert recall_report.bootstrap(_scores([0.5], [0.0]), "hybrid (minilm)", seed=1) is None
    assert recall_report.bootstrap(scores, "minilm", seed=1) is None


def test_only_quality_runs_the_quality_part_alone(
    config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json = tmp_path / "out.json"
    code = bench.run(
        suite="recall",
        only=["quality"],
        repeat=1,
        json_path=str(out_json),
        scratch_dir=str(tmp_path / "bench"),
        locomo=config.locomo,
        embedding_cache="none",
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "recall p50" not in out
    assert "semantic rebuild" not in out
    assert f"seed {bench.SEED}" in out
    assert "recall figures: measured once" in out
    assert "engram is faster" not in out  # no timed figure ran
    figures = json.loads(out_json.read_text())["figures"]
    assert all(f["name"].startswith("LoCoMo recall@10, ") for f in figures)
    detailed = [f for f in figures if "details" in f]
    assert len(detailed) == 1
    details = detailed[0]["details"]
    headline = details["headline_mode"]
    assert detailed[0]["name"] == f"LoCoMo recall@10, {headline}"
    assert [row["conversation"] for row in details["conversations"]] == ["c1", "c2"]
    assert set(details["modes"]) == {
        "rank_bm25",
        "lexical",
        "hash",
        "hybrid (hash)",
        "lexical, no pruning",
        "lexical, 2% pruning",
        "lexical, unicode61",
    }
    # The ablation sets each lever's mode beside the one without it (MiniLM's are skipped).
    levers = {(row["lever"], row["k"]): row for row in details["ablation"]}
    assert set(levers) == {
        (lever, k)
        for lever in (
            "pruning (lexical)",
            "budget pruning (lexical; vs 2% share)",
            "porter stems (lexical)",
        )
        for k in (5, 10, 20)
    }
    row = levers["pruning (lexical)", 10]
    assert row["on"] == details["modes"]["lexical"]["recall"]["@10"]
    assert row["off"] == details["modes"]["lexical, no pruning"]["recall"]["@10"]
    row = levers["porter stems (lexical)", 10]
    assert row["off"] == details["modes"]["lexical, unicode61"]["recall"]["@10"]
    assert "lever" in out
    assert details["modes"]["lexical"]["categories"]["single-hop"]["@20"] is not None
    interval = details["interval"]
    assert interval["ratio"] == pytest.approx(detailed[0]["ratio"])
    assert interval["ratio_low"] <= interval["ratio"] <= interval["ratio_high"]
    assert interval["seed"] == bench.SEED
    assert interval["questions"] == 8


def test_only_takes_comma_lists_and_names_what_is_wrong() -> None:
    assert bench.recall_parts(None) == ("quality", "beam", "latency", "rebuild")
    assert bench.recall_parts(["rebuild,quality"]) == ("quality", "rebuild")
    assert bench.recall_parts(["latency", " quality "]) == ("quality", "latency")
    assert bench.recall_parts("rebuild") == ("rebuild",)
    assert bench.recall_parts([" , "]) == ("quality", "beam", "latency", "rebuild")
    with pytest.raises(ValueError, match="unknown recall part 'speed'"):
        bench.recall_parts(["quality,speed"])
    with pytest.raises(ValueError, match="parts of the recall suite, not of suite 'ledger'"):
        bench.run(suite="ledger", only=["quality"])
    result = CliRunner().invoke(cli, ["bench", "--only", "quality"])
    assert result.exit_code == 2
    assert "pass --suite recall" in result.output
    result = CliRunner().invoke(cli, ["bench", "--suite", "recall", "--only", "fast"])
    assert result.exit_code == 2
    assert "unknown recall part 'fast'" in result.output


def test_latency_figures_compare_recall_with_the_raw_calls(config: Config) -> None:
    figures = {f.name: f for f in recall_latency.latency(config)}
    p50 = figures["recall p50, 300 memories"]
    assert p50.unit == "ms"
    assert p50.engram is not None
    assert p50.reference is not None
    assert p50.engram > 0
    assert p50.reference > 0
    assert figures["  raw FTS5 statement p50, 300"].engram is not None
    assert figures["  raw FAISS search p50, 300"].engram is not None
    built = figures["observe into all indexes, 300 memories"]
    steps = [
        figures[f"{step}, 300 memories"].engram
        for step in (
            "observe into the ledger (batches of 1,000)",
            "catch-up, salience + lexical",
            "semantic index built from nothing (hash vectors (the 'embeddings' extra is absent),"
            " vectors from the cache)",
        )
    ]
    # The whole build's rate is the harmonic combination of its steps' rates.
    assert built.engram == pytest.approx(1 / sum(1 / rate for rate in steps if rate))
    hnsw = figures["HNSW recall@10 vs exact search"]
    assert hnsw.engram is not None
    assert 0.9 <= hnsw.engram <= 1.0
    assert figures["query embedding, one text"].verdict == "info"


def test_lower_is_better_units_invert_the_ratio() -> None:
    time = Figure("t", "ms", "ref", 0.5, [4.0], [2.0])
    assert time.ratio == pytest.approx(0.5)
    assert time.verdict == "PASS"
    found = Figure("r", "recall", "ref", 1.1, [0.6], [0.5])
    assert found.ratio == pytest.approx(1.2)
    assert found.verdict == "PASS"


def test_the_raw_reference_is_the_statement_the_pruned_search_runs(tmp_path: Path) -> None:
    from engram.ledger import Ledger, default_registry
    from engram.projections import lexical
    from engram.projections.engine import ProjectionEngine
    from engram.projections.lexical import LexicalIndex
    from engram.projections.lexical import read as lexical_read

    texts = [
        f"note {i} about the weather" + (" and a rare comet" if i % 9 == 0 else "")
        for i in range(200)
    ]
    with Ledger.open(str(tmp_path / "l.db"), default_registry()) as ledger:
        recall_scale.append(ledger, texts)
        with ProjectionEngine(ledger, str(tmp_path / "s"), [LexicalIndex()]) as engine:
            engine.catch_up()
            with engine.read() as conn:
                terms = lexical.terms(conn, "the rare comet weather")
                assert terms.pruned
                as_of = 2**62
                raw = conn.execute(
                    recall_scale.pool_statement(conn),
                    ("agent-1", as_of, as_of, terms.expression, 40),
                ).fetchall()
                table = lexical_read._table(conn)
                visible, shown = lexical_read._visible("agent-1", None, as_of)
                pool = lexical_read._pool(conn, table, terms.expression or "", 10, visible, shown)
    assert [row[:6] for row in raw if row[6]] == pool
    assert len(pool) == 200 // 9 + 1 - sum(
        1 for i in range(0, 200, 9) if i % 10 == 0 and i % 8 != 1
    )


def test_the_rebuild_at_scale_reports_its_rate_and_peak_memory(config: Config) -> None:
    rate, peak = recall_latency.rebuild_at_scale(config)
    assert rate.unit == "texts/s"
    assert rate.engram is not None
    assert rate.engram > 0
    assert "300 of 300 texts embedded" in rate.note
    assert peak.unit == "MiB"
    assert peak.engram is not None
    assert peak.engram > 10


def test_peak_memory_sees_what_a_block_holds() -> None:
    with recall_scale.PeakMemory() as memory:
        block = bytearray(200 * 2**20)
        block[::4096] = b"x" * len(block[::4096])  # touch every page
        time.sleep(0.2)
        del block
    assert memory.peak - memory.before > 150


def test_a_scale_that_is_not_known_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown scale '2m'"):
        bench.run(suite="recall", scale="2m")
    result = CliRunner().invoke(cli, ["bench", "--suite", "recall", "--scale", "2m"])
    assert result.exit_code == 2
    assert "2m" in result.output


def test_a_cached_store_is_reused_and_a_different_one_rebuilt(
    config: Config, tmp_path: Path
) -> None:
    from engram.projections.embedding import HashEmbedder

    texts = [f"memory number {i} about the river walk" for i in range(60)]
    directory = str(tmp_path / "stores" / "latency-60-hash")
    (tmp_path / "stores").mkdir()
    with recall_scale.built(config, directory, texts, HashEmbedder(), "hash") as (first, ledger, _):
        assert not first.reused
        assert ledger.head() == 60
    with recall_scale.built(config, directory, texts, HashEmbedder(), "hash") as (again, ledger, e):
        assert again.reused
        assert again.seconds == first.seconds
        assert ledger.head() == 60
        with e.read() as conn:
            assert len(lexical_texts(conn)) == 60
        assert "recorded when the cached store was built" in again.figures("hash")[-1].note
    other = [*texts[:-1], "a different last memory"]
    with recall_scale.built(config, directory, other, HashEmbedder(), "hash") as (fresh, ledger, e):
        assert not fresh.reused
        assert ledger.head() == 60
        with e.read() as conn:
            assert "a different last memory" in lexical_texts(conn).values()


def lexical_texts(conn: object) -> dict[int, str]:
    from engram.projections import lexical

    return lexical.texts(conn, range(1, 61))  # type: ignore[arg-type]


def _beam_file(path: Path) -> Path:
    messages = [
        {"id": i, "role": ("user", "assistant")[i % 2], "content": f"{text} " + "filler " * 150}
        for i, (_, text) in enumerate(TURNS)
    ]
    chat = {
        "chat_id": "100K-1",
        "number": 1,
        "file": "chat.json",
        "topic": {"category": "General", "title": "pets and music"},
        "batches": [
            {"batch": 1, "time_anchor": "March-15-2024", "messages": messages[:3]},
            {"batch": 2, "time_anchor": "April-02-2024", "messages": messages[3:]},
        ],
        "questions": [
            {
                "category": "information_extraction",
                "question": "What is the puppy's name?",
                "source_chat_ids": [0],
            },
            {
                "category": "knowledge_update",
                "question": "Who teaches the violin?",
                "source_chat_ids": {"original_info": [4], "updated_info": [5, 99]},
            },
            {"category": "abstention", "question": "What car?", "source_chat_ids": None},
            {"category": "preference_following", "question": "Any?", "source_chat_ids": []},
        ],
    }
    document = {"format": "engram-beam-trimmed/1", "chats": [chat]}
    path.write_text(json.dumps(document))
    return path


def test_beam_chats_load_as_dated_messages_with_the_union_of_their_evidence(
    tmp_path: Path,
) -> None:
    from engram.bench import beam

    (chat,) = beam.load(_beam_file(tmp_path / "beam.json"))
    assert len(chat.turns) == 6
    assert chat.turns[1].text.startswith("assistant: That is lovely!")
    assert chat.turns[3].at == datetime(2024, 4, 2, tzinfo=UTC)
    assert [(beam.CATEGORIES[q.category], sorted(q.evidence)) for q in chat.questions] == [
        ("information_extraction", ["0"]),
        ("knowledge_update", ["4", "5"]),  # a dict's lists joined, an unknown id dropped
    ]
    assert chat.skipped == 2  # abstention (null) and an empty list
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "other"}))
    with pytest.raises(beam.BeamError, match="not an engram-beam-trimmed file"):
        beam.load(bad)
    with pytest.raises(beam.BeamError, match="BEAM data not found"):
        beam.load(tmp_path / "absent.json")


def test_the_beam_bench_scores_every_mode_per_category_and_reports_indexing(
    config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram.bench import beam_bench

    config = dataclasses.replace(config, beam=str(_beam_file(tmp_path / "beam.json")))
    figures = beam_bench.quality(config)
    out = capsys.readouterr().out
    assert "BEAM evidence recall" in out
    assert "knowledge_update@10" in out
    assert "abstention@10" not in out  # no question of it has evidence
    assert "2 questions with evidence, 2 without evidence skipped" in out
    by_name = {f.name: f for f in figures}
    assert by_name["BEAM recall@10, lexical"].engram is not None
    assert by_name["BEAM indexing"].engram is not None
    assert "items/s" in by_name["BEAM indexing"].note


def test_modes_choose_what_the_quality_parts_run_and_unknown_ones_are_named(
    config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram.bench import beam_bench

    config = dataclasses.replace(
        config,
        beam=str(_beam_file(tmp_path / "beam.json")),
        modes=("lexical", "lexical, 2% pruning"),
    )
    figures = beam_bench.quality(config)
    out = capsys.readouterr().out
    names = {f.name for f in figures}
    assert names == {"BEAM recall@10, lexical", "BEAM indexing"}
    assert "lexical, 2% pruning" in out  # an ablation mode, in the tables
    assert "hybrid (hash)" not in out
    with pytest.raises(ValueError, match=r"unknown mode\(s\) \['fast'\]"):
        recall_bench.quality(dataclasses.replace(config, modes=("fast",)))
