"""``/metrics``: the autoscaling and health signals in the Prometheus text format (BP-5, OPS-1).

A broker queue of depth 0 says nothing while 10,000 jobs wait in PostgreSQL, so this reads
the authority: the durable runnable backlog, how long the oldest eligible job has waited,
the outbox relay's lag, and each provider pool's real headroom in the shared limiter.

Every number is computed at scrape time from PostgreSQL and Redis (no per-process counters:
web processes are many and short-lived). Labels are bounded sets — job states, configured
pool names, limit dimensions — never job, tenant or document ids (OPS-2).

Cost with 1,000,000 jobs (a scrape must stay in milliseconds):
- Pending states (ACCEPTED, READY, RETRY_SCHEDULED, RUNNING) are counted exactly through
  their partial indexes (job_pending_deadline_idx, job_runnable_idx, job_running_tenant_idx),
  but at most ``EXACT_COUNT_CAP`` rows each: past that the planner's estimate is reported.
- The big terminal states (and REVIEW_REQUIRED) have no index by state — one would cover most
  of the table — so above ``EXACT_COUNT_CAP`` rows in the table they come from the planner's
  estimate (pg_class size × pg_stats frequencies, as fresh as autovacuum's last ANALYZE).
  A small table is simply counted.
- The oldest eligible job is the first entry of job_runnable_idx (available_at, id).
- The outbox lag is the first entry of outbox_unpublished_idx.

Access: not the API's tokens (a scraper is not a tenant) but restricted — a loopback client
that did not come through a proxy, or ``Authorization: Bearer <settings.METRICS_TOKEN>``.
"""
from __future__ import annotations

import hmac
import ipaddress
import json
import math
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from extraction.capacity import limiter
from extraction.capacity.plan import configured_pools
from extraction.models import JobState
from extraction.outbox.relay import publish_lag_seconds

from config.problems import PROBLEM_CONTENT_TYPE, problem_body

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Counted exactly up to this many rows; estimated past it.
EXACT_COUNT_CAP = 100_000
# A scrape that cannot finish quickly is cancelled rather than piling up behind a slow disk.
SCRAPE_STATEMENT_TIMEOUT_MS = 5000

_PENDING = (JobState.ACCEPTED, JobState.READY, JobState.RETRY_SCHEDULED, JobState.RUNNING)
_ELIGIBLE_WHERE = "state IN ('READY', 'RETRY_SCHEDULED') AND available_at <= now() AND deadline_at > now()"


@dataclass(frozen=True)
class Sample:
    value: float
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Metric:
    name: str
    help: str
    samples: list[Sample] = field(default_factory=list)
    kind: str = "gauge"


# --- access -------------------------------------------------------------------------------------

def _has_metrics_token(request: HttpRequest) -> bool:
    token = getattr(settings, "METRICS_TOKEN", "") or ""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def _is_local_client(request: HttpRequest) -> bool:
    try:
        loopback = ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False
    # A reverse proxy on the same host connects from loopback on behalf of anyone: a request
    # it forwarded is not local.
    forwarded = any(h in request.headers for h in ("Forwarded", "X-Forwarded-For", "X-Real-Ip"))
    return loopback and not forwarded


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not (_has_metrics_token(request) or _is_local_client(request)):
        body = problem_body(slug="permission-denied", title="Permission denied", status_code=403,
                            detail="Metrics are served to loopback clients or with the metrics bearer token.",
                            instance=request.path)
        return JsonResponse(body, status=403, content_type=PROBLEM_CONTENT_TYPE)
    return HttpResponse(render(collect()), content_type=CONTENT_TYPE)


# --- collection -------------------------------------------------------------------------------

def collect() -> list[Metric]:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('statement_timeout', %s, true)", [str(SCRAPE_STATEMENT_TIMEOUT_MS)])
        metrics = _job_metrics(cursor)
        metrics += _outbox_metrics(cursor)
    return metrics + _pool_metrics()


def _job_metrics(cursor) -> list[Metric]:
    by_state = _jobs_by_state(cursor)
    eligible = _bounded_count(cursor, f"SELECT 1 FROM extraction_jobs WHERE {_ELIGIBLE_WHERE}", [])
    # min(available_at) over job_runnable_idx: the index's first entry that passes the filter.
    cursor.execute(f"SELECT extract(epoch FROM now() - min(available_at)) FROM extraction_jobs WHERE {_ELIGIBLE_WHERE}")
    oldest = cursor.fetchone()[0]
    return [
        Metric("extraction_jobs", "Jobs by state. Pending states are exact up to "
               f"{EXACT_COUNT_CAP:,}; terminal states in a large table are the planner's estimate.",
               [Sample(count, (("state", state),)) for state, count in by_state.items()]),
        Metric("extraction_runnable_jobs", "Durable runnable backlog: READY + RETRY_SCHEDULED jobs.",
               [Sample(by_state[JobState.READY] + by_state[JobState.RETRY_SCHEDULED])]),
        Metric("extraction_eligible_jobs", "Runnable jobs whose available_at has come (claimable now).",
               [Sample(eligible)]),
        Metric("extraction_oldest_eligible_job_age_seconds",
               "How long the oldest claimable job has been eligible (since its available_at); 0 when none.",
               [Sample(max(0.0, float(oldest)) if oldest is not None else 0.0)]),
    ]


