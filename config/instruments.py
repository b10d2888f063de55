"""The service's in-process instruments: counters and histograms that events add to, in the
process where they happen (OPS-1). ``/metrics`` (config.metrics) shows them beside the figures
it reads from PostgreSQL, Redis and RabbitMQ at scrape time.

Multiprocess mode: with ``PROMETHEUS_MULTIPROC_DIR`` set (the Procfile sets it for the web,
worker, ingress, delivery and scheduler processes; bin/run empties it at start), prometheus_client
keeps each process's values in files of that directory, and a scrape of any web process sums
the files of every process on the host, living or dead, so a count survives the gunicorn worker
or Celery process that made it. prometheus_client picks file-backed values when it is first
imported, so the variable belongs in the process's environment, not in settings. Without it,
each process counts for itself and a scrape shows the serving process's own values.

Why these figures are counted here and not read from the database at scrape time (the
preference wherever PostgreSQL or Redis holds the figure exactly and cheaply):

- attempts by outcome: the attempt ledger holds every outcome, but it grows without bound and
  has no index by outcome, so an exact count is a scan of the whole ledger at every scrape (and
  a planner's estimate, the bounded counts' fallback, is no counter: it can go down). The count
  is taken when the ledger row commits, so a rolled-back attempt is never counted.
- provider 429s by pool: the ledger does not record the pool an attempt's call was made in.
- accept latency: no row records how long the request took.
- accept to the end of automatic processing: the figure is one subtraction per job when it
  ends, and a histogram of it from the table would scan every finished job.
- review reasons: each result's reasons are inside its validation JSON, which no index reads;
  counting them at scrape time would read every result.

Labels are bounded sets (outcomes, pool names, HTTP status codes, job states), never job,
tenant, endpoint or document ids (OPS-2).
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics

# The ``_created`` series would add a timestamp per label set and per process that no
# dashboard or alert reads (multiprocess mode does not export them either).
disable_created_metrics()

MULTIPROC_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
_multiproc_dir = os.environ.get(MULTIPROC_DIR_VARIABLE)
if _multiproc_dir:
    # A process started without bin/run still counts (and never wipes what others wrote).
    os.makedirs(_multiproc_dir, exist_ok=True)

# This process's instruments, exported as they are when no multiprocess directory is set.
REGISTRY = CollectorRegistry()

ATTEMPTS = Counter(
    "extraction_attempts",
    "Extraction attempts ended, by the outcome recorded in the attempt ledger. A reaped attempt "
    "whose worker later returns counts again as stale_completion, the ledger's final word.",
    ["outcome"],
    registry=REGISTRY,
)
PROVIDER_RATE_LIMITED = Counter(
    "extraction_provider_rate_limited",
    "Provider calls refused for the provider's rate limit (HTTP 429), by provider pool.",
    ["pool"],
    registry=REGISTRY,
)
ACCEPT_LATENCY = Histogram(
    "extraction_accept_latency_seconds",
    "Time to answer POST /api/v1/extraction-jobs, from the first middleware to the response, by status code.",
    ["status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=REGISTRY,
)
REVIEW_REASONS = Counter(
    "extraction_review_reasons",
    "Jobs the automatic judgement sent to review, counted once per blocking reason when the "
    "verdict commits: line_items_incomplete (the lines add up to less than the net total: one "
    "dropped) and line_items_exceed (to more: one invented or read twice) among them.",
    ["reason"],
    registry=REGISTRY,
)
ACCEPT_TO_TERMINAL = Histogram(
    "extraction_accept_to_terminal_seconds",
    "Time from a job's acceptance to the end of its automatic processing, by the state it ended "
    "in: SUCCEEDED, REVIEW_REQUIRED (a reviewer decides from there), FAILED_TERMINAL or SPLIT (its "
    "parts are jobs of their own). Observed "
    "once per run of a job, by the process that moved it.",
    ["state"],
    buckets=(1, 2, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400),
    registry=REGISTRY,
)


def multiproc_dir() -> str | None:
    """The directory the processes of this host write their values to, if any."""
    return os.environ.get(MULTIPROC_DIR_VARIABLE) or None
