"""Forgetting end to end (ADR 0039): recall paths, projection files, rebuilds, audit, PG, CLI."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from engram.agents.context import build_context
from engram.agents.memory import AgentMemory
from engram.agents.scars import Scars
from engram.cli import main
from engram.ledger import FORGOTTEN, KeyStore, Ledger, NewEvent, Sealer, open_audit
from engram.ledger.catalog import KINDS, MemoryReflected
from engram.projections import reflections as reflection_rows
from engram.projections.concepts import Concepts
from engram.projections.embedding import HashEmbedder
from engram.projections.engine import ProjectionEngine
from engram.projections.inbox import Inbox
from engram.projections.lexical import LexicalIndex
from engram.projections.reflections import Reflections
from engram.projections.rules import RuleBook
from engram.projections.salience import SalienceIndex
from engram.projections.scars import ScarsTable
from engram.projections.semantic import SemanticIndex, VectorSearcher
from engram.projections.suggestions import SuggestionQueue

SECRET = "quokka"  # a word nothing else in these tests says
NAMES = ("salience", "lexical", "semantic", "scars", "reflections", "suggestions")


class Sealed:
    """A sealed ledger with the projections that hold personal text, and real FAISS search."""

    def __init__(self, root: Path, target: str | None = None, pg_schema: str = "engram") -> None:
        self.root = root
        self.ledger = Ledger.open(
            target or str(root / "ledger.db"),
            durability="fast",
            pg_schema=pg_schema,
            sealer=Sealer(KeyStore(root / "keys.db")),
        )
        self.embedder = HashEmbedder(dimension=64)
        self.engine = self.open_engine(root / "store")

    def open_engine(self, store: Path) -> ProjectionEngine:
        return ProjectionEngine(
            self.ledger,
            store,
            [
                SalienceIndex(),
                LexicalIndex(),
                SemanticIndex(self.embedder),
                ScarsTable(),
                Reflections(),
                SuggestionQueue(),
                Inbox(),  # the three below: what building a context reads
                Concepts(),
                RuleBook(),
            ],
        )

    def agent(self, name: str) -> AgentMemory:
        searcher = VectorSearcher(self.root / "store", 64, str(self.embedder.fingerprint))
        return AgentMemory(
            name, self.ledger, self.engine, embedder=self.embedder, searcher=searcher
        )

    def close(self) -> None:
        self.engine.close()
        self.ledger.close()


@pytest.fixture
def sealed(tmp_path: Path) -> Iterator[Sealed]:
    s = Sealed(tmp_path)
    yield s
    s.close()


def fill(s: Sealed) -> dict[str, int]:
    alice, bob = s.agent("alice"), s.agent("bob")
    found = {
        "memory": alice.observe(f"The {SECRET} escaped from the database outage room"),
        "private": alice.observe(f"my {SECRET} diary", visibility="private"),
        "bob": bob.observe("Bob fixed the database outage"),
        "scar": Scars("alice", s.ledger, s.engine).record(
            "failure", f"the {SECRET} deploy failed", f"pin the {SECRET} version", importance=5
        ),
    }
    evidence = next(s.ledger.read(found["memory"] - 1, limit=1)).id
    found["reflection"] = s.ledger.append(
        NewEvent.of(
            MemoryReflected(
                agent="alice", text=f"{SECRET}s like outages", evidence=[evidence], depth=1
            ),
            stream="agent:alice",
            actor="alice",
        )
    )[0]
    assert alice.recall(f"{SECRET} outage", 5).recorded_at is not None  # a sealed recall query
    return found


def store_bytes(store: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(store.iterdir()) if p.is_file())


def test_forget_empties_every_recall_path_and_the_projection_files(sealed: Sealed) -> None:
    found = fill(sealed)
    alice, bob = sealed.agent("alice"), sealed.agent("bob")
    for path in ("lexical", "semantic"):
        hits = alice.recall(SECRET, 10, paths=(path,), record=False)
        assert {found["memory"], found["private"]} <= {r.event.position for r in hits.items}
    sealed.engine.catch_up()
    assert SECRET.encode() in store_bytes(sealed.root / "store")  # the test can fail

    sealed.ledger.forget("alice", reason="erasure request")
    sealed.engine.catch_up()
    for who in (alice, bob):
        for path in ("lexical", "semantic"):
            hits = who.recall(f"{SECRET} database outage", 10, paths=(path,), record=False)
            assert all(r.event.payload.agent == "bob" for r in hits.items), path
    with sealed.engine.read() as conn:
        for (table,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
        ).fetchall():
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                assert SECRET not in repr(row), (table, row)
    sealed.engine.close()
    assert SECRET.encode() not in store_bytes(sealed.root / "store")  # nor in freed pages
    sealed.engine = sealed.open_engine(sealed.root / "store")
    assert sealed.ledger.verify().ok


def test_a_rebuild_after_the_forget_never_sees_the_text(sealed: Sealed) -> None:
    fill(sealed)
    sealed.engine.catch_up()
    sealed.ledger.forget("alice")
    sealed.engine.catch_up()
    incremental = {name: sealed.engine.digest(name) for name in NAMES}
    fresh = sealed.open_engine(sealed.root / "fresh")
    try:
        fresh.catch_up()
        assert {name: fresh.digest(name) for name in NAMES} == incremental
    finally:
        fresh.close()
    assert SECRET.encode() not in store_bytes(sealed.root / "fresh")
    texts = [
        getattr(e.payload, "text", None) for e in sealed.ledger.read(kinds=["memory.observed"])
    ]
    assert texts == [FORGOTTEN, FORGOTTEN, "Bob fixed the database outage"]


def test_the_audit_shows_sealed_and_forgotten_fields(sealed: Sealed) -> None:
    found = fill(sealed)
    sealed.ledger.forget("alice")
    bob = sealed.agent("bob")
    bob.observe(f"bob says {SECRET} once more")  # after the forget: bob's key lives
    with open_audit(sealed.ledger.audit_target(), KINDS) as session:
        rows = session.query(
            "SELECT position, agent, text FROM memory_observed ORDER BY position"
        ).rows
        scars = session.query("SELECT what, lesson FROM scar_recorded").rows
        queries = session.query("SELECT agent, query FROM memory_recalled").rows
        raw = session.query("SELECT payload FROM events").rows
    assert rows[:3] == [
        (found["memory"], "alice", FORGOTTEN),
        (found["private"], "alice", FORGOTTEN),
        (found["bob"], "bob", "[sealed]"),
    ]
    assert rows[3][1:] == ("bob", "[sealed]")
    assert scars == [(FORGOTTEN, FORGOTTEN)]
    assert queries == [("alice", FORGOTTEN)]
    assert not any(SECRET in str(r) for r in raw)


def test_a_saved_context_quotes_by_position_and_seals_its_query(sealed: Sealed) -> None:
    """The frames bob saved showed alice's memory: forgetting alice forgets that quote too."""
    found = fill(sealed)
    context = build_context(sealed.agent("bob"), f"{SECRET} database outage", task=SECRET)
    shown = [e["pos"] for e in context.frames["episodic"]]  # type: ignore[union-attr]
    assert found["memory"] in shown  # bob saw alice's public memory, text and all
    with open_audit(sealed.ledger.audit_target(), KINDS) as session:
        raw = session.query("SELECT payload FROM events").rows
        saved = session.query("SELECT agent, query, task FROM context_saved").rows
    assert not any(SECRET in str(r) for r in raw)
    assert saved == [("bob", "[sealed]", "[sealed]")]
    sealed.ledger.forget("alice")
    (record,) = sealed.ledger.read(kinds=["context.saved"])
    assert (record.payload.query, record.payload.task) == (f"{SECRET} database outage", SECRET)
    quoted = sealed.ledger.get([e["pos"] for e in record.payload.frames["episodic"]])
    texts = {e.payload.agent: e.payload.text for e in quoted if e.kind == "memory.observed"}
    assert texts["alice"] == FORGOTTEN
    assert texts["bob"] == "Bob fixed the database outage"


