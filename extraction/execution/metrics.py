"""The job backlog as ``/metrics`` reports it (config.metrics calls ``collect``): counted in
PostgreSQL, the authority, since a broker queue of depth 0 says nothing about waiting jobs."""

from __future__ import annotations

from pathlib import Path

from django.db.backends.utils import CursorWrapper
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from config.metrics import bounded_count, exact_count_cap, planner_rows
from config.sql import load_statements
from extraction.models import PENDING_STATES, JobState

SQL = load_statements(Path(__file__).with_suffix(".sql"))


def collect(cursor: CursorWrapper) -> list[Metric]:
    by_state = jobs_by_state(cursor)
    eligible = bounded_count(
        cursor, count_sql=SQL["count_eligible_jobs_bounded"], estimate_sql=SQL["estimate_eligible_jobs"], params={}
    )
    cursor.execute(SQL["oldest_eligible_age"])
    oldest = cursor.fetchone()[0]
    jobs = GaugeMetricFamily(
        "extraction_jobs",
        "Jobs by state. Pending states are exact up to "
        f"{exact_count_cap():,}; terminal states in a large table are the planner's estimate.",
        labels=["state"],
    )
    for state, count in by_state.items():
        jobs.add_metric([state], count)
    return [
        jobs,
        GaugeMetricFamily(
            "extraction_runnable_jobs",
            "Durable runnable backlog: READY + RETRY_SCHEDULED jobs.",
            value=by_state[JobState.READY] + by_state[JobState.RETRY_SCHEDULED],
        ),
        GaugeMetricFamily(
            "extraction_eligible_jobs", "Runnable jobs whose available_at has come (claimable now).", value=eligible
        ),
        GaugeMetricFamily(
            "extraction_oldest_eligible_job_age_seconds",
            "How long the oldest claimable job has been eligible (since its available_at); 0 when none.",
            value=max(0.0, float(oldest)) if oldest is not None else 0.0,
        ),
    ]


def jobs_by_state(cursor: CursorWrapper) -> dict[str, float]:
    """Exact counts in a small table. In a large one, pending states are counted through their
    partial indexes (bounded), and the big terminal states, which have no index by state (one
    would cover most of the table), come from the planner's estimate."""
    counts = {state: 0.0 for state in JobState.values}
    cap = exact_count_cap()
    cursor.execute(SQL["bounded_job_count"], {"cap": cap + 1})
    if int(cursor.fetchone()[0]) <= cap:
        cursor.execute(SQL["jobs_by_state"])
        counts.update({state: float(n) for state, n in cursor.fetchall()})
        return counts
    for state in JobState.values:
        params = {"state": state}
        counts[state] = (
            bounded_count(
                cursor,
                count_sql=SQL["count_jobs_in_state_bounded"],
                estimate_sql=SQL["estimate_jobs_in_state"],
                params=params,
            )
            if state in PENDING_STATES
            else float(planner_rows(cursor, SQL["estimate_jobs_in_state"], params))
        )
    return counts
