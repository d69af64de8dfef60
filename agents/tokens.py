"""Count tokens the way a model would: a real tokenizer when one is installed, else an estimate.

Context frames are cut to a token budget (:mod:`engram.agents.context`). With the
``embeddings`` extra installed, the MiniLM tokenizer its model package carries counts them
(``tokenizers``, WordPiece, no special tokens, no truncation). Without it, :class:`Estimate`
counts one token per punctuation mark and ``ceil(len(word) / 4)`` per word (a run of letters,
digits and underscores): WordPiece and BPE tokenizers give a punctuation mark of JSON a token
of its own and split a long word or number into pieces of about four characters, so the
estimate errs high (on engram's frames and source, 4–30% above the MiniLM tokenizer), and a
budget met by the estimate is met by a model's tokenizer as a rule (ADR 0037).
"""

from __future__ import annotations

import math
import re
import threading
from typing import Any, Protocol

_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_WORD = re.compile(r"\w", re.UNICODE)


class TokenCounter(Protocol):
    """Counts the tokens of a text; ``name`` says which tokenizer (``estimate`` if none)."""

    name: str

    def count(self, text: str) -> int:
        """Return how many tokens ``text`` is."""
        ...


class Estimate:
    """The documented estimate: a token per punctuation mark, ``ceil(len / 4)`` per word."""

    name = "estimate"

    def count(self, text: str) -> int:
        """Return the estimated token count of ``text``."""
        return sum(
            math.ceil(len(piece) / 4) if _WORD.match(piece) else 1 for piece in _PIECE.findall(text)
        )


class HuggingFaceTokens:
    """A ``tokenizers`` tokenizer loaded from a ``tokenizer.json`` file."""

    def __init__(self, tokenizer: Any, name: str) -> None:
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        self._lock = threading.Lock()
        self.name = name

    def count(self, text: str) -> int:
        """Return the tokenizer's token count of ``text`` (no special tokens)."""
        with self._lock:  # a tokenizer's settings are shared state
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


_DEFAULT: TokenCounter | None = None
_DEFAULT_LOCK = threading.Lock()


def default_counter() -> TokenCounter:
    """Return the MiniLM tokenizer when the ``embeddings`` extra carries it, else the estimate.

    Loaded once per process.
    """
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = _minilm() or Estimate()
        return _DEFAULT


def _minilm() -> TokenCounter | None:
    try:
        from tokenizers import Tokenizer

        from engram.projections.embedding.st import MINILM, bundled_model_path
    except ImportError:
        return None
    path = bundled_model_path(MINILM)
    if path is None or not (path / "tokenizer.json").is_file():
        return None
    try:
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    except Exception:  # a damaged file: fall back to the estimate rather than fail a read
        return None
    return HuggingFaceTokens(tokenizer, "all-minilm-l6-v2")
