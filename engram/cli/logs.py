"""Logging for the command line: ``-q`` and ``-v``, and model libraries kept quiet."""

from __future__ import annotations

import logging
import os
import sys
from typing import IO, Any

#: Libraries that log or draw progress bars while a model loads ("Loading weights").
LIBRARIES = (
    "transformers",
    "sentence_transformers",
    "huggingface_hub",
    "torch",
    "filelock",
    "urllib3",
    "httpx",
    "httpcore",
)
#: Read when those libraries are imported, which happens lazily, after this runs.
QUIET_ENV = {
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "HF_HUB_VERBOSITY": "error",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
}
QUIET, NORMAL, VERBOSE = -1, 0, 1

logger = logging.getLogger("engram")
_env_set: set[str] = set()


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Write to whatever ``sys.stderr`` is when a record arrives (test runners swap it)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> IO[str]:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


_handler = _StderrHandler()
_handler.setFormatter(logging.Formatter("%(message)s"))


def configure(verbosity: int) -> None:
    """Show engram's messages on stderr at the level ``verbosity`` asks for.

    ``QUIET`` shows errors only, ``NORMAL`` engram's notices and warnings, ``VERBOSE`` engram's
    debug messages and what the model libraries say, their progress bars included. Environment
    variables the user set are left alone.
    """
    level = {QUIET: logging.ERROR, NORMAL: logging.INFO}.get(verbosity, logging.DEBUG)
    logger.setLevel(level)
    logger.propagate = False
    if _handler not in logger.handlers:
        logger.addHandler(_handler)
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(logging.INFO if verbosity >= VERBOSE else logging.ERROR)
    if verbosity >= VERBOSE:
        for key in _env_set:
            os.environ.pop(key, None)
        _env_set.clear()
        return
    for key, value in QUIET_ENV.items():
        if key not in os.environ:
            os.environ[key] = value
            _env_set.add(key)
