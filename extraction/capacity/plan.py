"""The capacity plan (CAP-1, CAP-3): how fast a provider pool can work off a backlog.

    attempt_capacity = min(RPM / 60, TPM / (60 × reserved_tokens), concurrency / mean_latency)
    job_capacity     = attempt_capacity / attempts_per_job
    drain time       = backlog / job_capacity, or backlog / (job_capacity − arrival_rate)

A kv_tokens pool's concurrency (BP-6) is ``kv_cache_tokens / reserved_tokens`` sequences. The
arithmetic is pure; :func:`plan_inputs_for_pool` says where each input came from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection

from config.sql import load_statements
from extraction.capacity import limiter
from extraction.models import AttemptOutcome, JobState
from extraction.providers.einvoice import PROVIDER_NAME as EINVOICE_PROVIDER

SQL = load_statements(Path(__file__).with_suffix(".sql"))

# What an operator would assume with nothing observed yet.
DEFAULT_MEAN_LATENCY_SECONDS = 15.0
DEFAULT_ATTEMPTS_PER_JOB = 1.10
# Statistics describe the recent past: a week-old latency says little about today's provider.
OBSERVATION_WINDOW_SECONDS = 3600.0
# ...and read a bounded sample of the newest attempts, so the plan stays cheap at 1M jobs.
OBSERVATION_SAMPLE_ATTEMPTS = 5000

# Outcomes whose latency is the time the provider took to answer.
_ANSWERED = (
    AttemptOutcome.SUCCEEDED,
    AttemptOutcome.REVIEW_REQUIRED,
    AttemptOutcome.INVALID_OUTPUT,
    AttemptOutcome.STALE_COMPLETION,
)
# Claims handed back before any model call: they spent no attempt (the job's counter is restored).
_UNSPENT = (AttemptOutcome.CAPACITY_DEFERRED, AttemptOutcome.SHUTDOWN, AttemptOutcome.RUNNING)
# Jobs whose model calls are over: their attempt count is final.
_FINISHED = (JobState.SUCCEEDED, JobState.FAILED_TERMINAL, JobState.REVIEW_REQUIRED)


# --- the arithmetic -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AttemptCapacity:
    """Model calls per second the pool sustains, and which of the three ceilings binds."""

    per_second: float
    binding: str  # "rpm" | "tpm" | "concurrency"
    rpm_term: float
    tpm_term: float
    concurrency_term: float


def attempt_capacity(
    *,
    requests_per_minute: float,
    tokens_per_minute: float,
    reserved_tokens: float,
    concurrency: float,
    mean_latency_seconds: float,
) -> AttemptCapacity:
    """CAP-3's attempt capacity. On a tie the first of rpm, tpm, concurrency is named."""
    for name, value in (
        ("requests_per_minute", requests_per_minute),
        ("tokens_per_minute", tokens_per_minute),
        ("reserved_tokens", reserved_tokens),
        ("concurrency", concurrency),
        ("mean_latency_seconds", mean_latency_seconds),
    ):
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value!r}")
    terms = {
        "rpm": requests_per_minute / 60,
        "tpm": tokens_per_minute / (60 * reserved_tokens),
        "concurrency": concurrency / mean_latency_seconds,
    }
    binding = min(terms, key=lambda name: terms[name])
    return AttemptCapacity(terms[binding], binding, terms["rpm"], terms["tpm"], terms["concurrency"])


def kv_cache_concurrency(*, kv_cache_tokens: float, reserved_tokens: float) -> float:
    """BP-6: sequences a KV-cache budget holds at once when each reserves ``reserved_tokens``."""
    if not reserved_tokens > 0:
        raise ValueError("reserved_tokens must be positive")
    return kv_cache_tokens / reserved_tokens


def job_capacity(attempts_per_second: float, *, attempts_per_job: float) -> float:
    """Jobs per second: retries spend attempts too."""
    if not attempts_per_job >= 1:
        raise ValueError(f"attempts_per_job is at least 1, got {attempts_per_job!r}")
    return attempts_per_second / attempts_per_job


