"""JSON log lines carry an RFC 3339 UTC timestamp with milliseconds, taken from the record, and
the trace and span ids of the span they were logged in when it records (OPS-2)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

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


def test_a_line_logged_in_a_recording_span_carries_its_trace_and_span_ids() -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("extraction.attempt") as span:
        line = json.loads(JsonFormatter().format(_record(LOGGED_AT)))

    context = span.get_span_context()
    assert line["trace_id"] == f"{context.trace_id:032x}" and len(line["trace_id"]) == 32
    assert line["span_id"] == f"{context.span_id:016x}" and len(line["span_id"]) == 16
    assert line["job_id"] == "8d1e"  # beside the job's own fields


def test_a_line_outside_a_recording_span_has_no_trace_fields() -> None:
    outside = json.loads(JsonFormatter().format(_record(LOGGED_AT)))
    with TracerProvider(sampler=ALWAYS_OFF).get_tracer("test").start_as_current_span("unsampled"):
        unsampled = json.loads(JsonFormatter().format(_record(LOGGED_AT)))

    assert {"trace_id", "span_id"} & (set(outside) | set(unsampled)) == set()
