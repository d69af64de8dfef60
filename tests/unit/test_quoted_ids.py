"""The ids a question quotes that name one thing (ADR 0117)."""

from __future__ import annotations

from engram.agents.quoted import ID_LENGTH, quoted_ids


def test_long_codes_and_hash_numbers_are_ids_ordinals_and_measures_are_not() -> None:
    assert quoted_ids("Can you pull up INC0012345 and ERR-4471-B?") == ("inc0012345", "err-4471-b")
    assert quoted_ids("which change did commit 9f2c4e1 make?") == ("9f2c4e1",)
    assert quoted_ids("What does PR #4821 change? Not #48 nor x#482") == ("#4821",)
    # Shorter than ID_LENGTH: an ordinal, a measure, a short tag.
    for plain in ("How long ago was her 18th birthday?", "the 5K run", "GA4 tracking"):
        assert quoted_ids(plain) == ()
    assert ID_LENGTH == 5
    assert quoted_ids("Bootstrap 5.3.0 and 5.3.0 again") == ("5.3.0",)


def test_a_request_s_number_is_an_identifier_detection_keeps_apart() -> None:
    # ADR 0126: "Code review on PR #5209 ..." was replaced by "... PR #5220 ..." in a store
    # of many such notes: the number after "#" names one request, as an id does.
    from engram.agents.candidacy import identifiers

    assert "#5209" in identifiers("Code review on PR #5209 (audit-log): requested a test.")
    assert identifiers("PR #5209 merged") != identifiers("PR #5220 merged")
    assert not identifiers("We are #1 in the region")  # too short to name a request
    # Nor is a request's number a value given anew in the same sentence (shapes.value_anew),
    # which replaces without a change word.
    from engram.agents.shapes import value_anew

    review = "Code review on PR #{} (geo-lookup): requested a changelog entry."
    assert not value_anew(review.format(5228), review.format(5229))
    assert value_anew("The open playtest has 500 slots", "The open playtest has 200 slots")