def drain_seconds(backlog: float, *, jobs_per_second: float, arrival_rate: float = 0.0) -> float | None:
    """Seconds until ``backlog`` jobs are worked off while ``arrival_rate`` jobs/s keep coming;
    None when they never are (CAP-1: arrivals at or above completions make the backlog grow)."""
    if backlog <= 0:
        return 0.0
    net = jobs_per_second - arrival_rate
    if net <= 0:
        return None
    return backlog / net


def littles_law_in_flight(*, arrival_rate: float, mean_service_seconds: float) -> float:
    """CAP-1 for a stable system: calls in flight = arrivals per second × mean service time.
    Only the mean works here; a p95 latency does not give mean concurrency."""
    return arrival_rate * mean_service_seconds


# --- what the ledger says ----------------------------------------------------------------------


@dataclass(frozen=True)
class ObservedStats:
    """A pool's recent behaviour from the attempt ledger. A field is None when the window holds
    no data for it."""

    mean_latency_seconds: float | None
    answered_attempts: int
    attempts_per_job: float | None
    finished_jobs: int
    window_seconds: float
    mean_tokens: float | None = None  # input + output tokens the provider reported per answered attempt
    counted_attempts: int = 0


def policies_of_pool(pool: str) -> list[str]:
    return [name for name, policy in settings.MODEL_POLICIES.items() if policy["provider_pool"] == pool]


def observed_stats(
    pool: str, *, window_seconds: float = OBSERVATION_WINDOW_SECONDS, sample: int = OBSERVATION_SAMPLE_ATTEMPTS
) -> ObservedStats | None:
    """Mean latency of the pool's answered attempts and mean attempts per finished job, over
    the last ``window_seconds`` (at most ``sample`` newest attempts); None with no data at all.

    Attempts per job counts only attempts that reached the provider (a capacity hand-back
    spends none) of jobs that reached SUCCEEDED, FAILED_TERMINAL or REVIEW_REQUIRED. Attempts
    the e-invoice reader answered used no pool (milliseconds, no tokens) and are left out."""
    policies = policies_of_pool(pool)
    if not policies:
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            SQL["observed_stats"],
            {
                "sample": sample,
                "window": window_seconds,
                "policies": policies,
                "unspent": [str(o) for o in _UNSPENT],
                "finished": [str(s) for s in _FINISHED],
                "answered": [str(o) for o in _ANSWERED],
                "poolless": [EINVOICE_PROVIDER],
            },
        )
        mean_latency_ms, answered, mean_attempts, finished, mean_tokens, counted = cursor.fetchone()
    if not answered and not finished:
        return None
    return ObservedStats(
        mean_latency_seconds=float(mean_latency_ms) / 1000 if answered else None,
        answered_attempts=int(answered),
        attempts_per_job=float(mean_attempts) if finished else None,
        finished_jobs=int(finished),
        window_seconds=window_seconds,
        mean_tokens=float(mean_tokens) if counted else None,
        counted_attempts=int(counted),
    )


def pool_backlog(pool: str) -> int:
    """Jobs of the pool not done yet (ACCEPTED, READY, RETRY_SCHEDULED, RUNNING): what the
    drain time is about. The pending states are bounded by admission and covered by partial
    indexes (job_pending_deadline_idx, job_running_tenant_idx)."""
    policies = policies_of_pool(pool)
    if not policies:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(SQL["pool_backlog"], {"policies": policies})
        return int(cursor.fetchone()[0])


# --- the plan ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanValue:
    """One input of the plan and where it came from."""

    value: float
    source: str  # "configured" | "observed" | "given" | "assumed"
    note: str = ""


@dataclass(frozen=True)
class PlanInputs:
    pool: str
    configured: bool
    requests_per_minute: PlanValue
    tokens_per_minute: PlanValue
    reserved_tokens: PlanValue
    concurrency: PlanValue
    mean_latency_seconds: PlanValue
    attempts_per_job: PlanValue
    backlog: PlanValue
    arrival_rate: PlanValue | None = None
    kv_cache_tokens: PlanValue | None = None  # set for kv_tokens pools (BP-6)


