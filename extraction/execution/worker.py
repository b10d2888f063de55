"""The llm worker's slots: claim a job from PostgreSQL, run its attempt
(:mod:`extraction.execution.attempt`: the model is called with no DB connection held, the result
completed under the fence), and claim again while there is work. Model calls are I/O, so one
process carries hundreds of slots on threads; its runtime (:mod:`extraction.execution.runtime`)
keeps the in-flight registry, the lease heartbeat and the shutdown."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TypeVar

from django.conf import settings
from opentelemetry.trace import Span

from config import tracing
from extraction.capacity import limiter
from extraction.execution import claims
from extraction.execution.attempt import execute_attempt
from extraction.execution.claims import ClaimRequest
from extraction.execution.lifecycle import Claim
from extraction.execution.outcomes import AttemptResult
from extraction.execution.runtime import DATABASE, WorkerRuntime, db_step, runtime
from extraction.models import ExtractionJob

T = TypeVar("T")


def _attempt_span(claim: Claim) -> AbstractContextManager[Span]:
    """The attempt's span in the job's trace, read from the job row (a slot claims from the
    table: its wake-up's trace is not the job's, and is linked instead)."""
    trace_context = None
    if tracing.enabled():
        with db_step():
            job = ExtractionJob.objects.filter(pk=claim.job_id)
            trace_context = job.values_list("trace_context", flat=True).first()
    return tracing.step_span(
        "extraction.attempt",
        trace_context=trace_context,
        attributes={
            "extraction.job_id": str(claim.job_id),
            "extraction.attempt": claim.attempt,
            "extraction.fence": claim.fence,
            "extraction.model_policy": claim.model_policy,
        },
    )


def run_slot(
    rt: WorkerRuntime | None = None,
    *,
    max_seconds: float | None = None,
    max_jobs: int | None = None,
    woken_for: str | None = None,
) -> int:
    """One worker slot; returns the attempts run (0: no work found). Claiming again at once
    serves jobs with no wake-up of their own (retries due, recovered jobs, a backlog from a
    broker outage) as slots free up.

    1. Return 0 if ``woken_for`` names a job a slot here already completed by claiming again.
    2. Until stopping or a bound: no pool with headroom → stop; claim a job, none → stop.
    3. Run its attempt (a crash is logged; the lease expires and the reaper retries).
    4. Remember a job completed by claiming again, so its queued wake-up stops at step 1.
    5. Stop after a deferral or when the claim saw no other eligible job.
    """
    rt = rt or runtime()
    if woken_for is not None and rt.wake_up_already_served(_job_id(woken_for)):
        return 0
    max_seconds = settings.WORKER_SLOT_SECONDS if max_seconds is None else max_seconds
    started = time.monotonic()
    ran = 0
    limiter.forget_answered_headroom()  # a release of this thread's last wake-up is old news
    while not rt.stopping.is_set() and time.monotonic() - started < max_seconds:
        if max_jobs is not None and ran >= max_jobs:
            break
        policies = policies_with_capacity()
        if not policies:
            break  # every pool is saturated or cooling down: the scheduler wakes us when due
        # With the process's other slots claiming at this moment, in one statement.
        claim = claims.batcher().submit(ClaimRequest(rt.worker_id, tuple(policies)))
        if claim is None:
            break
        claimed_again = ran > 0
        ran += 1
        outcome = run_claimed(claim, rt)
        if outcome is None:
            continue
        if claimed_again and outcome == AttemptResult.COMPLETED:
            rt.served_without_wake_up(claim.job_id)
        if outcome == AttemptResult.DEFERRED or not claim.more_eligible:
            break
    return ran


def run_claimed(claim: Claim, rt: WorkerRuntime) -> AttemptResult | None:
    """Run a claimed job's attempt in its span; None if it crashed (logged: the lease expires
    and the reaper retries), so a bug in one attempt never kills the slot that ran it."""
    try:
        with _attempt_span(claim) as span:
            outcome = execute_attempt(claim, rt)
            span.set_attribute("extraction.attempt.result", outcome)
            return outcome
    except Exception as exc:  # noqa: BLE001 - a bug in one attempt must not kill the slot
        DATABASE.failed(
            exc,
            consequence="an attempt could not be recorded; its lease expires and the reaper retries",
            extra=claim.log_extra(),
        )
        return None


def _job_id(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None  # a malformed hint is only a plain wake-up


def policies_with_headroom() -> tuple[list[str], int]:
    """Model policies whose provider pool has room right now, and how many calls those pools
    could start together (``limiter.headroom``, one Redis call per pool): the dispatcher claims
    no more jobs than that, since each one more would only be handed back."""
    room = _ask_each_pool(limiter.headroom)
    return _policies_where(room), sum(room.values())


def policies_with_capacity() -> list[str]:
    """Model policies whose provider pool has headroom right now (a Redis pre-check)."""
    return _policies_where(_ask_each_pool(limiter.has_headroom))


def _ask_each_pool(ask: Callable[[limiter.PoolLimits], T]) -> dict[str, T]:
    """``ask`` once per provider pool of the model policies, by pool name."""
    answers: dict[str, T] = {}
    for config in settings.MODEL_POLICIES.values():
        pool = config["provider_pool"]
        if pool not in answers:
            with db_step():  # the pool's limits may be read from its row
                answers[pool] = ask(limiter.pool_limits(pool))
    return answers


def _policies_where(answers: Mapping[str, object]) -> list[str]:
    """The model policies whose pool's answer is truthy, in settings order."""
    return [policy for policy, config in settings.MODEL_POLICIES.items() if answers[config["provider_pool"]]]
