"""Webhook delivery as ``/metrics`` reports it (config.metrics calls ``collect``): the backlog
and how late it runs, the endpoints by status and circuit breaker state, and the answers
receivers gave recently, all read from the delivery tables at scrape time.

Endpoints are counted per status and per breaker state, never labelled by endpoint (OPS-2).
The receivers' answers are a window over the attempt ledger rather than a counter: the ledger
answers it exactly through its primary key with a bounded read, and every process's
deliveries are in it, whereas a counter of the whole ledger would scan it at every scrape.
"""

from __future__ import annotations

from pathlib import Path

from django.db.backends.utils import CursorWrapper
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from config.metrics import bounded_count, exact_count_cap
from config.sql import load_statements
from delivery.models import CircuitState, DeliveryState, EndpointStatus

SQL = load_statements(Path(__file__).with_suffix(".sql"))

# The window of delivery_recent_attempts: long enough to see "repeated" at a low rate of events.
RECENT_ATTEMPTS_WINDOW_SECONDS = 900
# A receiver's answer, by what it means for the sender (dispatch.py acts on the same classes):
# refused our signature (401/403), asked us to wait (429), other 2xx/3xx/4xx/5xx, or no HTTP
# answer at all (timeout, refused connection, refused address).
STATUS_CLASSES = ("2xx", "3xx", "401_403", "429", "4xx", "5xx", "none")


def status_class(http_status: int | None) -> str:
    if http_status is None:
        return "none"
    if http_status in (401, 403):
        return "401_403"
    if http_status == 429:
        return "429"
    return f"{http_status // 100}xx"


def collect(cursor: CursorWrapper) -> list[Metric]:
    return [*_backlog(cursor), *_endpoints(cursor), _recent_attempts(cursor)]


def _backlog(cursor: CursorWrapper) -> list[Metric]:
    deliveries = GaugeMetricFamily(
        "delivery_deliveries",
        f"Webhook deliveries not yet done, by state (pending, sending); exact up to {exact_count_cap():,}.",
        labels=["state"],
    )
    for state in (DeliveryState.PENDING, DeliveryState.SENDING):
        deliveries.add_metric(
            [state.value],
            bounded_count(
                cursor,
                count_sql=SQL["count_deliveries_in_state_bounded"],
                estimate_sql=SQL["estimate_deliveries_in_state"],
                params={"state": state.value},
            ),
        )
    due = bounded_count(
        cursor,
        count_sql=SQL["count_due_deliveries_bounded"],
        estimate_sql=SQL["estimate_due_deliveries"],
        params={},
    )
    cursor.execute(SQL["oldest_due_age"])
    oldest = cursor.fetchone()[0]
    return [
        deliveries,
        GaugeMetricFamily(
            "delivery_due_deliveries", "Pending webhook deliveries whose next attempt is due now.", value=due
        ),
        GaugeMetricFamily(
            "delivery_oldest_due_age_seconds",
            "How long the longest-overdue pending delivery has been due (since its next_attempt_at); 0 when none.",
            value=max(0.0, float(oldest)) if oldest is not None else 0.0,
        ),
    ]


def _endpoints(cursor: CursorWrapper) -> list[Metric]:
    by_status = dict.fromkeys(EndpointStatus.values, 0)
    by_breaker = dict.fromkeys(CircuitState.values, 0)
    auth_failing = 0
    cursor.execute(SQL["endpoints_by_status_and_circuit"])
    for status, circuit, count, failing_auth in cursor.fetchall():
        by_status[status] += count
        if status != EndpointStatus.DISABLED:  # a disabled endpoint is sent nothing: its breaker is moot
            by_breaker[circuit] += count
            auth_failing += failing_auth
    statuses = GaugeMetricFamily(
        "delivery_endpoints_by_status",
        "Webhook endpoints by status (flagged: repeated 401/403, held until verified again).",
        labels=["status"],
    )
    for status, count in by_status.items():
        statuses.add_metric([status], count)
    breakers = GaugeMetricFamily(
        "delivery_endpoints_by_breaker_state",
        "Webhook endpoints that are not disabled, by circuit breaker state (open: nothing is sent).",
        labels=["state"],
    )
    for state, count in by_breaker.items():
        breakers.add_metric([state], count)
    return [
        statuses,
        breakers,
        GaugeMetricFamily(
            "delivery_endpoints_auth_failing",
            "Webhook endpoints, not disabled, whose latest answers were 401/403 in a row (a 2xx resets them).",
            value=auth_failing,
        ),
    ]


def _recent_attempts(cursor: CursorWrapper) -> Metric:
    by_class = dict.fromkeys(STATUS_CLASSES, 0)
    cursor.execute(
        SQL["recent_attempts_by_status"],
        {
            "limit": exact_count_cap(),
            "window": RECENT_ATTEMPTS_WINDOW_SECONDS,
        },
    )
    for http_status, count in cursor.fetchall():
        by_class[status_class(http_status)] += count
    recent = GaugeMetricFamily(
        "delivery_recent_attempts",
        f"Webhook delivery attempts started in the last {RECENT_ATTEMPTS_WINDOW_SECONDS // 60} minutes that "
        "ended, by the receiver's answer (401_403: our signature refused; none: no HTTP answer); "
        f"counted among the newest {exact_count_cap():,} attempts.",
        labels=["status_class"],
    )
    for name, count in by_class.items():
        recent.add_metric([name], count)
    return recent
