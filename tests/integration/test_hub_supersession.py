"""The hub's review of supersession proposals, over HTTP on a real SQLite ledger (ADR 0075).

The review page lists what detection proposed (the old and the new text, the similarity,
why) beside the suggestions; a reviewer applies or refuses a proposal and reverts a
supersession in force by a form, through the agents layer; a bad form appends nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

import engram
from engram.config import resolve_settings
from engram.hub import HubConfig, create_app
from engram.ledger import NewEvent
from engram.ledger.catalog import SupersessionProposed

TOKEN = "test-token-0123456789abcdef"
XSS = "<script>alert(1)</script>"


def _seed(ledger: str) -> dict[str, int]:
    """Two proposals about ana's memories (one with agent-written markup), one about bo's."""
    with engram.open_memory(ledger, supersede="off") as memory:
        ana, bo = memory.agent("ana"), memory.agent("bo")
        found = {
            "paris": ana.observe("Alice Moreau lives in Paris."),
            "berlin": ana.observe(f"Alice Moreau moved to Berlin. {XSS}"),
            "volvo": ana.observe("Alice Moreau drives a red Volvo."),
            "fiat": ana.observe("Alice Moreau now drives a blue Fiat."),
        }
        for name, (agent, new, old, why) in {
            "moved": ("ana", "berlin", "paris", "shares moreau; pari -> berlin"),
            "car": ("ana", "fiat", "volvo", "shares driv; red, volvo -> blue, fiat"),
        }.items():
            payload = SupersessionProposed(
                agent=agent, position=found[new], replaces=[found[old]], similarity=0.66,
                reason=why,
            )  # fmt: skip
            event = NewEvent.of(payload, stream=f"agent:{agent}", actor=agent)
            found[name] = memory.ledger.append(event)[0]
        found["rome"] = bo.observe("Bo lives in Rome.")
    return found


def _client(ledger: str, **options: object) -> TestClient:
    config = HubConfig(settings=resolve_settings(ledger), token=TOKEN, **options)  # type: ignore[arg-type]
    client = TestClient(create_app(config), base_url="http://127.0.0.1", follow_redirects=False)
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    return client


def _csrf(page: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert match is not None
    return match.group(1)


def _tail(ledger: str, after: int) -> list[tuple[str, str, object]]:
    with engram.open(ledger) as led:
        return [
            (e.kind, e.actor, getattr(e.payload, "proposal", None) or e.payload.supersession)
            for e in led.read(after)
        ]


def test_a_reviewer_applies_refuses_and_reverts_proposals_by_form(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.db")
    seeded = _seed(ledger)
    with _client(ledger) as c:
        page = c.get("/review").text
        cards = re.findall(r'data-testid="proposal" data-event="(\d+)"', page)
        assert [int(e) for e in cards] == [seeded["moved"], seeded["car"]]
        assert "Alice Moreau lives in Paris." in page
        assert "Alice Moreau now drives a blue Fiat." in page
        assert "similarity 0.66" in page
        assert "why: shares driv; red, volvo -&gt; blue, fiat" in page
        assert XSS not in page
        assert "&lt;script&gt;" in page
        csrf = _csrf(page)
        form = {"csrf": csrf, "decision": "applied", "reviewer": "carol", "note": "yes"}
        done = c.post(f"/review/supersession/{seeded['moved']}/review", data=form)
        assert done.status_code == 303, done.text
        refuse = {**form, "decision": "refused", "reviewer": "dave"}
        assert (
            c.post(f"/review/supersession/{seeded['car']}/review", data=refuse).status_code == 303
        )
        page = c.get("/review").text
        assert "No supersession waits for review." in page
        (applied,) = re.findall(r'data-testid="supersession" data-event="(\d+)"', page)
        revert = {"csrf": csrf, "reviewer": "erin"}
        assert c.post(f"/review/supersession/{applied}/revert", data=revert).status_code == 303
        assert "no supersession in force" in c.get("/review").text
    assert _tail(ledger, seeded["rome"]) == [
        ("supersession.reviewed", "carol", seeded["moved"]),
        ("supersession.reviewed", "dave", seeded["car"]),
        ("supersession.reverted", "erin", int(applied)),
    ]


def test_bad_supersession_forms_are_refused_and_append_nothing(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.db")
    seeded = _seed(ledger)
    moved = f"/review/supersession/{seeded['moved']}/review"
    with _client(ledger) as c:
        good = {"csrf": _csrf(c.get("/review").text), "decision": "applied", "reviewer": "eve"}
        assert c.get(f"{moved}?decision=applied&reviewer=x").status_code == 405
        assert c.post(moved, data={**good, "csrf": "0" * 64}).status_code == 403
        for url, form, needle in (
            (moved, {**good, "decision": "maybe"}, "decision must be"),
            # A review applies or refuses: reverting is its own action (ADR 0171).
            (moved, {**good, "decision": "reverted"}, "decision must be"),
            (moved, {**good, "reviewer": "  "}, "reviewer must be a non-empty name"),
            (moved, {**good, "reviewer": "r" * 600}, "reviewer"),
            (f"/review/supersession/{seeded['paris']}/review", good, "no supersession proposal"),
            (f"/review/supersession/{seeded['moved']}/revert", good, "no supersession"),
            (f"/review/supersession/{seeded['moved']}/delete", good, "reviewed or reverted"),
            ("/review/supersession/x/review", good, "not a whole number"),
        ):
            refused = c.post(url, data=form)
            assert refused.status_code == 400, (url, refused.text)
            assert needle in refused.text
    assert _tail(ledger, seeded["rome"]) == []
    with _client(ledger, read_only=True) as c:
        page = c.get("/review").text
        assert "Alice Moreau lives in Paris." in page
        assert "apply-supersession" not in page
        assert c.post(moved, data=good).status_code == 403
    assert _tail(ledger, seeded["rome"]) == []
