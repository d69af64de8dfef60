"""Logging for the command line: ``-q`` and ``-v``, and model libraries kept quiet."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def configured(verbosity: int) -> Iterator[None]:
    """Show engram's messages on stderr at the level ``verbosity`` asks for, for one command.

    ``QUIET`` shows errors only, ``NORMAL`` engram's notices and warnings, ``VERBOSE`` engram's
    debug messages and what the model libraries say, their progress bars included. Environment
    variables the user set are left alone. Everything is put back afterwards, so a program
    that calls :func:`engram.cli.main` keeps its own logging.
    """
    names = ("engram", *LIBRARIES)
    saved = {name: logging.getLogger(name).level for name in names}
    propagate = logger.propagate
    added = [key for key in QUIET_ENV if key not in os.environ] if verbosity < VERBOSE else []
    logger.setLevel({QUIET: logging.ERROR, NORMAL: logging.INFO}.get(verbosity, logging.DEBUG))
    logger.propagate = False
    logger.addHandler(_handler)
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(logging.INFO if verbosity >= VERBOSE else logging.ERROR)
    for key in added:
        os.environ[key] = QUIET_ENV[key]
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)
        logger.removeHandler(_handler)
        logger.propagate = propagate
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)