def _jobs_by_state(cursor) -> dict[str, float]:
    counts = {state: 0.0 for state in JobState.values}
    # Small or large is decided by a bounded scan, not by the planner's row estimate, which can
    # be stale (a table emptied since its last ANALYZE still "has" its old rows).
    cursor.execute("SELECT count(*) FROM (SELECT 1 FROM extraction_jobs LIMIT %s) AS bounded", [EXACT_COUNT_CAP + 1])
    if int(cursor.fetchone()[0]) <= EXACT_COUNT_CAP:
        cursor.execute("SELECT state, count(*) FROM extraction_jobs GROUP BY state")
        counts.update({state: float(n) for state, n in cursor.fetchall()})
        return counts
    for state in JobState.values:
        sql, params = "SELECT 1 FROM extraction_jobs WHERE state = %s", [state]
        counts[state] = (_bounded_count(cursor, sql, params) if state in _PENDING
                         else float(_planner_rows(cursor, sql, params)))
    return counts


def _bounded_count(cursor, sql: str, params: list[Any]) -> float:
    """Exact up to EXACT_COUNT_CAP rows of ``sql``, the planner's estimate past it."""
    cursor.execute(f"SELECT count(*) FROM ({sql} LIMIT %s) AS bounded", [*params, EXACT_COUNT_CAP + 1])
    exact = int(cursor.fetchone()[0])
    if exact <= EXACT_COUNT_CAP:
        return float(exact)
    return float(max(exact, _planner_rows(cursor, sql, params)))


def _planner_rows(cursor, sql: str, params: list[Any]) -> int:
    cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
    plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


def _outbox_metrics(cursor) -> list[Metric]:
    unpublished = _bounded_count(cursor, "SELECT 1 FROM outbox_events WHERE published_at IS NULL", [])
    return [
        Metric("extraction_outbox_publish_lag_seconds",
               "Age of the oldest unpublished outbox event; 0 when the relay is caught up.",
               [Sample(publish_lag_seconds())]),
        Metric("extraction_outbox_unpublished_events", "Outbox events not yet confirmed by the broker.",
               [Sample(unpublished)]),
    ]


def _pool_metrics() -> list[Metric]:
    up = Metric("extraction_pool_limiter_up", "1 when the pool's shared limiter (Redis) answered this scrape.")
    in_flight = Metric("extraction_pool_in_flight",
                       "Calls in flight in the pool (KV-cache tokens in flight for kv_tokens pools).")
    requests = Metric("extraction_pool_requests_last_minute", "Requests admitted in the last 60 s.")
    tokens = Metric("extraction_pool_tokens_last_minute",
                    "Tokens reserved or reconciled in the last 60 s (the TPM window).")
    limit = Metric("extraction_pool_limit", "The pool's configured limit per dimension (rpm, tpm, in_flight).")
    headroom = Metric("extraction_pool_headroom",
                      "Limit minus use per dimension; negative after a limit was lowered below current use.")
    cooldown = Metric("extraction_pool_cooldown_remaining_seconds",
                      "Seconds left in the pool-wide cooldown after a provider 429; 0 when none.")
    for pool in configured_pools():
        limits = limiter.pool_limits(pool)
        in_flight_limit = limits.kv_cache_tokens if limits.budget == "kv_tokens" else limits.max_in_flight
        dimensions = {"rpm": limits.requests_per_minute, "tpm": limits.tokens_per_minute, "in_flight": in_flight_limit}
        for dimension, value in dimensions.items():
            limit.samples.append(Sample(value, (("pool", pool), ("dimension", dimension))))
        snapshot = limiter.snapshot(limits)
        up.samples.append(Sample(0 if snapshot is None else 1, (("pool", pool),)))
        if snapshot is None:
            continue  # no usage figures are better than made-up ones
        label = (("pool", pool),)
        in_flight.samples.append(Sample(snapshot.in_flight, label))
        requests.samples.append(Sample(snapshot.requests_last_minute, label))
        tokens.samples.append(Sample(snapshot.tokens_last_minute, label))
        cooldown.samples.append(Sample(snapshot.cooldown_remaining_seconds, label))
        used = {"rpm": snapshot.requests_last_minute, "tpm": snapshot.tokens_last_minute,
                "in_flight": snapshot.in_flight}
        for dimension, value in dimensions.items():
            headroom.samples.append(Sample(value - used[dimension], (("pool", pool), ("dimension", dimension))))
    return [up, in_flight, requests, tokens, limit, headroom, cooldown]


# --- the text format ---------------------------------------------------------------------------

def render(metrics: list[Metric]) -> str:
    lines: list[str] = []
    for metric in metrics:
        lines.append(f"# HELP {metric.name} {_escape_help(metric.help)}")
        lines.append(f"# TYPE {metric.name} {metric.kind}")
        for sample in metric.samples:
            labels = ",".join(f'{key}="{_escape_label(value)}"' for key, value in sample.labels)
            lines.append(f"{metric.name}{{{labels}}} {_format_value(sample.value)}" if labels
                         else f"{metric.name} {_format_value(sample.value)}")
    return "\n".join(lines) + "\n"


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))
