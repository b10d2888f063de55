"""The outbox relay's lag as ``/metrics`` reports it (config.metrics calls ``collect``)."""

from __future__ import annotations

from pathlib import Path

from django.db.backends.utils import CursorWrapper
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from config.metrics import bounded_count
from config.sql import load_statements
from extraction.outbox.relay import publish_lag_seconds

SQL = load_statements(Path(__file__).with_suffix(".sql"))


def collect(cursor: CursorWrapper) -> list[Metric]:
    unpublished = bounded_count(
        cursor,
        count_sql=SQL["count_unpublished_events_bounded"],
        estimate_sql=SQL["estimate_unpublished_events"],
        params={},
    )
    return [
        GaugeMetricFamily(
            "extraction_outbox_publish_lag_seconds",
            "Age of the oldest unpublished outbox event; 0 when the relay is caught up.",
            value=publish_lag_seconds(),
        ),
        GaugeMetricFamily(
            "extraction_outbox_unpublished_events", "Outbox events not yet confirmed by the broker.", value=unpublished
        ),
    ]
