"""The hub in a real browser: headless Chromium (the distribution's package) via Playwright.

``engram hub`` runs in its own process over a seeded SQLite ledger. The tests load every
page, apply a suggestion by clicking and see the rule appear, watch an activation appended
by another process arrive live, and check that a script payload in an observation stays
text. The brain and vitality pages are saved as screenshots (to ``$ENGRAM_SCREENSHOTS``,
default: the test's temporary folder; the README's come from ``docs/screenshots``).

Outside CI, without Chromium or Playwright, the tests skip and say how to install them;
in CI (``CI`` set) a missing browser is a failure: .ci/run installs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hub_seed import RULE, TOKEN, Running, Seeded, seed, start_hub, stop_hub

CHROMIUM = os.environ.get("ENGRAM_CHROMIUM", "/usr/bin/chromium")
INSTALL = "apt-get update && apt-get install -y chromium; pip install -e '.[dev]' (playwright)"


def _browser_problem() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        return f"no Chromium at {CHROMIUM}"
    return None


_problem = _browser_problem()
if _problem is not None:
    if os.environ.get("CI"):
        pytest.fail(f"{_problem}; CI runs the browser tests (.ci/run installs Chromium)")
    pytest.skip(f"{_problem}; to run the browser tests: {INSTALL}", allow_module_level=True)

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, Seeded, str]]:
    ledger = str(tmp_path_factory.mktemp("hub-browser") / "ledger.db")
    seeded = seed(ledger)
    running = start_hub(ledger)
    try:
        yield running, seeded, ledger
    finally:
        stop_hub(running)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium"),
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, hub: tuple[Running, Seeded, str]) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    opened.on(
        "console",
        lambda msg: (
            problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None
        ),
    )
    opened.goto(f"{hub[0].base}/brain?token={TOKEN}")  # the first visit sets the cookie
    yield opened
    context.close()
    assert problems == [], problems  # no script error, no CSP violation on any page


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("ENGRAM_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_every_page_loads_and_the_brain_and_vitality_are_saved(
    page: Page, hub: tuple[Running, Seeded, str], tmp_path: Path
) -> None:
    base = hub[0].base
    assert page.url == f"{base}/brain"  # the token left the address
    expect(page.get_by_test_id("counts")).to_contain_text("12 neurons, 16 connections")
    expect(page.get_by_test_id("top").locator("li")).to_have_count(10)
    folder = _shots(tmp_path)
    page.screenshot(path=str(folder / "hub-brain.png"), full_page=True)
    page.goto(f"{base}/vitality")
    expect(page.get_by_test_id("plot")).to_have_count(7)
    expect(page.locator("svg polyline").first).to_be_attached()
    page.screenshot(path=str(folder / "hub-vitality.png"), full_page=True)
    for path, text in (
        ("/review", "Review queue"),
        ("/memories?agent=alice", "Night deploys fail on locks."),
        ("/ledger", "Ledger"),
        ("/ledger/verify", "ok: the hash chain holds"),
    ):
        page.goto(base + path)
        expect(page.locator("main")).to_contain_text(text)
    assert (folder / "hub-brain.png").stat().st_size > 10_000


def test_the_time_slider_replays_an_earlier_brain(page: Page) -> None:
    expect(page.get_by_test_id("counts")).to_contain_text("12 neurons")
    slider = page.get_by_test_id("slider")
    slider.fill("0")
    slider.dispatch_event("change")
    expect(page.get_by_test_id("counts")).to_contain_text("1 neurons, 0 connections")
    expect(page.get_by_test_id("as-of")).not_to_have_text("now")
    page.get_by_role("button", name="live").click()
    expect(page.get_by_test_id("counts")).to_contain_text("12 neurons, 16 connections")


def test_apply_a_suggestion_by_clicking_and_see_the_rule(
    page: Page, hub: tuple[Running, Seeded, str]
) -> None:
    running, seeded, ledger = hub
    page.goto(f"{running.base}/review")
    card = page.locator(f'[data-testid="suggestion"][data-id="{seeded.suggestion}"]')
    card.get_by_label("reviewer").fill("browser reviewer")
    card.get_by_test_id("apply").click()
    expect(page.get_by_test_id("done")).to_contain_text("review appended")
    expect(page.get_by_test_id("rules")).to_contain_text(RULE)
    expect(page.get_by_test_id("rules")).to_contain_text("applied by browser reviewer")
    expect(page.locator(f'[data-id="{seeded.suggestion}"]')).to_have_count(0)
    import engram

    with engram.open(ledger) as led:
        reviews = [e.payload for e in led.read(kinds=["suggestion.reviewed"])]
    assert [(r.suggestion, r.decision, r.reviewer) for r in reviews] == [
        (seeded.suggestion, "applied", "browser reviewer")
    ]


def test_apply_a_supersession_proposal_by_clicking_then_revert_it(
    page: Page, hub: tuple[Running, Seeded, str]
) -> None:
    running, _, ledger = hub
    import engram
    from engram.ledger import NewEvent
    from engram.ledger.catalog import MemoryObserved, SupersessionProposed

    with engram.open(ledger) as led:
        old, new = (
            led.append(NewEvent.of(MemoryObserved(agent="alice", text=text), stream="agent:alice",
                                   actor="alice"))[0]
            for text in ("Alice lives in Paris.", "Alice moved to Berlin.")
        )  # fmt: skip
        (proposal,) = led.append(
            NewEvent.of(
                SupersessionProposed(agent="alice", position=new, replaces=[old],
                                     similarity=0.5, reason="shares nothing; pari -> berlin"),
                stream="agent:alice", actor="alice",
            )
        )  # fmt: skip
    page.goto(f"{running.base}/review")
    card = page.locator(f'[data-testid="proposal"][data-event="{proposal}"]')
    expect(card.get_by_test_id("old-text")).to_contain_text("Alice lives in Paris.")
    expect(card.get_by_test_id("new-text")).to_contain_text("Alice moved to Berlin.")
    expect(card.get_by_test_id("why")).to_contain_text("pari -> berlin")
    card.get_by_label("reviewer").fill("browser reviewer")
    card.get_by_test_id("apply-supersession").click()
    expect(page.get_by_test_id("done")).to_contain_text("review appended")
    expect(page.locator(f'[data-testid="proposal"][data-event="{proposal}"]')).to_have_count(0)
    row = page.get_by_test_id("supersession").filter(has_text="Alice moved to Berlin.")
    expect(row).to_contain_text("Alice lives in Paris.")
    row.get_by_label("reviewer").fill("browser reviewer")
    row.get_by_test_id("revert-supersession").click()
    expect(page.get_by_test_id("done")).to_contain_text("review appended")
    expect(page.get_by_test_id("supersession")).to_have_count(0)
    with engram.open(ledger) as led:
        done = [(e.kind, e.actor) for e in led.read(proposal)
                if e.kind.startswith("supersession.")]  # fmt: skip
    assert done == [
        ("supersession.reviewed", "browser reviewer"),
        ("supersession.reverted", "browser reviewer"),
    ]


APPEND = """
import sys
import engram
from engram.ledger import NewEvent
from engram.ledger.catalog import NeuronActivated
with engram.open(sys.argv[1]) as led:
    led.append(NewEvent.of(NeuronActivated(id="n07", strength=0.75, cause="from-elsewhere"),
                           stream="neuron:n07", actor="other-process"))
"""


def test_an_activation_appended_by_another_process_arrives_live(
    page: Page, hub: tuple[Running, Seeded, str]
) -> None:
    expect(page.get_by_test_id("graph")).to_have_attribute("data-live", "open")
    subprocess.run([sys.executable, "-c", APPEND, hub[2]], check=True, timeout=60)
    arrived = page.get_by_test_id("live").locator("li").first
    expect(arrived).to_contain_text("concept 7", timeout=15_000)
    expect(arrived).to_contain_text("from-elsewhere")


def test_a_script_payload_in_an_observation_renders_inert(
    page: Page, hub: tuple[Running, Seeded, str]
) -> None:
    running, seeded, _ = hub
    for path in ("/memories?agent=alice", f"/ledger/event/{seeded.xss_position}", "/ledger"):
        page.goto(running.base + path)
        expect(page.locator("main")).to_contain_text("<script>window.__xss = 1</script>")
        fired: Any = page.evaluate("() => window.__xss === undefined ? null : window.__xss")
        assert fired is None, path
        assert page.locator("main script").count() == 0
        assert page.locator('main img[src="x"]').count() == 0
