"""The outbox relay's lag as ``/metrics`` reports it (config.metrics calls ``collect``)."""
from __future__ import annotations

from django.db.backends.utils import CursorWrapper

from config.metrics import Metric, Sample, bounded_count
from extraction.outbox.relay import publish_lag_seconds


def collect(cursor: CursorWrapper) -> list[Metric]:
    # outbox_unpublished_idx holds exactly these rows.
    unpublished = bounded_count(cursor, "SELECT 1 FROM outbox_events WHERE published_at IS NULL", [])
    return [
        Metric("extraction_outbox_publish_lag_seconds",
               "Age of the oldest unpublished outbox event; 0 when the relay is caught up.",
               [Sample(publish_lag_seconds())]),
        Metric("extraction_outbox_unpublished_events", "Outbox events not yet confirmed by the broker.",
               [Sample(unpublished)]),
    ]
