"""Print a line in pytest's terminal output from a fixture's teardown, past output capture."""

from __future__ import annotations

import pytest


def report(request: pytest.FixtureRequest, line: str) -> None:
    """Write ``line`` to the terminal (a differential suite's op count, say)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        reporter.write_line(line)
