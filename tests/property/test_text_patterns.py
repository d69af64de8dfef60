"""The patterns run on text a user or a model supplies stay linear in its length.

A query, a memory and an audit statement can be as long as their limits allow (a tool's output
with a long token, a pasted base64 blob, a statement padded with blanks). Three patterns took
time quadratic or exponential in such text, and the reading of a query's names sliced the
query before each of its words; each is checked here to give what it gave before
(the old pattern kept as the reference) and to finish on inputs that took minutes.

The time bounds are a hundred times what the patterns take on an idle machine and a small
share of what the old ones took (80 s for the 50,000-character token, minutes for the blanks),
so a loaded machine does not fail them and a quadratic pattern cannot pass them.
"""

from __future__ import annotations

import re
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.agents.matching import _CODE, _RAW_WORD, codes, names
from engram.agents.statements import _LABEL
from engram.agents.statements import labels as _labels
from engram.ledger.audit import _EXPLAIN

#: The patterns as they were, for the equality checks.
OLD_CODE = re.compile(
    r"[^\W_]+(?:[-_./:][^\W_]+)+|\b(?=[^\W_]*\d)(?=[^\W_]*[^\W\d_])[^\W_]+\b", re.UNICODE
)
OLD_GAP = r"(?:\s+|--[^\n]*|/\*.*?\*/)*"
OLD_EXPLAIN = re.compile(
    rf"\A{OLD_GAP}EXPLAIN\b{OLD_GAP}(?:ANALY[SZ]E\b|\((?:[^()'\"]|'[^']*')*\))?", re.I | re.S
)

#: Letters, digits, the separators ids use, blanks, an accent, a combining mark and an
#: Arabic-Indic digit: the characters the patterns' classes tell apart.
TEXT = st.text(alphabet="aZ19_-./: é'#\u0301\u0663\n", max_size=40)
SQL = st.text(alphabet=" \n\t-*/()'aXEPLAINYZS", max_size=30)


def _seconds(call: object, *args: object) -> float:
    started = time.perf_counter()
    call(*args)  # type: ignore[operator]
    return time.perf_counter() - started


@settings(max_examples=3000, deadline=None)
@given(TEXT)
def test_codes_pattern_matches_as_before(text: str) -> None:
    assert _CODE.findall(text) == OLD_CODE.findall(text)


@settings(max_examples=1000, deadline=None)
@given(TEXT)
def test_labels_are_those_of_words_up_to_64_characters(text: str) -> None:
    # The bound is the only change: on words of at most 64 characters the two agree.
    old = re.compile(r"\b([A-Za-z][\w'-]*) #?(\d+)\b")
    assert _LABEL.findall(text) == old.findall(text)


@settings(max_examples=2000, deadline=None)
@given(SQL, SQL)
def test_explain_prefix_matches_as_before(before: str, after: str) -> None:
    statement = before + "EXPLAIN" + after
    new, old = _EXPLAIN.match(statement), OLD_EXPLAIN.match(statement)
    assert (new and new.group()) == (old and old.group())


def test_a_long_token_costs_linear_time() -> None:
    for text in ("x" * 100_000, "ab12-" * 20_000, "a_" * 50_000, "Z9" * 50_000):
        assert _seconds(codes, text) < 2.0, text[:10]
    assert codes("see HE-855, build 1.2.3 and x86_64 " + "x" * 50_000) == (
        "he-855",
        "1.2.3",
        "x86_64",
    )


def test_a_long_hyphenated_run_costs_linear_time() -> None:
    assert _seconds(_labels, "a-" * 50_000 + " 7") < 2.0
    assert _labels("fixed the parser in round 26, then ticket #7") == frozenset(
        {"round 26", "ticket 7"}
    )


def _old_names(query: str) -> frozenset[str]:
    from engram.projections import lexical

    found = set()
    for match in _RAW_WORD.finditer(query):
        word = match.group()
        before = query[: match.start()].rstrip()
        if word[0].isupper() and before and before[-1] not in ".?!":
            found.update(lexical.tokens(word))
    return frozenset(found)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="aZ Q.?!,\n\t'9É", max_size=40))
def test_names_are_read_as_before(query: str) -> None:
    assert names(query) == _old_names(query)


def test_a_long_query_s_names_cost_linear_time() -> None:
    # A 1 MB query took 18 s, a 5 MB one over ten minutes, before.
    assert _seconds(names, "Where is Zoltan? a " * 50_000) < 2.0
    expected = frozenset({"zoltan", "varga", "ines"})
    assert names("Where does Zoltan Varga live? Ask Ines.") == expected


def test_blanks_before_a_statement_cost_linear_time() -> None:
    assert _seconds(_EXPLAIN.match, " " * 5_000 + "X") < 2.0
    found = _EXPLAIN.match(" \n" * 2_000 + "-- why\n/* a */ explain analyze SELECT 1")
    assert found is not None
    assert found.group().endswith("analyze")