def test_forget_on_postgresql(tmp_path: Path, pg_dsn: str, pg_schema: str) -> None:
    s = Sealed(tmp_path, pg_dsn, pg_schema)
    try:
        found = fill(s)
        s.engine.catch_up()
        s.ledger.forget("alice")
        s.engine.catch_up()
        assert s.ledger.verify().ok
        event = next(s.ledger.read(found["memory"] - 1, limit=1))
        assert event.payload.text == FORGOTTEN
        hits = s.agent("bob").recall(SECRET, 10, paths=("lexical",), record=False)
        assert [r.event.position for r in hits.items] == []
        with open_audit(s.ledger.audit_target(), KINDS) as session:
            texts = session.query("SELECT agent, text FROM memory_observed ORDER BY position").rows
        assert texts == [("alice", FORGOTTEN), ("alice", FORGOTTEN), ("bob", "[sealed]")]
    finally:
        s.close()


# -- the command line ------------------------------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], config: Path, *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(["--config", str(config), *argv], out=out)
    return code, out.getvalue(), capsys.readouterr().err


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "engram.toml"
    path.write_text(f'ledger = "{tmp_path / "l.db"}"\nkeys = "{tmp_path / "keys.db"}"\n')
    return path


def test_an_appended_erasure_forgets_as_forget_does(
    capsys: pytest.CaptureFixture[str], config: Path, tmp_path: Path
) -> None:
    # ADR 0138: a subject.forgotten given to `engram append` destroyed the keys, but bob's
    # reflection in alice's words stayed served and the embedding cache kept her texts.
    assert cli(capsys, config, "observe", "alice", f"the {SECRET} plan is ours")[0] == 0
    assert cli(capsys, config, "observe", "bob", "bob joined the planning team")[0] == 0
    ledger = Ledger.open(str(tmp_path / "l.db"), sealer=Sealer(KeyStore(tmp_path / "keys.db")))
    with ledger:
        drawn = _reflected(ledger, "bob", f"alice's {SECRET} plan matters", [1], 1)
    cache = tmp_path / "l.db.projections" / "embeddings.db"
    assert cli(capsys, config, "recall", "bob", SECRET, "--scope", "reflections")[0] == 0
    assert SECRET.encode() in store_bytes(cache.parent)  # the test can fail
    erasure = {"stream": "subjects", "kind": "subject.forgotten",
               "payload": {"subject": "alice", "reason": "request 9"}}  # fmt: skip
    lines = tmp_path / "erase.jsonl"
    lines.write_text(json.dumps(erasure) + "\n")
    code, out, err = cli(capsys, config, "append", str(lines))
    assert code == 0, err
    assert "appended 1 event, position" in out
    code, out, _ = cli(capsys, config, "log", "--kind", "reflection.retracted", "--format", "jsonl")
    assert json.loads(out)["payload"]["positions"] == [drawn]
    code, out, _ = cli(capsys, config, "recall", "bob", SECRET, "--scope", "reflections",
                       "--min-score", "0", "--format", "jsonl")  # fmt: skip
    assert code == 0
    assert SECRET not in out
    assert SECRET.encode() not in store_bytes(cache.parent)


