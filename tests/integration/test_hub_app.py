"""The hub's pages and its door, through Starlette's TestClient over a real SQLite ledger.

Each test seeds a small brain (tests/hub_seed.py), opens the hub on it and speaks HTTP to it:
the token, the Host check, CSRF, no write over GET, escaped agent text, reviews appended
through the lessons API (and bad ones appending nothing), read-only mode.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from hub_seed import RULE, XSS, Seeded, seed
from starlette.testclient import TestClient

import engram
from engram.config import resolve_settings
from engram.hub import HubConfig, create_app
from engram.hub.security import COOKIE, CSP

TOKEN = "test-token-0123456789abcdef"
BASE = "http://127.0.0.1"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Seeded]:
    ledger = str(tmp_path_factory.mktemp("hub") / "ledger.db")
    return ledger, seed(ledger)


def _client(ledger: str, **options: object) -> TestClient:
    config = HubConfig(settings=resolve_settings(ledger), token=TOKEN, **options)  # type: ignore[arg-type]
    return TestClient(create_app(config), base_url=BASE, follow_redirects=False)


@pytest.fixture
def client(seeded: tuple[str, Seeded]) -> Iterator[TestClient]:
    with _client(seeded[0]) as c:
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        yield c


def _csrf(client: TestClient) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/review").text)
    assert match is not None, "the review form carries a CSRF token"
    return match.group(1)


def _reviews(ledger: str) -> list[tuple[str, str, str]]:
    with engram.open(ledger) as led:
        return [
            (e.payload.suggestion, e.payload.decision, e.payload.reviewer)
            for e in led.read(kinds=["suggestion.reviewed"])
        ]


def test_every_page_answers_and_names_what_it_shows(client: TestClient) -> None:
    expected = {
        "/brain": "The brain",
        "/vitality": "active neurons",
        "/review": "Review queue",
        "/memories?agent=alice&q=deploy lock": "Night deploys fail on locks.",
        "/ledger": "memory.observed",
        "/ledger/verify": "ok: the hash chain holds",
    }
    for path, text in expected.items():
        response = client.get(path)
        assert response.status_code == 200, (path, response.text[:300])
        assert text in response.text, path
        assert response.headers["content-security-policy"] == CSP
        assert "<script>" not in response.text.replace('<script src="/static/brain.js">', "")


def test_without_the_token_nothing_is_served(seeded: tuple[str, Seeded]) -> None:
    with _client(seeded[0]) as c:
        assert c.get("/brain").status_code == 401
        assert c.get("/api/graph").status_code == 401
        assert c.get("/brain", headers={"Authorization": "Bearer wrong-token"}).status_code == 401
        assert c.get("/brain?token=wrong-token-0123456789").status_code == 401
        # Static files hold no data: served without the token, still under the CSP.
        static = c.get("/static/brain.js")
        assert static.status_code == 200
        assert "textContent" in static.text


def test_a_first_visit_with_the_token_sets_a_strict_cookie_and_drops_it_from_the_address(
    seeded: tuple[str, Seeded],
) -> None:
    with _client(seeded[0]) as c:
        first = c.get(f"/ledger?kind=memory.observed&token={TOKEN}")
        assert first.status_code == 303
        assert first.headers["location"] == "/ledger?kind=memory.observed"
        cookie = first.headers["set-cookie"]
        assert f"{COOKIE}={TOKEN}" in cookie
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        assert c.get("/ledger?kind=memory.observed").status_code == 200  # the cookie now
        # A path that would read as another origin is not redirected there.
        odd = c.get(f"//evil.example/x?token={TOKEN}")
        location = odd.headers["location"]
        assert location.startswith("/")
        assert not location.startswith("//")


def test_a_foreign_host_header_is_refused_even_with_the_token(
    seeded: tuple[str, Seeded],
) -> None:
    with _client(seeded[0]) as c:
        headers = {"Authorization": f"Bearer {TOKEN}", "Host": "attacker.example:8765"}
        response = c.get("/brain", headers=headers)
        assert response.status_code == 400
        assert "DNS rebinding" in response.text
        assert c.get("/brain", headers={**headers, "Host": "localhost:8765"}).status_code == 200


def test_agent_text_is_escaped_everywhere(client: TestClient, seeded: tuple[str, Seeded]) -> None:
    for path in (
        "/memories?agent=alice",
        "/ledger",
        f"/ledger/event/{seeded[1].xss_position}",
    ):
        body = client.get(path).text
        assert "<script>window.__xss" not in body, path
        assert 'onerror="window' not in body, path
        assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in body, path
    assert "looking at the &lt;b&gt;lock&lt;/b&gt;" in client.get("/memories").text
    assert XSS.startswith("<script>")


def test_apply_by_form_appends_a_review_by_the_reviewer_and_the_rule_appears(
    seeded: tuple[str, Seeded], tmp_path: Path
) -> None:
    ledger = str(tmp_path / "ledger.db")
    seeded_here = seed(ledger)
    with _client(ledger) as c:
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        form = {"csrf": _csrf(c), "decision": "applied", "reviewer": "carol", "note": "yes"}
        response = c.post(f"/review/{seeded_here.suggestion}", data=form)
        assert response.status_code == 303, response.text
        assert response.headers["location"].startswith("/review?done=")
        page = c.get("/review").text
        assert RULE in page
        assert "applied by carol" in page
        other = {
            "csrf": form["csrf"],
            "decision": "modified",
            "reviewer": "dave",
            "text": "Deploy at night only with a second person.",
        }
        assert c.post(f"/review/{seeded_here.other}", data=other).status_code == 303
        assert "Deploy at night only with a second person." in c.get("/review").text
    assert _reviews(ledger) == [
        (seeded_here.suggestion, "applied", "carol"),
        (seeded_here.other, "modified", "dave"),
    ]


def test_writes_need_post_and_the_csrf_token_and_bad_reviews_append_nothing(
    client: TestClient, seeded: tuple[str, Seeded]
) -> None:
    ledger, s = seeded
    before = _reviews(ledger)
    url = f"/review/{s.other}"
    assert client.get(url).status_code == 405
    assert client.get(f"{url}?decision=applied&reviewer=x").status_code == 405
    good = {"csrf": _csrf(client), "decision": "applied", "reviewer": "eve"}
    missing = client.post(url, data={k: v for k, v in good.items() if k != "csrf"})
    assert missing.status_code == 403
    assert "CSRF" in missing.text
    assert client.post(url, data={**good, "csrf": "0" * 64}).status_code == 403
    cases = {
        "decision must be one of": {**good, "decision": "deleted"},
        "reviewer must be a non-empty name": {**good, "reviewer": "  "},
        "modified needs the final text": {**good, "decision": "modified", "text": ""},
    }
    for message, form in cases.items():
        response = client.post(url, data=form)
        assert response.status_code == 400, message
        assert message in response.text
    unknown = client.post("/review/no-such-suggestion", data=good)
    assert unknown.status_code == 400
    assert "no suggestion has it" in unknown.text
    as_json = client.post(url, json=good)
    assert as_json.status_code == 400
    assert "posted as a form" in as_json.text
    assert _reviews(ledger) == before


def test_read_only_mode_shows_no_form_and_refuses_reviews(seeded: tuple[str, Seeded]) -> None:
    ledger, s = seeded
    before = _reviews(ledger)
    with _client(ledger, read_only=True) as c:
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        page = c.get("/review")
        assert "read-only" in page.text
        assert 'method="post"' not in page.text
        guard = c.app
        csrf = guard.csrf  # type: ignore[attr-defined]
        form = {"csrf": csrf, "decision": "applied", "reviewer": "mallory"}
        refused = c.post(f"/review/{s.suggestion}", data=form)
        assert refused.status_code == 403
        assert "read-only" in refused.text
    assert _reviews(ledger) == before


def test_bad_query_parameters_are_refused_with_the_reason(client: TestClient) -> None:
    cases = {
        "/api/graph?as_of=yesterday": "not an ISO-8601 time",
        "/api/graph?as_of=2026-01-01T00:00:00": "has no timezone",
        "/ledger?after=-1": "after: -1 is outside",
        "/ledger?limit=100000": "limit: 100000 is outside",
        "/ledger?kind=no.such": "is not a kind",
        "/ledger/event/999999": "no event at position",
        "/ledger/event/abc": "not a whole number",
        "/memories?agent=nobody": "no such agent",
        "/api/events?kinds=no.such": "kinds: unknown",
    }
    for path, message in cases.items():
        response = client.get(path)
        assert response.status_code == 400, path
        assert message in response.text, path


def test_the_graph_as_of_a_past_moment_holds_what_was_known_then(
    client: TestClient, seeded: tuple[str, Seeded]
) -> None:
    now = client.get("/api/graph").json()
    assert {n["id"] for n in now["neurons"]} == set(seeded[1].neurons)
    assert sum(len(n["connections"]) for n in now["neurons"]) == 16
    start = now["span"]["start"]
    early = client.get("/api/graph", params={"as_of": start}).json()
    assert [n["id"] for n in early["neurons"]] == ["n00"]
    assert client.get("/api/graph?as_of=2000-01-01T00:00:00Z").json()["neurons"] == []


def test_the_event_page_links_a_reflection_to_its_evidence(
    client: TestClient, seeded: tuple[str, Seeded]
) -> None:
    body = client.get(f"/ledger/event/{seeded[1].reflection_position}").text
    assert "What it rests on" in body
    assert re.search(r'href="/ledger/event/\d+">evidence ', body)


def test_the_ledger_page_shows_the_last_signed_checkpoint_and_verify_checks_it(
    tmp_path: Path,
) -> None:
    from engram.ledger.checkpoints import generate_key, load_private_key, sign

    ledger = str(tmp_path / "ledger.db")
    seed(ledger)
    key = tmp_path / "checkpoint.key"
    public = generate_key(key)
    folder = tmp_path / "anchors"
    with engram.open(ledger) as led:
        signed, _ = sign(led, load_private_key(key), folder)
    with _client(ledger, checkpoints=folder, public_key=public) as c:
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        assert f"last signed checkpoint: position <b>{signed.position}</b>" in c.get("/ledger").text
        verified = c.get("/ledger/verify").text
        assert "1 signed checkpoint(s) agree" in verified
        assert signed.hash in verified


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "0.0.0.0"], "is not a loopback address"),
        (["--token", "short"], "at least 16 characters"),
        (["--token", "has spaces in it, sixteen+"], "without spaces"),
        (["--port", "70000"], "70000"),
    ],
)
def test_the_command_refuses_an_open_door_before_serving(
    seeded: tuple[str, Seeded], args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram.cli import main

    assert main(["hub", "--ledger", seeded[0], *args]) == 2
    assert message in capsys.readouterr().err


def test_the_command_needs_checkpoints_and_their_key_together(
    seeded: tuple[str, Seeded], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram.cli import main

    assert main(["hub", "--ledger", seeded[0], "--checkpoints", str(tmp_path)]) == 2
    assert "--checkpoints and --public-key go together" in capsys.readouterr().err


@pytest.mark.postgres
def test_the_hub_serves_and_reviews_a_postgresql_ledger(
    pg_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    options = {"pg_schema": pg_schema, "projections": str(tmp_path / "projections")}
    with engram.open_memory(pg_dsn, **options) as memory:  # a small brain: PG appends fsync
        memory.agent("alice").observe(XSS)
        (scar,) = memory.ledger.get([memory.scars("alice").record("failure", "x", "y")])
        other = memory.lessons().propose([scar.id], "rules", RULE)
    config = HubConfig(settings=resolve_settings(pg_dsn, **options), token=TOKEN)
    with TestClient(create_app(config), base_url=BASE, follow_redirects=False) as c:
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        assert "&lt;script&gt;window.__xss" in c.get("/memories?agent=alice").text
        form = {"csrf": _csrf(c), "decision": "refused", "reviewer": "pg reviewer"}
        assert c.post(f"/review/{other}", data=form).status_code == 303
        assert "ok: the hash chain holds" in c.get("/ledger/verify").text
    with engram.open(pg_dsn, pg_schema=pg_schema) as led:
        reviews = [e.payload for e in led.read(kinds=["suggestion.reviewed"])]
    assert [(r.suggestion, r.decision, r.reviewer) for r in reviews] == [
        (other, "refused", "pg reviewer")
    ]


def test_the_vitality_page_shows_the_working_set(client: TestClient) -> None:
    response = client.get("/vitality")
    assert response.status_code == 200
    assert "working set <b>" in response.text
    assert "mean resonance" in response.text
    assert "coverage" in response.text
    assert "drift" in response.text


def test_a_reviewer_sends_a_suggestion_elsewhere_and_the_note_is_listed(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.db")
    seeded_here = seed(ledger)
    with _client(ledger) as c:
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        page = c.get("/review").text
        assert 'data-testid="destination"' in page
        form = {"csrf": _csrf(c), "decision": "applied", "reviewer": "carol"}
        bad = c.post(f"/review/{seeded_here.suggestion}", data={**form, "destination": "trash"})
        assert bad.status_code == 400
        assert "destination must be one of" in bad.text
        assert _reviews(ledger) == []
        sent = {**form, "destination": "notes_inbox"}
        assert c.post(f"/review/{seeded_here.suggestion}", data=sent).status_code == 303
        page = c.get("/review").text
    assert 'data-testid="note"' in page
    assert RULE in page.split('data-testid="doctrine"')[1]
    with engram.open_memory(ledger) as memory:
        assert [r.suggestion for r in memory.lessons().rules()] == []
        (review,) = list(memory.ledger.read(kinds=["suggestion.reviewed"]))
        assert review.payload.destination == "notes_inbox"


def test_a_replaced_memory_is_labelled_with_what_replaced_it(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    ledger = str(tmp_path / "replaced.db")
    now = datetime.now(UTC)
    with engram.open_memory(ledger) as memory:
        ana = memory.agent("ana")
        old = ana.observe("The nightly backup runs at 02:00 UTC.", at=now - timedelta(days=60))
        new = ana.observe(
            "Backups were rescheduled to 04:30 UTC.", at=now - timedelta(days=30), supersedes=[old]
        )
    with _client(ledger) as c:
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        page = c.get("/memories?agent=ana&q=when does the nightly backup run").text
    assert f'replaced by <a href="/ledger/event/{new}">#{new}</a>' in page


def test_the_memories_page_shows_no_agent_s_private_text(tmp_path: Path) -> None:
    # ADR 0126: the stream, the recall and the reflections of the memories page showed an
    # agent's private memories and scars to whoever held the hub's token; the ledger pages
    # said [private] for the same events.
    from engram.agents.scars import Scars

    ledger = str(tmp_path / "private.db")
    with engram.open_memory(ledger) as memory:
        alice = memory.agent("alice")
        alice.observe("The gate code is kumquat 5521.", visibility="private")
        alice.observe("The gate is painted green.")
        Scars("alice", memory.ledger, memory.engine).record(
            "failure", "left the kumquat gate open", "shut the gate", visibility="private"
        )
    with _client(ledger) as c:
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        stream = c.get("/memories?agent=alice").text
        recalled = c.get("/memories?agent=alice&q=what is the gate code").text
    assert "painted green" in stream
    for page in (stream, recalled):
        assert "kumquat" not in page
        assert "[private]" in page
