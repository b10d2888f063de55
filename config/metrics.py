"""``/metrics``: the autoscaling, health and latency signals in the Prometheus text format
(BP-5, OPS-1), written by prometheus_client.

A scrape collects, in this order:

1. Figures the database and the shared limiter hold: the collectors each app lists in
   ``METRICS_COLLECTORS``, each called with a cursor in one read-only transaction whose
   statements a slow disk cannot hold up for long. Counts are exact up to
   ``METRICS_EXACT_COUNT_CAP`` rows, then the planner's estimate, so a scrape of a table with
   millions of rows stays in milliseconds. Web processes are many and short-lived: what a table
   knows is read from the table, the same in every process's scrape.
2. Figures of other servers over the network (``METRICS_SERVICE_COLLECTORS``: RabbitMQ's queue
   depths, local model servers), after that transaction, so their waits hold no transaction.
3. The in-process counters and histograms (config.instruments): with ``PROMETHEUS_MULTIPROC_DIR``
   set, summed over every process of this host; otherwise this process's own.

A collector returns prometheus_client metric families (``GaugeMetricFamily``,
``CounterMetricFamily``). Labels are bounded sets (states, outcomes, pool names, limit
dimensions, queue names, HTTP status codes and classes), never job, tenant, endpoint or
document ids (OPS-2).

Access: not the API's tokens (a scraper is not a tenant) but restricted — a loopback client
that did not come through a proxy, or ``Authorization: Bearer <settings.METRICS_TOKEN>``.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.module_loading import import_string
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

from config import instruments
from config.problems import PROBLEM_CONTENT_TYPE, problem_body

# A scrape that cannot finish quickly is cancelled rather than piling up behind a slow disk.
SCRAPE_STATEMENT_TIMEOUT_MS = 5000

DatabaseCollector = Callable[[CursorWrapper], Iterable[Metric]]
ServiceCollector = Callable[[], Iterable[Metric]]


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
    # The classic text format, or OpenMetrics for a scraper that asks for it.
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encode(Scrape()), content_type=content_type)


# --- collection -------------------------------------------------------------------------------


class Scrape:
    """One scrape's figures, as the collector prometheus_client's encoders read."""

    def collect(self) -> Iterator[Metric]:
        yield from database_figures()
        for service_collector in service_collectors():
            yield from service_collector()
        yield from in_process_figures()


def database_figures() -> list[Metric]:
    """Every collector the settings list (``METRICS_COLLECTORS``), in one transaction that only
    reads and whose statements time out; the families are all read before it ends, so the
    encoder writes them with no transaction open."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('statement_timeout', %s, true)", [str(SCRAPE_STATEMENT_TIMEOUT_MS)])
        families: list[Metric] = []
        for collector in collectors():
            families += collector(cursor)
    return families


def in_process_figures() -> Iterable[Metric]:
    """The counters and histograms of every process of this host (multiprocess mode), or of
    this one."""
    path = instruments.multiproc_dir()
    if path is None:
        return instruments.REGISTRY.collect()
    # A registry of its own: the files hold this process's values too, which the module's
    # registry would otherwise report a second time.
    return MultiProcessCollector(CollectorRegistry(), path=path).collect()


@functools.cache
def collectors() -> tuple[DatabaseCollector, ...]:
    return tuple(import_string(path) for path in settings.METRICS_COLLECTORS)


@functools.cache
def service_collectors() -> tuple[ServiceCollector, ...]:
    return tuple(import_string(path) for path in settings.METRICS_SERVICE_COLLECTORS)


# --- bounded counts, for the collectors ------------------------------------------------------------


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