def test_cli_forget_keys_log_and_sql(
    capsys: pytest.CaptureFixture[str], config: Path, tmp_path: Path
) -> None:
    assert cli(capsys, config, "init")[0] == 0
    assert cli(capsys, config, "observe", "alice", f"the {SECRET} plan")[0] == 0
    assert cli(capsys, config, "recall", "alice", f"{SECRET} plan")[0] == 0
    code, out, _ = cli(capsys, config, "log", "--kind", "memory.recalled", "--format", "jsonl")
    assert code == 0
    assert json.loads(out)["payload"]["query"] == "[private]"
    code, out, _ = cli(
        capsys, config, "log", "--as", "alice", "--kind", "memory.recalled", "--format", "jsonl"
    )
    assert json.loads(out)["payload"]["query"] == f"{SECRET} plan"

    code, _, err = cli(capsys, config, "forget", "alice")  # no terminal, no --yes
    assert code == 2
    assert "--yes" in err
    code, out, _ = cli(capsys, config, "keys", "--format", "json")
    assert json.loads(out) == [{"subject": "alice", "keys": 1, "forgotten": 0, "live": True}]

    cache = tmp_path / "l.db.projections" / "embeddings.db"
    assert SECRET.encode() in store_bytes(cache.parent)  # the test can fail
    with sqlite3.connect(cache) as conn:
        keyed = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
    code, out, _ = cli(capsys, config, "forget", "alice", "--reason", "request 12", "--yes")
    assert code == 0
    # The memory's text; the query was never cached (ADR 0114).
    assert "1 key(s) destroyed, 1 cached vector(s) dropped" in out
    with sqlite3.connect(cache) as conn:
        assert conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] == keyed - 1
    assert SECRET.encode() not in store_bytes(cache.parent)  # the indexes caught up
    code, out, _ = cli(capsys, config, "log", "--as", "alice", "--format", "jsonl")
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["payload"].get("text") for r in records if r["kind"] == "memory.observed"] == [
        FORGOTTEN
    ]
    assert records[-1]["kind"] == "subject.forgotten"
    assert records[-1]["payload"] == {"subject": "alice", "reason": "request 12"}
    assert SECRET not in out
    code, out, _ = cli(
        capsys, config, "sql", "SELECT text FROM memory_observed", "--format", "json"
    )
    assert json.loads(out) == [{"text": FORGOTTEN}]
    assert cli(capsys, config, "verify")[0] == 0
    code, out, _ = cli(capsys, config, "keys", "--format", "json")
    assert json.loads(out) == [{"subject": "alice", "keys": 1, "forgotten": 1, "live": False}]


