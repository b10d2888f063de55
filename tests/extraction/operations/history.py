"""Jobs with a history for the SLO report and the audit: moved through the real lifecycle
(accept, ingress, claim, complete / retry / fail / reap, a reviewer's decision), then given
the moments of that history on purpose (``relive``), so a report over them has exact figures."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.utils import timezone

from accounts.models import Tenant
from extraction.events import EventType
from extraction.execution import lifecycle
from extraction.models import (
    Document,
    ExtractionJob,
    JobEvent,
    JobState,
    OutboxEvent,
    ReviewDecision,
)
from tests.factories import SAMPLE_OUTPUT, make_job


def waiting_job(tenant: Tenant, *, document: Document | None = None) -> uuid.UUID:
    """A job accepted and taken in by ingress: READY."""
    return make_job(tenant, state=JobState.READY, document=document).pk


def claim(job_id: uuid.UUID, *, lease_seconds: float | None = None) -> lifecycle.Claim:
    """The worker's claim of ``job_id`` (it must be the only runnable job due)."""
    taken = lifecycle.claim_next_job(worker_id="test-worker", policies=["default"], lease_seconds=lease_seconds)
    assert taken is not None and taken.job_id == job_id, "another runnable job was claimed first"
    return taken


def paid(outcome: str, input_tokens: int | None = None, output_tokens: int | None = None) -> lifecycle.AttemptReport:
    """What an attempt that called the (billing) OpenAI-compatible pool learnt."""
    return lifecycle.AttemptReport(
        outcome=outcome, provider="openai", model="gpt-test", input_tokens=input_tokens, output_tokens=output_tokens
    )


def unpaid(outcome: str) -> lifecycle.AttemptReport:
    """What an attempt the built-in rules answered learnt: no tokens, no bill."""
    return lifecycle.AttemptReport(outcome=outcome, provider="builtin", model="builtin-rules-1")


def complete(taken: lifecycle.Claim, report: lifecycle.AttemptReport, *, review: bool = False) -> None:
    assert lifecycle.complete_job(
        taken, review_required=review, output=SAMPLE_OUTPUT, validation={}, policy_version="test", report=report
    )


def retry(taken: lifecycle.Claim, report: lifecycle.AttemptReport) -> None:
    """The attempt failed transiently: RETRY_SCHEDULED, due at once."""
    outcome = lifecycle.retry_or_fail(taken, report=report, retry=True, delay_seconds=0, error_class=report.outcome)
    assert outcome == "retry"


def fail(taken: lifecycle.Claim, report: lifecycle.AttemptReport, *, error_class: str) -> None:
    outcome = lifecycle.retry_or_fail(taken, report=report, retry=False, delay_seconds=0, error_class=error_class)
    assert outcome == "failed"


def reap(job_id: uuid.UUID) -> None:
    """Its worker died: claimed with a lease that has already passed, reaped, due again at once."""
    taken = claim(job_id, lease_seconds=-1)
    assert lifecycle.reap_expired_leases() == 1
    assert ExtractionJob.objects.get(pk=taken.job_id).state == JobState.RETRY_SCHEDULED
    ExtractionJob.objects.filter(pk=job_id).update(available_at=timezone.now() - timedelta(hours=1))


def decide(job_id: uuid.UUID, reviewer_id: int, *, approve: bool) -> None:
    job = ExtractionJob.objects.get(pk=job_id)
    assert lifecycle.decide_review(
        job_id=job_id,
        seen_state_version=job.state_version,
        reviewer_id=reviewer_id,
        approve=approve,
        before=SAMPLE_OUTPUT,
        after=None,
        validation={},
    )


def relive(
    job_id: uuid.UUID, accepted_at: datetime, offsets: Sequence[float], *, published_after: float | None = 0.1
) -> None:
    """Give the job's history its moments: accepted at ``accepted_at``, its n-th job event
    (state_version n) ``offsets[n-1]`` seconds later; a reviewer's decision and an outbox event
    at the moment of the transition that wrote them, and published by the relay
    ``published_after`` seconds after that (None: not published)."""
    events = list(JobEvent.objects.filter(job_id=job_id).order_by("state_version"))
    assert [e.state_version for e in events] == list(range(1, len(offsets) + 1)), [e.to_state for e in events]
    moments = {n: accepted_at + timedelta(seconds=offset) for n, offset in enumerate(offsets, start=1)}
    # updated_at: the last transition wrote it.
    ExtractionJob.objects.filter(pk=job_id).update(created_at=accepted_at, updated_at=moments[len(offsets)])
    for event in events:
        JobEvent.objects.filter(pk=event.pk).update(created_at=moments[event.state_version])
    for decision in ReviewDecision.objects.filter(job_id=job_id):
        ReviewDecision.objects.filter(pk=decision.pk).update(created_at=moments[decision.state_version + 1])
    for event in OutboxEvent.objects.filter(job_id=job_id):
        created = accepted_at if event.event_type == EventType.REQUESTED else moments[event.payload["state_version"]]
        published = None if published_after is None else created + timedelta(seconds=published_after)
        OutboxEvent.objects.filter(pk=event.pk).update(created_at=created, published_at=published)
