"""The review queue as ``/metrics`` reports it (config.metrics calls ``collect``): how many
REVIEW_REQUIRED jobs wait for a reviewer and how long the oldest has waited, beside the
turnaround the service promises for them (OPS-4), so an alert compares the two."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db.backends.utils import CursorWrapper
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from config.sql import load_statements

SQL = load_statements(Path(__file__).with_suffix(".sql"))


def collect(cursor: CursorWrapper) -> list[Metric]:
    cursor.execute(SQL["review_queue"])
    waiting, oldest = cursor.fetchone()
    return [
        GaugeMetricFamily(
            "extraction_review_queue_jobs", "Jobs in REVIEW_REQUIRED, waiting for a reviewer's decision.", value=waiting
        ),
        GaugeMetricFamily(
            "extraction_review_queue_oldest_age_seconds",
            "How long the longest-waiting REVIEW_REQUIRED job has waited since it entered review; 0 when none.",
            value=max(0.0, float(oldest)) if oldest is not None else 0.0,
        ),
        GaugeMetricFamily(
            "extraction_review_turnaround_target_seconds",
            "The review SLO: a REVIEW_REQUIRED job is decided within this long (REVIEW_TURNAROUND_TARGET_SECONDS).",
            value=settings.REVIEW_TURNAROUND_TARGET_SECONDS,
        ),
    ]
