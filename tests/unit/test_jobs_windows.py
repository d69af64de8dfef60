"""Window ids are part of the ledger's contract: a re-run after an upgrade must find them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from engram.jobs import JobConfigError, Window, boundary

T = datetime(2026, 1, 1, tzinfo=UTC)


def test_event_ids_are_pinned_uuid5s_of_job_window_and_item() -> None:
    window = Window("sleep", T, T + timedelta(hours=1))
    # uuid5(NAMESPACE, "sleep|<start, UTC, microseconds>|<end, likewise>|x")
    assert window.event_id("x") == "3133d488-5809-5f1b-9959-6d869e4bd0d6"
    assert window.completed_id == window.event_id("job.completed")
    # The same instant in another zone is the same window; another trigger too.
    paris = timezone(timedelta(hours=1))
    same = Window("sleep", T.astimezone(paris), (T + timedelta(hours=1)).astimezone(paris), "hand")
    assert same.event_id("x") == window.event_id("x")
    assert Window("archive", T, T + timedelta(hours=1)).event_id("x") != window.event_id("x")
    assert Window("sleep", T, T + timedelta(hours=2)).event_id("x") != window.event_id("x")


def test_windows_refuse_naive_times_empty_spans_and_unknown_triggers() -> None:
    with pytest.raises(JobConfigError, match="timezone-aware"):
        Window("sleep", datetime(2026, 1, 1), T)
    with pytest.raises(JobConfigError, match="after its start"):
        Window("sleep", T, T - timedelta(seconds=1))
    with pytest.raises(JobConfigError, match="trigger"):
        Window("sleep", T, T + timedelta(hours=1), "cron")
    assert Window("sleep", T, T + timedelta(hours=1)).as_of == T + timedelta(
        hours=1, microseconds=-1
    )


def test_boundaries_are_multiples_of_the_period_since_the_epoch() -> None:
    assert boundary(T + timedelta(minutes=59, seconds=59), timedelta(hours=1)) == T
    assert boundary(T, timedelta(hours=1)) == T
    assert boundary(T + timedelta(hours=25), timedelta(days=1)) == T + timedelta(days=1)
    assert boundary(T + timedelta(seconds=7), timedelta(seconds=5)) == T + timedelta(seconds=5)
    with pytest.raises(JobConfigError, match="positive"):
        boundary(T, timedelta(0))
