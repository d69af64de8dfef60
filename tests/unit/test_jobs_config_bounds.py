"""Job settings as the config file gives them (ADR 0160): the documented example is taken as
written, and a period the schedule's date arithmetic cannot hold is refused with the key it
was given under, where it crashed the daemon."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from engram.jobs import JobConfigError
from engram.jobs.settings import MAX_DURATION, duration, jobs_from_config

DOCS = Path(__file__).parents[2] / "docs" / "jobs.md"


def test_the_documented_job_tables_are_accepted() -> None:
    block = re.search(r"```toml\n(\[jobs\..*?)```", DOCS.read_text(), re.S)
    assert block is not None
    config = tomllib.loads(block[1])["jobs"]
    names = {type(job).__name__ for job in jobs_from_config(config)}
    assert {"DreamJob", "ArchiveJob", "HygieneJob", "SkillJob", "PostProjectJob"} <= names


@pytest.mark.parametrize(
    "value", ["3000000d", "99999999999d", 9223372036854775807, float("inf"), "0s", -1, True]
)
def test_a_period_out_of_range_is_refused_naming_its_key(value: object) -> None:
    with pytest.raises(JobConfigError, match=r"\[jobs.sleep\] every must be .* at most 36500d"):
        jobs_from_config({"sleep": {"every": value}})


def test_a_hundred_years_is_the_longest_period() -> None:
    assert duration("36500d", "x").total_seconds() == MAX_DURATION
    with pytest.raises(JobConfigError):
        duration(MAX_DURATION + 1, "x")
