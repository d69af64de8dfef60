"""The personal-data scrubber: what it removes, what it leaves, and a property over both."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import card_numbers, personal_data, texts_with_personal_data

from engram.agents.privacy import PLACEHOLDERS, luhn, scrub, scrub_text


@pytest.mark.parametrize(
    ("text", "expected", "found"),
    [
        ("mail john.doe+ops@example.co.uk now", "mail [email] now", {"email": 1}),
        ("call +1 415-555-0134.", "call [phone].", {"phone": 1}),
        ("or (212) 555 0199, please", "or [phone], please", {"phone": 1}),
        ("host 192.168.1.20:8080 down", "host [ip]:8080 down", {"ip": 1}),
        ("via fe80::1%eth0 and 2001:db8::ff00:42:8329", "via [ip] and [ip]", {"ip": 2}),
        ("key sk-proj-abcdefghijklmnop1234 set", "key [key] set", {"key": 1}),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[key]", {"key": 1}),
        ("AKIAIOSFODNN7EXAMPLE in env", "[key] in env", {"key": 1}),
        ("Authorization: Bearer abc.def-ghi_jkl~mno", "Authorization: Bearer [key]", {"key": 1}),
        (
            'api_key="abcdef123456", password: hunter22',
            'api_key="[key]", password: [key]',
            {"key": 2},
        ),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdEFGHijkl ok", "jwt [key] ok", {"key": 1}),
        ("card 4111 1111 1111 1111 charged", "card [card] charged", {"card": 1}),
        ("card 4111-1111-1111-1111", "card [card]", {"card": 1}),
    ],
)
def test_what_it_removes(text: str, expected: str, found: dict[str, int]) -> None:
    assert scrub(text) == (expected, found)
    assert scrub_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Meeting on 2026-11-23 at 12:30:45, version 1.2.3, build 10.4",
        "In 2023 we adopted 5 cats; it cost $1,250.00 and 3.5%",
        "the ratio was 16:9 and the score 3-2",
        "see RFC 9110 section 15.5.20",
        "order 12345678 shipped",  # eight digits: an id, not a phone
        "4111111111111112 is not Luhn-valid, so not a card",
        "a::b is C++ scope, not an address",
        "email me @ the office",
    ],
)
def test_what_it_leaves(text: str) -> None:
    assert scrub(text) == (text, {})


def test_luhn() -> None:
    assert luhn("4111111111111111")
    assert luhn("79927398713")
    assert not luhn("79927398710")


def test_rejects_non_text() -> None:
    with pytest.raises(TypeError, match="must be a str, got bytes"):
        scrub(b"bytes")  # type: ignore[arg-type]


@given(item=personal_data)
def test_every_generated_piece_is_removed_alone(item: tuple[str, str]) -> None:
    category, value = item
    result = scrub(value)
    assert result.text == PLACEHOLDERS[category], (value, result)


@given(case=texts_with_personal_data())
@example(case=("ask (4111 1111 1111 1111) now", ["4111 1111 1111 1111"]))
def test_no_generated_piece_survives_in_context(case: tuple[str, list[str]]) -> None:
    text, values = case
    cleaned = scrub(text).text
    for value in values:
        assert value not in cleaned, (text, cleaned)


@given(card=card_numbers())
def test_generated_cards_are_luhn_valid(card: str) -> None:
    assert luhn(card.replace(" ", "").replace("-", ""))


@given(text=st.text(max_size=200))
def test_scrubbing_is_idempotent(text: str) -> None:
    once = scrub(text).text
    assert scrub(once).text == once