@dataclass(frozen=True)
class CapacityPlan:
    inputs: PlanInputs
    attempts: AttemptCapacity
    jobs_per_second: float
    in_flight_at_capacity: float  # CAP-1 at full attempt capacity
    drain_seconds: float
    drain_seconds_with_arrivals: float | None  # None: never (or no arrival rate given)
    in_flight_for_arrivals: float | None  # CAP-1 for the given arrival rate, when it is sustainable


def make_plan(inputs: PlanInputs) -> CapacityPlan:
    attempts = attempt_capacity(
        requests_per_minute=inputs.requests_per_minute.value,
        tokens_per_minute=inputs.tokens_per_minute.value,
        reserved_tokens=inputs.reserved_tokens.value,
        concurrency=inputs.concurrency.value,
        mean_latency_seconds=inputs.mean_latency_seconds.value,
    )
    jobs = job_capacity(attempts.per_second, attempts_per_job=inputs.attempts_per_job.value)
    latency = inputs.mean_latency_seconds.value
    with_arrivals = in_flight_for_arrivals = None
    if inputs.arrival_rate is not None:
        arrival = inputs.arrival_rate.value
        with_arrivals = drain_seconds(inputs.backlog.value, jobs_per_second=jobs, arrival_rate=arrival)
        if arrival < jobs:
            in_flight_for_arrivals = littles_law_in_flight(
                arrival_rate=arrival * inputs.attempts_per_job.value, mean_service_seconds=latency
            )
    return CapacityPlan(
        inputs=inputs,
        attempts=attempts,
        jobs_per_second=jobs,
        in_flight_at_capacity=littles_law_in_flight(arrival_rate=attempts.per_second, mean_service_seconds=latency),
        drain_seconds=drain_seconds(inputs.backlog.value, jobs_per_second=jobs) or 0.0,
        drain_seconds_with_arrivals=with_arrivals,
        in_flight_for_arrivals=in_flight_for_arrivals,
    )


