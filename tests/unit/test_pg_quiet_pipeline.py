"""psycopg's warning of a pipeline that ended aborted, after the write path's own expected
failure inside it, is not printed; any other warning of psycopg's is."""

from __future__ import annotations

import logging

import pytest

psycopg = pytest.importorskip("psycopg")

from engram.ledger.postgres_write import QuietAbortedPipeline  # noqa: E402


def test_only_the_aborted_pipeline_warning_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("psycopg")
    assert any(isinstance(f, QuietAbortedPipeline) for f in logger.filters)
    aborted = psycopg.errors.PipelineAborted("pipeline aborted")
    with caplog.at_level(logging.WARNING, logger="psycopg"):
        logger.warning("error ignored terminating %r: %s", "<psycopg.Pipeline [INERROR]>", aborted)
        logger.warning("error ignored terminating %r: %s", "<psycopg.Copy>", ValueError("x"))
        logger.warning("connection lost: %s", aborted)
    assert [r.getMessage() for r in caplog.records] == [
        "error ignored terminating '<psycopg.Copy>': x",
        "connection lost: pipeline aborted",
    ]