def test_cli_refuses_a_subject_the_key_store_never_held_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], config: Path
) -> None:
    assert cli(capsys, config, "observe", "alice", f"the {SECRET} plan")[0] == 0
    code, out, _ = cli(capsys, config, "log", "--format", "jsonl")
    events = out.count("\n")
    code, out, err = cli(capsys, config, "forget", "Alice", "--yes")  # the name is alice
    assert code == 1
    assert "holds no key of 'Alice'" in err
    assert "did you mean 'alice'?" in err
    assert "nothing was forgotten" in err
    code, out, _ = cli(capsys, config, "log", "--format", "jsonl")
    assert out.count("\n") == events  # no subject.forgotten appended
    code, out, _ = cli(capsys, config, "keys", "--format", "json")
    assert json.loads(out)[0]["live"] is True
    code, out, err = cli(capsys, config, "forget", "Alice", "--yes", "--force")
    assert code == 0
    assert "holds no key of 'Alice'" in err  # said, and the event appended as asked
    code, out, _ = cli(capsys, config, "log", "--kind", "subject.forgotten", "--format", "jsonl")
    assert json.loads(out)["payload"]["subject"] == "Alice"


def test_cli_forgets_a_blank_subject_that_has_keys(
    capsys: pytest.CaptureFixture[str], config: Path
) -> None:
    # A name of blanks is a name the ledger accepts (observe refuses it; a raw append does
    # not): its keys must be destroyable too.
    line = json.dumps({"stream": "agent:blank", "kind": "memory.observed", "actor": "alice",
                       "payload": {"agent": " ", "text": f"the {SECRET} plan"}})  # fmt: skip
    source = config.parent / "events.jsonl"
    source.write_text(line + "\n")
    assert cli(capsys, config, "append", str(source))[0] == 0
    code, out, err = cli(capsys, config, "forget", " ", "--yes")
    assert code == 0, err
    assert "1 key(s) destroyed" in out
    code, out, _ = cli(capsys, config, "recall", "bob", f"{SECRET} plan", "--format", "json")
    assert SECRET not in out
    code, _, err = cli(capsys, config, "forget", "", "--yes")
    assert code == 2
    assert "must not be empty" in err


def test_cli_errors_for_a_bad_or_missing_key_store(
    capsys: pytest.CaptureFixture[str], config: Path, tmp_path: Path
) -> None:
    assert cli(capsys, config, "init")[0] == 0
    os.chmod(tmp_path / "keys.db", 0o644)
    code, _, err = cli(capsys, config, "log")
    assert code == 1
    assert "readable by others" in err
    assert "chmod 600" in err
    os.chmod(tmp_path / "keys.db", 0o600)
    plain = tmp_path / "plain.toml"
    plain.write_text(f'ledger = "{tmp_path / "l.db"}"\nseal = false\n')
    code, _, err = cli(capsys, plain, "forget", "alice", "--yes")
    assert code == 2
    assert "seals no personal fields" in err


def test_the_sealing_bench_measures_both_sides(tmp_path: Path) -> None:
    from engram.bench import shred_bench
    from engram.bench.common import QUICK, Config

    sizes = dataclasses.replace(QUICK, batch_events=500, replay_events=2_000)
    config = Config("ledger", True, 1, None, "", str(tmp_path), sizes, 7)
    figures = shred_bench.sealing(config)
    assert [f.name.split(",")[0] for f in figures] == [
        "SQLite append sealed vs plain",
        "SQLite replay sealed vs plain",
    ] * 2
    for figure in figures:
        assert len(figure.engram_samples) == len(figure.reference_samples) == 1
        assert figure.ratio is not None
        assert figure.ratio > 0


