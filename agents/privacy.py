"""Strip personal data from text before a model sees it, and again from what it answers.

:func:`scrub` replaces what reads as personal data or a secret with a placeholder naming
what was there (``[email]``, ``[phone]``, ``[ip]``, ``[key]``, ``[card]``), and counts the
replacements. It is a set of regular expressions with validators, stdlib only (ADR 0029):

- **keys and tokens** first, so a key's digits are not taken for a phone: OpenAI-style
  ``sk-...``, GitHub ``ghp_``/``gho_``/``ghs_``/``ghu_``/``ghr_``/``github_pat_``, AWS access
  key ids ``AKIA``/``ASIA``, Slack ``xox?-``, Google ``AIza``, JWTs (three base64url parts,
  the first starting ``eyJ``), ``Bearer`` tokens, and the value after ``api_key=``,
  ``token:``, ``password=``, ``secret=`` and the like;
- **emails**;
- **IP addresses**: IPv4 with every octet 0..255, IPv6 as :mod:`ipaddress` parses it and
  holding a decimal digit (``a::b`` and ``dead::beef`` read as C++ scopes and hex words);
- **card numbers**: 13 to 19 digits, spaces or dashes between groups, Luhn-valid;
- **phone numbers**: an optional ``+`` country code then 9 to 15 digits in groups, or a
  ``(area)`` group, with at most one space, dash or dot between groups. Dates (2026-11-23),
  times and versions (1.2.3) do not match: they have too few digits or the wrong shape.

A scrubber never sees a whole document's context, so it errs on the side of removing: a
long run of grouped digits is a phone even when it is an order number. The false positives
on ordinary conversation are measured (``python -m engram.bench.scrub``) and reported in
ADR 0029.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

#: The placeholder each category becomes.
PLACEHOLDERS = {
    "key": "[key]",
    "email": "[email]",
    "ip": "[ip]",
    "card": "[card]",
    "phone": "[phone]",
}

_KEY = re.compile(
    r"""
    \b(?:
        sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{16,}        # OpenAI, Anthropic, Stripe-like
      | (?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{20,}                 # GitHub tokens
      | github_pat_[A-Za-z0-9_]{20,}
      | (?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}                 # AWS key ids
      | xox[abposr]-[A-Za-z0-9\-]{10,}                           # Slack
      | AIza[A-Za-z0-9_\-]{30,}                                  # Google API keys
      | eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}  # JWT
    )
    | (?<=\bBearer\ )[A-Za-z0-9._~+/\-]{12,}=*                   # an Authorization header value
    """,
    re.VERBOSE | re.IGNORECASE,
)
#: ``api_key=...``, ``token: ...``, ``password=...``: only the value (group ``v``) is replaced.
_ASSIGNED = re.compile(
    r"\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|token|secret|password|passwd|pwd)"
    r"[\"']?\s*[=:]\s*[\"']?(?P<v>[^\s\"',;]{6,})",
    re.IGNORECASE,
)
_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}"
    r"[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]*\d)")
#: Candidates only: hex groups and colons, validated by :mod:`ipaddress`.
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?"
    r"(?:%[\w.]+)?(?![\w:])"
)
_CARD = re.compile(r"(?<![\w+\-.])\d(?:[ \-]?\d){12,18}(?![\w\-]|\.\d)")
_PHONE = re.compile(
    r"""
    (?<![\w+\-./])
    (?:\+\d{1,3}[\ .\-]?)?                # a country code
    (?:\(\d{1,4}\)[\ .\-]?)?              # an area code in brackets
    \d{1,4}(?:[\ .\-]?\d{2,4}){1,5}       # groups of digits
    (?![\w\-]|[./]\d)
    """,
    re.VERBOSE,
)


class Scrubbed(NamedTuple):
    """A text with its personal data replaced, and how many of each category were found."""

    text: str
    found: dict[str, int]

    @property
    def changed(self) -> bool:
        """Say whether anything was replaced."""
        return bool(self.found)


def luhn(digits: str) -> bool:
    """Return whether a string of digits passes the Luhn checksum (card numbers do)."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        d = ord(char) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _is_ipv4(candidate: str) -> bool:
    return all(0 <= int(octet) <= 255 and len(octet) <= 3 for octet in candidate.split("."))


def _is_ipv6(candidate: str) -> bool:
    # Without a decimal digit it reads as a C++ scope or hex words (a::b, dead::beef).
    if candidate.count(":") < 2 or not any(c.isdigit() for c in candidate):
        return False
    try:
        ipaddress.IPv6Address(candidate.split("%", 1)[0])
    except ValueError:
        return False
    # "12:30:45" parses as no IPv6 (too few groups without "::"); a bare "::1" or "fe80::"
    # does, and is an address.
    return True


def _is_card(candidate: str) -> bool:
    digits = candidate.replace(" ", "").replace("-", "")
    return 13 <= len(digits) <= 19 and luhn(digits)


def _is_phone(candidate: str) -> bool:
    digits = sum(c.isdigit() for c in candidate)
    if not 9 <= digits <= 15:
        return False
    # A bare run of digits with no separator and no "+" is a phone only if long enough to be
    # a full international number; shorter bare runs are ids, amounts, years.
    separated = any(c in candidate for c in " -.()+")
    return separated or digits >= 10


_RULES: tuple[tuple[str, re.Pattern[str], Callable[[str], bool] | None], ...] = (
    ("key", _KEY, None),
    ("key", _ASSIGNED, None),
    ("email", _EMAIL, None),
    ("ip", _IPV4, _is_ipv4),
    ("ip", _IPV6, _is_ipv6),
    ("card", _CARD, _is_card),
    ("phone", _PHONE, _is_phone),
)


def scrub(text: str) -> Scrubbed:
    """Return ``text`` with keys, emails, IPs, card numbers and phones replaced.

    Raises:
        TypeError: ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"scrub: text must be a str, got {type(text).__name__}")
    found: Counter[str] = Counter()
    for category, pattern, valid in _RULES:
        placeholder = PLACEHOLDERS[category]

        def replace(
            match: re.Match[str],
            category: str = category,
            valid: Callable[[str], bool] | None = valid,
            placeholder: str = placeholder,
            pattern: re.Pattern[str] = pattern,
        ) -> str:
            candidate = match.group(0)
            if valid is not None and not valid(candidate):
                if " " in candidate and category in ("card", "phone"):
                    # Grouped digits ran into a neighbour ("2026-11-23 415.555.0134"):
                    # look again after the first space.
                    head, _, tail = candidate.partition(" ")
                    return f"{head} {pattern.sub(replace, tail)}"
                return candidate
            found[category] += 1
            if "v" in match.re.groupindex:  # keep the name, replace the value
                start = match.start("v") - match.start()
                return candidate[:start] + placeholder
            return placeholder

        text = pattern.sub(replace, text)
    return Scrubbed(text, dict(found))


def scrub_text(text: str) -> str:
    """Return ``text`` with its personal data replaced (:func:`scrub` without the counts)."""
    return scrub(text).text
