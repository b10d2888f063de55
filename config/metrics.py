"""``/metrics``: the autoscaling and health signals in the Prometheus text format (BP-5, OPS-1).

Every number is computed at scrape time by the collectors each app registers in
``METRICS_COLLECTORS``, from PostgreSQL and Redis (no per-process counters: web processes are
many and short-lived). Labels are bounded sets (job states, pool names, limit dimensions), never
job, tenant or document ids (OPS-2). Counts are exact up to ``METRICS_EXACT_COUNT_CAP`` rows, then the
planner's estimate, so a scrape of a table with millions of rows stays in milliseconds.

Access: not the API's tokens (a scraper is not a tenant) but restricted — a loopback client
that did not come through a proxy, or ``Authorization: Bearer <settings.METRICS_TOKEN>``.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.module_loading import import_string
from django.views.decorators.http import require_GET

from config.problems import PROBLEM_CONTENT_TYPE, problem_body

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# A scrape that cannot finish quickly is cancelled rather than piling up behind a slow disk.
SCRAPE_STATEMENT_TIMEOUT_MS = 5000


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
        body = problem_body(
            slug="permission-denied",
            title="Permission denied",
            status_code=403,
            detail="Metrics are served to loopback clients or with the metrics bearer token.",
            instance=request.path,
        )
        return JsonResponse(body, status=403, content_type=PROBLEM_CONTENT_TYPE)
    return HttpResponse(render(collect()), content_type=CONTENT_TYPE)


# --- collection -------------------------------------------------------------------------------


def collect() -> list[Metric]:
    """Every collector the settings list (``METRICS_COLLECTORS``), in one read-only transaction
    whose statements a slow disk cannot hold up for long; then the collectors that ask another
    server (``METRICS_SERVICE_COLLECTORS``), after it, so their network waits hold no transaction."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('statement_timeout', %s, true)", [str(SCRAPE_STATEMENT_TIMEOUT_MS)])
        metrics: list[Metric] = []
        for collector in collectors():
            metrics += collector(cursor)
    for service_collector in service_collectors():
        metrics += service_collector()
    return metrics


@functools.cache
def collectors() -> tuple[Callable[[CursorWrapper], list[Metric]], ...]:
    return tuple(import_string(path) for path in settings.METRICS_COLLECTORS)


@functools.cache
def service_collectors() -> tuple[Callable[[], list[Metric]], ...]:
    return tuple(import_string(path) for path in settings.METRICS_SERVICE_COLLECTORS)


def exact_count_cap() -> int:
    """Rows counted exactly before a count becomes the planner's estimate."""
    return int(settings.METRICS_EXACT_COUNT_CAP)


def bounded_count(cursor: CursorWrapper, *, count_sql: str, estimate_sql: str, params: Mapping[str, Any]) -> float:
    """Exact up to ``exact_count_cap()`` rows, the planner's estimate past it.

    ``count_sql`` counts the set with a ``LIMIT %(limit)s`` inside (``cap + 1`` is passed, so
    the count says whether the cap was passed); ``estimate_sql`` is ``EXPLAIN (FORMAT JSON)``
    of the same set's query. Both are named statements of the collector's ``.sql`` file and
    take ``params``."""
    cap = exact_count_cap()
    cursor.execute(count_sql, {**params, "limit": cap + 1})
    exact = int(cursor.fetchone()[0])
    if exact <= cap:
        return float(exact)
    return float(max(exact, planner_rows(cursor, estimate_sql, params)))


def planner_rows(cursor: CursorWrapper, estimate_sql: str, params: Mapping[str, Any]) -> int:
    """The planner's row estimate from ``estimate_sql``, an ``EXPLAIN (FORMAT JSON)`` statement."""
    cursor.execute(estimate_sql, params)
    plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


# --- the text format ---------------------------------------------------------------------------


def render(metrics: list[Metric]) -> str:
    lines: list[str] = []
    for metric in metrics:
        lines.append(f"# HELP {metric.name} {_escape_help(metric.help)}")
        lines.append(f"# TYPE {metric.name} {metric.kind}")
        for sample in metric.samples:
            labels = ",".join(f'{key}="{_escape_label(value)}"' for key, value in sample.labels)
            lines.append(
                f"{metric.name}{{{labels}}} {_format_value(sample.value)}"
                if labels
                else f"{metric.name} {_format_value(sample.value)}"
            )
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