def test_forget_names_a_long_memory_s_passages_among_the_texts_to_drop(
    capsys: pytest.CaptureFixture[str], config: Path, tmp_path: Path
) -> None:
    # A store built with passages (ADR 0054) caches a vector per passage: forgetting must
    # drop them with the text's.
    from engram.ledger import default_registry
    from engram.projections.semantic import passages
    from engram.runtime import _personal_texts

    text = f"the {SECRET} plan " + " ".join(f"step{i} of the long design note" for i in range(60))
    assert len(passages(text)) >= 2
    assert cli(capsys, config, "init")[0] == 0
    assert cli(capsys, config, "observe", "alice", text)[0] == 0
    sealer = Sealer(KeyStore(tmp_path / "keys.db"))
    with Ledger.open(str(tmp_path / "l.db"), default_registry(), sealer=sealer) as ledger:
        texts = _personal_texts(ledger, "alice")
    assert text in texts
    assert set(passages(text)) <= set(texts)


def test_forget_leaves_no_text_on_disk_while_another_process_holds_the_store(
    tmp_path: Path,
) -> None:
    # A daemon, the hub or an MCP server keeps the store open: SQLite then never checkpoints
    # its write-ahead log on close, and the vector index file was written only at the next
    # recall. Forgetting now does both before it returns.
    import multiprocessing

    import engram

    ledger = str(tmp_path / "l.db")
    with engram.open_memory(ledger) as memory:
        memory.agent("alice").observe(f"the {SECRET} plan for my clinic visit")
        memory.agent("bob").observe("bob's own note")
        assert memory.agent("bob").recall("clinic visit", record=False).items
    store = Path(ledger + ".projections")
    spawn = multiprocessing.get_context("spawn")
    ready, done = spawn.Event(), None
    holder = spawn.Process(target=_hold_store, args=(ledger, ready, str(tmp_path / "release")))
    holder.start()
    try:
        assert ready.wait(60), "the holding process did not open the store"
        with engram.open_memory(ledger) as memory:
            memory.forget("alice")
            on_disk = store_bytes(store)
            assert SECRET.encode() not in on_disk  # the test can fail: the WAL held it
            (index,) = store.glob("semantic.g*.faiss")
            meta = json.loads(index.with_suffix(".json").read_text())
            assert meta["count"] == 1  # bob's vector only
    finally:
        (tmp_path / "release").touch()
        holder.join(60)
        done = holder.exitcode
    assert done == 0


def _hold_store(ledger: str, ready: object, release: str) -> None:
    import time

    import engram

    with engram.open_memory(ledger) as memory:
        memory.agent("bob").recall("clinic visit", record=False)
        ready.set()  # type: ignore[attr-defined]
        while not os.path.exists(release):
            time.sleep(0.05)


