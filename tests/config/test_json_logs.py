"""JSON log lines carry an RFC 3339 UTC timestamp with milliseconds, taken from the record."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from config.logging import JsonFormatter

LOGGED_AT = datetime(2026, 12, 1, 9, 41, 7, 123456, tzinfo=UTC).timestamp()


@pytest.fixture
def kolkata_local_time(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A host whose local zone is UTC+05:30, so a local-time stamp cannot pass for UTC."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _record(created: float) -> logging.LogRecord:
    record = logging.LogRecord("extraction.ingress", logging.INFO, __file__, 1, "taken in", None, None)
    record.created = created
    record.msecs = (created - int(created)) * 1000
    record.job_id = "8d1e"
    return record


def test_timestamp_is_utc_with_milliseconds_from_the_record(kolkata_local_time: None) -> None:
    line = json.loads(JsonFormatter().format(_record(LOGGED_AT)))

    assert line["ts"] == "2026-12-01T09:41:07.123Z"
    assert line["msg"] == "taken in"
    assert line["job_id"] == "8d1e"


def test_a_whole_second_keeps_its_three_digits(kolkata_local_time: None) -> None:
    whole_second = datetime(2026, 12, 1, 23, 59, 59, tzinfo=UTC).timestamp()

    assert json.loads(JsonFormatter().format(_record(whole_second)))["ts"] == "2026-12-01T23:59:59.000Z"