@dataclass(frozen=True)
class PlanOverrides:
    """Values given on the command line; None = not given."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    reserved_tokens: float | None = None
    concurrency: float | None = None
    kv_cache_tokens: float | None = None
    mean_latency_seconds: float | None = None
    attempts_per_job: float | None = None
    backlog: float | None = None
    arrival_rate: float | None = None


def configured_pools() -> list[str]:
    """Pools named in settings.PROVIDER_POOLS or created in the admin."""
    from extraction.models import ProviderPool

    return sorted(set(settings.PROVIDER_POOLS) | set(ProviderPool.objects.values_list("name", flat=True)))


def _counted(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _configured(value: float) -> PlanValue:
    return PlanValue(value, "configured")


def _given(value: float | None) -> PlanValue | None:
    return PlanValue(value, "given") if value is not None else None


def plan_inputs_for_pool(pool: str, overrides: PlanOverrides) -> PlanInputs:
    """A configured pool's inputs: its live limits, the ledger's statistics and its backlog;
    a value given on the command line wins (a what-if), a missing statistic is assumed."""
    limits = limiter.pool_limits(pool)
    stats = observed_stats(pool)
    window = f"{stats.window_seconds / 60:g} min" if stats else ""
    # What a request really costs, where the provider reported it, plans better than the
    # configured reservation.
    reserved = _given(overrides.reserved_tokens)
    if reserved is None and stats is not None and stats.mean_tokens is not None:
        reserved = PlanValue(
            stats.mean_tokens, "observed", f"mean tokens of {_counted(stats.counted_attempts, 'answered attempt')}"
        )
    reserved = reserved or _configured(limits.reserved_tokens)
    kv_tokens = None
    if limits.budget == "kv_tokens" or overrides.kv_cache_tokens is not None:
        kv_tokens = _given(overrides.kv_cache_tokens) or _configured(limits.kv_cache_tokens)
    concurrency = _given(overrides.concurrency) or (
        PlanValue(
            kv_cache_concurrency(kv_cache_tokens=kv_tokens.value, reserved_tokens=reserved.value),
            "configured",
            "KV-cache tokens / reserved tokens",
        )
        if kv_tokens is not None
        else _configured(limits.max_in_flight)
    )
    latency = _given(overrides.mean_latency_seconds)
    if latency is None and stats is not None and stats.mean_latency_seconds is not None:
        latency = PlanValue(
            stats.mean_latency_seconds,
            "observed",
            f"{_counted(stats.answered_attempts, 'answered attempt')}, last {window}",
        )
    attempts_per_job = _given(overrides.attempts_per_job)
    if attempts_per_job is None and stats is not None and stats.attempts_per_job is not None:
        attempts_per_job = PlanValue(
            stats.attempts_per_job, "observed", f"{_counted(stats.finished_jobs, 'finished job')}, last {window}"
        )
    return PlanInputs(
        pool=pool,
        configured=True,
        requests_per_minute=_given(overrides.requests_per_minute) or _configured(limits.requests_per_minute),
        tokens_per_minute=_given(overrides.tokens_per_minute) or _configured(limits.tokens_per_minute),
        reserved_tokens=reserved,
        concurrency=concurrency,
        mean_latency_seconds=latency or PlanValue(DEFAULT_MEAN_LATENCY_SECONDS, "assumed", "nothing observed"),
        attempts_per_job=attempts_per_job or PlanValue(DEFAULT_ATTEMPTS_PER_JOB, "assumed", "nothing observed"),
        backlog=_given(overrides.backlog) or PlanValue(pool_backlog(pool), "observed", "pending jobs now"),
        arrival_rate=_given(overrides.arrival_rate),
        kv_cache_tokens=kv_tokens,
    )


class MissingPlanInput(ValueError):
    def __init__(self, missing: list[str]) -> None:
        super().__init__("a pool that is not configured needs " + ", ".join(missing))
        self.missing = missing


def plan_inputs_for_new_pool(pool: str, overrides: PlanOverrides) -> PlanInputs:
    """A pool that does not exist yet: its limits must be given; latency, attempts per job and
    the backlog fall back to assumptions."""
    missing = [
        flag
        for flag, value in (
            ("--rpm", overrides.requests_per_minute),
            ("--tpm", overrides.tokens_per_minute),
            ("--reserved-tokens", overrides.reserved_tokens),
            ("--concurrency or --kv-cache-tokens", overrides.concurrency if overrides.kv_cache_tokens is None else 1),
        )
        if value is None
    ]
    if missing:
        raise MissingPlanInput(missing)
    assert overrides.reserved_tokens is not None
    kv_tokens = _given(overrides.kv_cache_tokens)
    concurrency = _given(overrides.concurrency) or PlanValue(
        kv_cache_concurrency(kv_cache_tokens=overrides.kv_cache_tokens or 0, reserved_tokens=overrides.reserved_tokens),
        "given",
        "KV-cache tokens / reserved tokens",
    )
    return PlanInputs(
        pool=pool,
        configured=False,
        requests_per_minute=PlanValue(overrides.requests_per_minute or 0, "given"),
        tokens_per_minute=PlanValue(overrides.tokens_per_minute or 0, "given"),
        reserved_tokens=PlanValue(overrides.reserved_tokens, "given"),
        concurrency=concurrency,
        mean_latency_seconds=_given(overrides.mean_latency_seconds)
        or PlanValue(DEFAULT_MEAN_LATENCY_SECONDS, "assumed"),
        attempts_per_job=_given(overrides.attempts_per_job) or PlanValue(DEFAULT_ATTEMPTS_PER_JOB, "assumed"),
        backlog=_given(overrides.backlog) or PlanValue(0, "assumed"),
        arrival_rate=_given(overrides.arrival_rate),
        kv_cache_tokens=kv_tokens,
    )


# --- how a person reads it ---------------------------------------------------------------------


def format_rate(value: float) -> str:
    return f"{value:,.4f}"


def format_duration(seconds: float) -> str:
    """``6,600 s (1 h 50 min)``; ``≈`` marks a value rounded to the second."""
    whole = round(seconds)
    approx = "" if math.isclose(seconds, whole, rel_tol=1e-9, abs_tol=1e-6) else "≈"
    return f"{approx}{whole:,} s ({human_duration(whole)})"


def human_duration(seconds: float) -> str:
    total = round(seconds)
    days, rest = divmod(total, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"