def test_a_pack_export_leaves_a_forgotten_subject_s_memories_out(
    capsys: pytest.CaptureFixture[str],
    config: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ENGRAM_PACK_KEY", "0123456789abcdef" * 4)
    assert cli(capsys, config, "observe", "alice", f"the {SECRET} plan", "--tag", "health")[0] == 0
    assert cli(capsys, config, "observe", "alice", "a second note")[0] == 0
    export = ("pack", "export", "--name", "a", "--version", "1", "--agent", "alice")
    code, out, err = cli(capsys, config, *export[:2], str(tmp_path / "before.pack"), *export[2:])
    assert code == 0, err
    assert json.loads(out)[0]["nodes"] == 2  # the test can fail
    assert cli(capsys, config, "forget", "alice", "--yes")[0] == 0
    code, out, err = cli(capsys, config, *export[:2], str(tmp_path / "after.pack"), *export[2:])
    assert code == 0, err
    assert json.loads(out)[0]["nodes"] == 0  # not two memories reading [forgotten]


def _reflected(ledger: Ledger, agent: str, text: str, evidence: list[int], depth: int) -> int:
    ids = [e.id for e in ledger.get(evidence)]
    payload = MemoryReflected(agent=agent, text=text, evidence=ids, depth=depth)
    return ledger.append(NewEvent.of(payload, stream=f"agent:{agent}", actor=agent))[0]


def test_forget_retracts_other_agents_reflections_drawn_from_the_subject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bob's reflection on alice's public memories is sealed under bob's key, but its words
    # are alice's: forgetting her retracts it, and carol's reflection drawn from it (ADR 0110).
    import engram

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    target = str(tmp_path / "l.db")
    with engram.open_memory(target) as memory:
        alice, bob = memory.agent("alice"), memory.agent("bob")
        hers = alice.observe(f"my oncologist treats my {SECRET} condition")
        own = bob.observe("bob had lunch with the team")
        drawn = _reflected(memory.ledger, "bob", f"alice's {SECRET} condition matters", [hers], 1)
        deeper = _reflected(memory.ledger, "carol", f"the {SECRET} again", [drawn], 2)
        kept = _reflected(memory.ledger, "bob", "lunch with the team matters", [own], 1)
        memory.engine.catch_up()
        carol = memory.agent("carol")
        served = carol.recall(SECRET, scope="reflections", min_score=0.0, record=False)
        assert {drawn, deeper} <= {i.event.position for i in served.items}  # the test can fail
        memory.forget("alice")
        store = Path(target + ".projections")
        assert SECRET.encode() not in store_bytes(store)
        served = carol.recall(SECRET, scope="all", min_score=0.0, record=False)
        assert not {drawn, deeper} & {i.event.position for i in served.items}
        with memory.engine.read() as conn:
            texts = {r.position: r.text for r in reflection_rows.by_agent(conn, "bob")}
            texts |= {r.position: r.text for r in reflection_rows.by_agent(conn, "carol")}
        assert texts == {drawn: FORGOTTEN, deeper: FORGOTTEN, kept: "lunch with the team matters"}
        (event,) = memory.ledger.read(kinds=["reflection.retracted"])
        assert (event.payload.positions, event.payload.subject) == ([drawn, deeper], "alice")
        memory.engine.rebuild()
        assert SECRET.encode() not in store_bytes(store)
    out = io.StringIO()
    code = main(
        ["--ledger", target, "log", "--kind", "memory.reflected", "--format", "jsonl"], out=out
    )
    assert code == 0
    assert SECRET not in out.getvalue()  # its author's key still opens it: shown [forgotten]
    assert out.getvalue().count(FORGOTTEN) == 4  # text and question of both
    out = io.StringIO()
    sql = ["sql", "SELECT text FROM memory_reflected ORDER BY position", "--format", "json"]
    assert main(["--ledger", target, *sql, "--as", "bob"], out=out) == 0
    assert [r["text"] for r in json.loads(out.getvalue())] == [
        FORGOTTEN,  # bob's, drawn from alice
        FORGOTTEN,  # carol's, drawn from bob's
        "lunch with the team matters",  # opened with bob's key: not drawn from alice
    ]


def test_a_raw_subject_forgotten_destroys_the_keys_it_says_are_gone(sealed: Sealed) -> None:
    # ADR 0124: the event attests an erasure; appended alone, it told every audit that
    # alice's text was gone while her keys still opened it. Appended now, it forgets her as
    # Ledger.forget does; a malformed batch holding one destroys nothing.
    from engram.ledger import EventError
    from engram.ledger.catalog import SubjectForgotten

    found = fill(sealed)
    keys = sealed.ledger.sealer.keys
    head = sealed.ledger.head()
    forged = NewEvent.of(SubjectForgotten(subject="alice"), stream="subjects", actor="mallory")
    bad = NewEvent(stream="agent:bob", kind="memory.observed", payload={"agent": 3})
    with pytest.raises(EventError):
        sealed.ledger.append([forged, bad])
    assert sealed.ledger.head() == head
    assert {k.subject: k.live for k in keys.subjects()}["alice"]
    alice = sealed.agent("alice")
    served = alice.recall(SECRET, 10, record=False).items
    assert found["memory"] in {r.event.position for r in served}

    (position,) = sealed.ledger.append(forged)
    assert position == head + 1
    assert not {k.subject: k.live for k in keys.subjects()}["alice"]
    assert keys.unfinished_forgets() == {}
    (stored,) = sealed.ledger.get([found["memory"]])
    assert stored.payload.text == FORGOTTEN
    sealed.engine.catch_up()
    served = alice.recall(f"{SECRET} database outage", 10, record=False).items
    assert all(r.event.payload.agent == "bob" for r in served)


def test_python_forget_refuses_a_subject_it_holds_no_key_of(tmp_path: Path) -> None:
    # ADR 0126: memory.forget("alcie") appended subject.forgotten for a name never sealed,
    # and alice's text stayed readable; `engram forget` refused it.
    from engram import open_memory
    from engram.ledger.errors import ConfigError

    with open_memory(str(tmp_path / "l.db")) as memory:
        memory.agent("alice").observe("alice's locker code is 4411", visibility="private")
        before = sum(1 for _ in memory.ledger.read())
        with pytest.raises(ConfigError, match="holds no key of 'alcie'") as told:
            memory.forget("alcie")
        assert "nothing was forgotten" in str(told.value)
        assert sum(1 for _ in memory.ledger.read()) == before
        done = memory.forget("alcie", force=True)  # said on purpose: appended
        assert done.position == before + 1
