"""The job state machine: every way a job moves, in one module.

    ACCEPTED ──ingress──▶ READY ──claim──▶ RUNNING ──complete──▶ SUCCEEDED
        │                   ▲  ▲             │  │  └─complete──▶ REVIEW_REQUIRED ──review──▶ SUCCEEDED / FAILED_TERMINAL
        │                   │  └─hand back───┘  ├─retry──▶ RETRY_SCHEDULED ──claim──▶ RUNNING
        │                   └── recovery        ├─fail / reap (budget spent)──▶ FAILED_TERMINAL
        │                                       └─split──▶ SPLIT, and one ACCEPTED job per part (a bundle)
        └──────────────────── deadline ───────────────────────────────────────▶ FAILED_TERMINAL

    operators (extraction.bulk): waiting or RUNNING ──cancel──▶ FAILED_TERMINAL;
                                 FAILED_TERMINAL / REVIEW_REQUIRED ──re-run──▶ READY

Every transition is one named statement in ``lifecycle.sql``: a guarded ``UPDATE … WHERE
state = EXPECTED [AND fence = F]`` (0 rows: another actor won, nothing else is written) that
also writes what the move records — event row, released admission share, outbox event. Time is
the database's ``now()``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from config.db import prepared_cursor
from config.instruments import ACCEPT_TO_TERMINAL, ATTEMPTS
from config.sql import load_statements
from extraction.events import EventType
from extraction.execution.outcomes import AttemptResult, CompletionVerdict, TakeIn
from extraction.models import AttemptOutcome, JobState, QuarantinedMessage

logger = logging.getLogger(__name__)


SQL = load_statements(Path(__file__).with_suffix(".sql"))

# The claim: tenants served by weighted share (EXE-1, BP-4). Read at every claim, so a process
# that must claim otherwise (a benchmark's baseline) can point it at another statement.
CLAIM = SQL["claim_fair"]


@dataclass(frozen=True)
class Claim:
    """A worker's ownership of one attempt of a job, valid while ``fence`` is the job's fence."""

    job_id: uuid.UUID
    tenant_id: uuid.UUID
    document_id: uuid.UUID
    schema: str
    model_policy: str
    options: dict[str, Any]
    attempt: int
    max_attempts: int
    fence: int
    deadline_at: datetime
    worker_id: str
    more_eligible: bool = True  # another job was eligible when this one was claimed
    # The tenant's validation policy revision when the job was claimed (None: not known).
    policy_revision: int | None = None
    # A bundle's part: its pages of the document, first to last (1-based); None for a whole document.
    pages: tuple[int, int] | None = None

    def log_extra(self) -> dict[str, Any]:
        return {"job_id": str(self.job_id), "attempt": self.attempt, "fence": self.fence, "worker_id": self.worker_id}


@dataclass(frozen=True)
class AttemptReport:
    """What one attempt learnt from the provider, for the attempt ledger."""

    outcome: str
    provider: str = ""
    model: str = ""
    provider_request_id: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: int | None = None
    http_status: int | None = None
    retry_after_seconds: float | None = None
    error_detail: str = ""


# --- the one primitive ------------------------------------------------------------------------


class Moved(NamedTuple):
    """A transition that won: the job's tenant, its new ``state_version`` and its fence (and,
    from the moves that end automatic processing, the seconds since the job was accepted)."""

    tenant_id: uuid.UUID
    state_version: int
    fence: int
    accepted_seconds_ago: float | None = None


def _transition(
    cursor: CursorWrapper,
    statement: str,
    job_id: uuid.UUID,
    *,
    reason: str,
    detail: dict[str, Any] | None = None,
    **params: Any,
) -> Moved | None:
    """Run one transition statement of ``lifecycle.sql``; None if it lost (0 rows).

    The statement moves the job under its guard and, only if it did, appends the job event
    (``reason``, ``detail``) and whatever else that transition records: the released admission
    share, an outbox event. ``params`` are the statement's own parameters.
    """
    cursor.execute(statement, {"job_id": job_id, "reason": reason, "detail": json.dumps(detail or {}), **params})
    row = cursor.fetchone()
    return Moved(*row) if row is not None else None


def _price_micros(model_policy: str) -> int:
    return int(settings.MODEL_POLICIES.get(model_policy, {}).get("price_per_1k_tokens_micros", 0))


def _attempt_params(report: AttemptReport) -> dict[str, Any]:
    return {
        "outcome": report.outcome,
        "provider": report.provider,
        "model": report.model[:128],
        "request_id": report.provider_request_id[:128],
        "input_tokens": report.input_tokens,
        "output_tokens": report.output_tokens,
        "latency_ms": report.latency_ms,
        "http_status": report.http_status,
        "retry_after": report.retry_after_seconds,
        "error": report.error_detail[:2000],
    }


def _end_attempt(
    cursor: CursorWrapper, job_id: uuid.UUID, fence: int, report: AttemptReport, *, counted: bool = True
) -> None:
    cursor.execute(SQL["end_attempt"], {**_attempt_params(report), "job": job_id, "fence": fence})
    if counted:
        _count_attempt(report.outcome)


def _end_stale_attempt(cursor: CursorWrapper, claim: Claim, report: AttemptReport) -> None:
    """The attempt's ledger row when its move lost: what it learnt, judged a stale completion."""
    stale = AttemptReport(**{**report.__dict__, "outcome": AttemptOutcome.STALE_COMPLETION})
    _end_attempt(cursor, claim.job_id, claim.fence, stale)


def _count_attempt(outcome: str) -> None:
    """Count an ended attempt by outcome (/metrics) once its ledger row is committed."""
    transaction.on_commit(ATTEMPTS.labels(outcome=outcome).inc)


def _observe_end(state: str, accepted_seconds_ago: float | None) -> None:
    """Observe a job's time from acceptance to the end of its automatic processing (/metrics),
    once the move that ended it is committed."""
    if accepted_seconds_ago is not None:
        transaction.on_commit(functools.partial(ACCEPT_TO_TERMINAL.labels(state=state).observe, accepted_seconds_ago))


# --- ingress (BRK-2, BRK-3) ------------------------------------------------------------------


def payload_digest(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class Arrival(NamedTuple):
    """An ``extraction.requested.v1`` message as the ingress received it. ``source``: a Kafka
    record's (topic, partition, offset), kept in the inbox; a RabbitMQ message has none."""

    event_id: uuid.UUID
    payload: dict[str, Any]
    source: tuple[str, int, int] | None = None


def take_in_requested_events(arrivals: Sequence[Arrival]) -> list[TakeIn]:
    """Record requested messages in the inbox and make their jobs runnable; each one's outcome,
    in order. The caller acks a message (or commits a record's offset) only after this returns
    (the commit happened). A record and a RabbitMQ message of one event are one inbox row: the
    event id decides.

    1. One statement for all (``take_in_requested_events``): each new event id's inbox row and,
       if its job is still ACCEPTED, READY: "taken_in"; a job past ACCEPTED is left:
       "already_taken_in".
    2. The rest, sorted apart after it committed: the event id already in the inbox with the same
       digest → "duplicate"; with another → a quarantine row → "quarantined"; no such job →
       "unknown_job".
    """
    digests = [payload_digest(arrival.payload) for arrival in arrivals]
    sources = [arrival.source or (None, None, None) for arrival in arrivals]
    with prepared_cursor() as cursor:
        cursor.execute(
            SQL["take_in_requested_events"],
            {
                "events": [arrival.event_id for arrival in arrivals],
                "digests": digests,
                "jobs": [uuid.UUID(str(arrival.payload["job_id"])) for arrival in arrivals],
                "topics": [source[0] for source in sources],
                "partitions": [source[1] for source in sources],
                "offsets": [source[2] for source in sources],
            },
            prepare=True,
        )
        written = dict(cursor.fetchall())
    outcomes: list[TakeIn | None] = []
    for arrival in arrivals:
        moved = written.pop(arrival.event_id, None)  # popped: the same id twice wrote one row
        outcomes.append(None if moved is None else TakeIn.TAKEN_IN if moved else TakeIn.ALREADY_TAKEN_IN)
    if all(outcome is not None for outcome in outcomes):
        return outcomes  # type: ignore[return-value]
    # Not written: a redelivery (same digest), a conflicting message, or no such job.
    with prepared_cursor() as cursor:
        unwritten = [arrival.event_id for arrival, outcome in zip(arrivals, outcomes, strict=True) if outcome is None]
        cursor.execute(SQL["stored_inbox_digests"], {"events": unwritten})
        stored = dict(cursor.fetchall())
    return [
        outcome if outcome is not None else _sort_unwritten(arrival, digest, stored.get(arrival.event_id))
        for arrival, digest, outcome in zip(arrivals, digests, outcomes, strict=True)
    ]


def _sort_unwritten(arrival: Arrival, digest: str, stored: str | None) -> TakeIn:
    if stored is None:
        return TakeIn.UNKNOWN_JOB
    if stored == digest:
        return TakeIn.DUPLICATE
    job_id = uuid.UUID(str(arrival.payload["job_id"]))
    QuarantinedMessage.objects.create(
        event_id=arrival.event_id,
        job_id=job_id,
        stored_digest=stored,
        received_digest=digest,
        payload=arrival.payload,
        reason="digest_mismatch",
    )
    logger.error(
        "inbox digest mismatch: message quarantined", extra={"event_id": str(arrival.event_id), "job_id": str(job_id)}
    )
    return TakeIn.QUARANTINED


def take_in_requested_event(
    *, event_id: uuid.UUID, payload: dict[str, Any], source: tuple[str, int, int] | None = None
) -> TakeIn:
    """One requested message (:func:`take_in_requested_events` with one arrival)."""
    return take_in_requested_events([Arrival(event_id, payload, source)])[0]


def notify_runnable_jobs() -> None:
    """Wake the dispatchers (``notify_runnable_jobs``): jobs became runnable."""
    with connection.cursor() as cursor:
        cursor.execute(SQL["notify_runnable_jobs"])


# --- execution (EXE-1..3) --------------------------------------------------------------------


def claim_next_jobs(
    *, worker_id: str, count: int = 1, policies: Sequence[str] | None = None, lease_seconds: float | None = None
) -> list[Claim]:
    """EXE-1: take up to ``count`` runnable jobs, chosen fairly (``claim_fair`` in lifecycle.sql):
    the jobs ``count`` single claims would take in turn, in that order.

    ``policies`` limits the claim to jobs whose model policy's pool has capacity right now,
    so a saturated pool's jobs stay READY instead of being claimed and handed back. The
    model is called only after this short transaction has committed.
    """
    lease = lease_seconds if lease_seconds is not None else settings.LEASE_SECONDS
    params = {
        "worker": worker_id,
        "lease": float(lease),
        "policies": list(policies or settings.MODEL_POLICIES),
        "boost": float(settings.INTERACTIVE_PRIORITY_BOOST_SECONDS),
        # Each tenant offers as many candidates as could be taken from it, at least four.
        "per_tenant": max(4, count),
        "window": max(64, 2 * count),
        "count": count,
    }
    with prepared_cursor() as cursor:
        cursor.execute(CLAIM, params, prepare=True)
        rows = cursor.fetchall()
    claims = []
    for (
        job_id,
        tenant_id,
        document_id,
        schema,
        model_policy,
        options,
        attempt,
        max_attempts,
        fence,
        deadline_epoch,
        more_eligible,
        policy_revision,
        first_page,
        last_page,
    ) in rows:
        claims.append(
            Claim(
                job_id=job_id,
                tenant_id=tenant_id,
                document_id=document_id,
                schema=schema,
                model_policy=model_policy,
                options=json.loads(options) if isinstance(options, str) else options,
                attempt=attempt,
                max_attempts=max_attempts,
                fence=fence,
                deadline_at=datetime.fromtimestamp(deadline_epoch, tz=UTC),
                worker_id=worker_id,
                more_eligible=more_eligible,
                policy_revision=policy_revision,
                pages=None if first_page is None else (first_page, last_page),
            )
        )
    return claims


def claim_next_job(
    *, worker_id: str, policies: Sequence[str] | None = None, lease_seconds: float | None = None
) -> Claim | None:
    """EXE-1 for one job (:func:`claim_next_jobs` with a count of 1), or None."""
    claims = claim_next_jobs(worker_id=worker_id, policies=policies, lease_seconds=lease_seconds)
    return claims[0] if claims else None


def extend_leases(claims: Sequence[Claim], *, lease_seconds: float | None = None) -> set[uuid.UUID]:
    """EXE-2: one heartbeat for many in-flight jobs. Returns the job ids whose ownership is
    LOST: a newer fence (the reaper, another worker), or a lease that expired while RUNNING.

    A job that left RUNNING under our own fence was moved by us (completed, retried or handed
    back after the caller's snapshot of its claims): not lost, its result is committed."""
    if not claims:
        return set()
    lease = lease_seconds if lease_seconds is not None else settings.LEASE_SECONDS
    ids = [c.job_id for c in claims]
    # The rows in id order first: a batch of completions (complete_jobs) locks the same jobs.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(SQL["lock_jobs_in_id_order"], {"jobs": ids})
        cursor.execute(SQL["extend_leases"], {"lease": lease, "ids": ids, "fences": [c.fence for c in claims]})
        return {row[0] for row in cursor.fetchall()}


@dataclass(frozen=True)
class Completion:
    """An attempt's result, ready to complete its job (EXE-3): SUCCEEDED, or REVIEW_REQUIRED.

    ``policy_revision`` is the revision of the tenant's validation policy the verdict was judged
    with: the completion wins only while it is the tenant's current one (None: not checked)."""

    claim: Claim
    review_required: bool
    output: dict[str, Any]
    validation: dict[str, Any]
    policy_version: str
    report: AttemptReport
    policy_revision: int | None = None

    @property
    def to_state(self) -> JobState:
        return JobState.REVIEW_REQUIRED if self.review_required else JobState.SUCCEEDED


def complete_jobs(completions: Sequence[Completion]) -> list[CompletionVerdict]:
    """EXE-3 for a batch: each job's result row + state + outbox event under its own fence and a
    live lease, and the admission budget given back per tenant, all in one transaction. Returns
    each completion's verdict, in order: STALE (someone else's job now: discarded, and recorded
    in the attempt ledger) or POLICY_CHANGED (judged with an outdated policy: nothing written).

    More than one job: their rows are locked in id order first (``lock_jobs_in_id_order``), so
    batches and the heartbeat over overlapping jobs cannot deadlock. The metrics are counted
    once the transaction has committed."""
    if not completions:
        return []
    rows = []
    for done in completions:
        claim = done.claim
        attempt = _attempt_params(done.report)
        detail = {"attempt": claim.attempt, "fence": claim.fence, "policy_version": done.policy_version}
        rows.append(
            {
                "jobs": claim.job_id,
                "fences": claim.fence,
                "attempts": claim.attempt,
                "to_states": done.to_state.value,
                "reasons": "review_required" if done.review_required else "succeeded",
                "details": json.dumps(detail),
                "outcomes": attempt["outcome"],
                "providers": attempt["provider"],
                "models": attempt["model"],
                "request_ids": attempt["request_id"],
                "input_tokens": attempt["input_tokens"],
                "output_tokens": attempt["output_tokens"],
                "latencies_ms": attempt["latency_ms"],
                "http_statuses": attempt["http_status"],
                "retry_afters": attempt["retry_after"],
                "errors": attempt["error"],
                "outputs": json.dumps(done.output),
                "validations": json.dumps(done.validation),
                "policy_versions": done.policy_version,
                "prices": _price_micros(claim.model_policy),
                "event_ids": uuid.uuid4(),
                "event_types": EventType.REVIEW_REQUIRED if done.review_required else EventType.COMPLETED,
                "tenants": claim.tenant_id,
                "policy_revisions": done.policy_revision,
            }
        )
    # The statement takes one array per column.
    params = {name: [row[name] for row in rows] for name in rows[0]}
    # One job: one autocommit statement. More: a transaction, the rows locked in order first.
    batch = transaction.atomic() if len(completions) > 1 else contextlib.nullcontext()
    with batch, prepared_cursor() as cursor:
        if len(completions) > 1:
            cursor.execute(SQL["lock_jobs_in_id_order"], {"jobs": params["jobs"]}, prepare=True)
        cursor.execute(SQL["complete_jobs"], params, prepare=True)
        rows_back = {job_id: (verdict, seconds_ago) for job_id, verdict, seconds_ago in cursor.fetchall()}
    verdicts = []
    for done in completions:
        verdict, accepted_seconds_ago = rows_back[done.claim.job_id]
        verdict = CompletionVerdict(verdict)
        if verdict is CompletionVerdict.WON:
            _count_attempt(done.report.outcome)
            _observe_end(done.to_state, accepted_seconds_ago)
        elif verdict is CompletionVerdict.STALE:
            _count_attempt(AttemptOutcome.STALE_COMPLETION)
            logger.warning("stale completion discarded", extra=done.claim.log_extra())
        verdicts.append(verdict)
    return verdicts


def complete_job(
    claim: Claim,
    *,
    review_required: bool,
    output: dict[str, Any],
    validation: dict[str, Any],
    policy_version: str,
    report: AttemptReport,
) -> bool:
    """EXE-3 for one job (:func:`complete_jobs` with one completion, its policy revision not
    checked). False = stale completion."""
    completion = Completion(claim, review_required, output, validation, policy_version, report)
    return complete_jobs([completion])[0] is CompletionVerdict.WON


def retry_or_fail(
    claim: Claim, *, report: AttemptReport, retry: bool, delay_seconds: float, error_class: str
) -> AttemptResult:
    """RTY-2: persist the attempt's outcome under the current fence, in one transaction:
    RETRY_SCHEDULED with the next ``available_at`` — unless the next whole attempt (plus the
    commit margin) would end past the deadline, judged by the database clock — else
    FAILED_TERMINAL with a dead-letter outbox event (DLQ-2); STALE when the job is no longer ours."""
    with transaction.atomic(), connection.cursor() as cursor:
        if retry:
            moved = _transition(
                cursor,
                SQL["schedule_retry"],
                claim.job_id,
                reason=report.outcome,
                detail={"attempt": claim.attempt, "delay_seconds": round(delay_seconds, 3)},
                fence=claim.fence,
                error_class=error_class,
                error_detail=report.error_detail[:2000],
                delay=delay_seconds,
                budget=settings.ATTEMPT_TIMEOUT_SECONDS + settings.COMMIT_MARGIN_SECONDS,
            )
            if moved is not None:
                _end_attempt(cursor, claim.job_id, claim.fence, report)
                return AttemptResult.RETRY
            error_class = "deadline_exceeded"  # or not ours any more: _fail_running tells
        return _fail_running(cursor, claim, report=report, error_class=error_class)


def _fail_running(cursor: CursorWrapper, claim: Claim, *, report: AttemptReport, error_class: str) -> AttemptResult:
    # First: the spend counts this attempt. Counted below, once its outcome is final.
    _end_attempt(cursor, claim.job_id, claim.fence, report, counted=False)
    moved = _transition(
        cursor,
        SQL["fail_running"],
        claim.job_id,
        reason=error_class,
        detail={"attempt": claim.attempt},
        fence=claim.fence,
        error_class=error_class,
        error_detail=report.error_detail[:2000],
        attempt=claim.attempt,
        price=_price_micros(claim.model_policy),
        event_id=uuid.uuid4(),
        event_type=EventType.DEAD_LETTERED,
    )
    if moved is None:
        _end_stale_attempt(cursor, claim, report)
        return AttemptResult.STALE
    _count_attempt(report.outcome)
    _observe_end(JobState.FAILED_TERMINAL, moved.accepted_seconds_ago)
    return AttemptResult.FAILED


def split_job(
    claim: Claim, parts: Sequence[tuple[int, int]], *, page_count: int, report: AttemptReport, detail: dict[str, Any]
) -> bool:
    """RUNNING -> SPLIT under the fence, with one ACCEPTED job per part and every event of
    both, in one transaction (``split_job`` in lifecycle.sql). False: the job was no longer
    ours and nothing but the ledger's stale verdict was written.

    ``parts`` are page ranges (first, last; 1-based, inclusive) that cover the document's
    ``page_count`` pages in order."""
    assert parts and parts[0][0] == 1 and parts[-1][1] == page_count
    assert all(prev[1] + 1 == part[0] for prev, part in itertools.pairwise(parts))
    part_ids = [uuid.uuid4() for _ in parts]
    listed = [
        {"job_id": str(job_id), "pages": [first, last]} for job_id, (first, last) in zip(part_ids, parts, strict=True)
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        _end_attempt(cursor, claim.job_id, claim.fence, report, counted=False)
        moved = _transition(
            cursor,
            SQL["split_job"],
            claim.job_id,
            reason="split",
            detail={**detail, "parts": listed},
            fence=claim.fence,
            part_ids=part_ids,
            firsts=[first for first, _ in parts],
            lasts=[last for _, last in parts],
            page_count=page_count,
            event_ids=[uuid.uuid4() for _ in parts],
            requested=EventType.REQUESTED,
            event_id=uuid.uuid4(),
            event_type=EventType.SPLIT,
            parts=json.dumps(listed),
        )
        if moved is None:
            _end_stale_attempt(cursor, claim, report)
            return False
        _count_attempt(report.outcome)
        _observe_end(JobState.SPLIT, moved.accepted_seconds_ago)
    return True


def record_discarded_attempt(claim: Claim, report: AttemptReport) -> None:
    """The worker lost the job during the model call: record the (possibly paid) call in the
    ledger and write nothing else (EXE-6: fencing cannot undo it)."""
    with transaction.atomic(), connection.cursor() as cursor:
        _end_attempt(cursor, claim.job_id, claim.fence, report)


def hand_back(claim: Claim, *, available_in_seconds: float, outcome: str, detail: str = "") -> bool:
    """Give a claimed job back unspent (admission said no, or the worker is stopping before
    the model call): READY again, the attempt counter restored, the fence kept as is."""
    with transaction.atomic(), connection.cursor() as cursor:
        moved = _transition(
            cursor,
            SQL["hand_back"],
            claim.job_id,
            reason=outcome,
            detail={"available_in_seconds": round(available_in_seconds, 3), "detail": detail[:200]},
            fence=claim.fence,
            delay=available_in_seconds,
        )
        if moved is None:
            return False
        _end_attempt(cursor, claim.job_id, claim.fence, AttemptReport(outcome=outcome, error_detail=detail))
    return True


def hand_back_interrupted(claim: Claim, *, report: AttemptReport) -> bool:
    """The worker's shutdown abandoned the attempt's model call: READY again at once under a new
    fence, the attempt counter restored, the attempt ended in the ledger with ``report``
    (``interrupted``). False if the job was no longer ours (reaped, cancelled)."""
    with transaction.atomic(), connection.cursor() as cursor:
        moved = _transition(
            cursor,
            SQL["hand_back_interrupted"],
            claim.job_id,
            reason=report.outcome,
            detail={"attempt": claim.attempt, "fence": claim.fence},
            fence=claim.fence,
        )
        if moved is None:
            return False
        _end_attempt(cursor, claim.job_id, claim.fence, report)
    return True


# --- human review (VAL-2) ------------------------------------------------------------------------


def decide_review(
    *,
    job_id: uuid.UUID,
    seen_state_version: int,
    reviewer_id: int,
    approve: bool,
    before: dict[str, Any],
    after: dict[str, Any] | None,
    validation: dict[str, Any],
    comment: str = "",
) -> bool:
    """A reviewer's approval (→ SUCCEEDED, with the corrected output and an
    ``extraction.completed.v1`` event, so the ERP gets it) or rejection (→ FAILED_TERMINAL,
    with a dead-letter event), audited in the same transaction.

    Guarded on the ``state_version`` the reviewer saw: of two reviewers acting at once, the
    second updates 0 rows and gets False. The caller re-validates corrections before approving.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        moved = _transition(
            cursor,
            SQL["approve_review"] if approve else SQL["reject_review"],
            job_id,
            reason="review_approved" if approve else "review_rejected",
            detail={"reviewer_id": reviewer_id},
            seen=seen_state_version,
            comment=comment[:2000],
            event_id=uuid.uuid4(),
            event_type=EventType.COMPLETED if approve else EventType.DEAD_LETTERED,
        )
        if moved is None:
            return False
        cursor.execute(
            SQL["record_review_decision"],
            {
                "job_id": job_id,
                "reviewer_id": reviewer_id,
                "decision": "approved" if approve else "rejected",
                "seen": seen_state_version,
                "before": json.dumps(before),
                "after": json.dumps(after) if after is not None else None,
                "validation": json.dumps(validation),
                "comment": comment,
            },
        )
        if approve:
            cursor.execute(
                SQL["store_approved_output"],
                {
                    "job_id": job_id,
                    "output": json.dumps(after if after is not None else before),
                    "validation": json.dumps(validation),
                    "policy_version": validation.get("policy_version"),
                },
            )
    return True


# --- the durable scheduler's sweeps (EXE-5, BRK-4) ---------------------------------------------


def reap_expired_leases(*, limit: int = 200) -> int:
    """EXE-5: expired RUNNING jobs go to RETRY_SCHEDULED with fence+1 and the next attempt
    time persisted — or to FAILED_TERMINAL when the retry budget or the deadline is spent.
    The attempt counter is kept: a dead worker never resets it."""
    from extraction.execution.retry import backoff_seconds

    reaped = 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            SQL["expired_leases"],
            {"budget": settings.ATTEMPT_TIMEOUT_SECONDS + settings.COMMIT_MARGIN_SECONDS, "limit": limit},
        )
        for job_id, fence, attempt, max_attempts, model_policy, no_time_left in cursor.fetchall():
            report = AttemptReport(outcome=AttemptOutcome.LEASE_LOST, error_detail="lease expired; reaped")
            detail = {"attempt": attempt, "reaped_fence": fence}
            if attempt >= max_attempts or no_time_left:
                error_class = "deadline_exceeded" if no_time_left else "retries_exhausted"
                moved = _transition(
                    cursor,
                    SQL["reap_failed"],
                    job_id,
                    reason=error_class,
                    detail=detail,
                    fence=fence,
                    error_class=error_class,
                    attempt=attempt,
                    price=_price_micros(model_policy),
                    event_id=uuid.uuid4(),
                    event_type=EventType.DEAD_LETTERED,
                )
            else:
                moved = _transition(
                    cursor,
                    SQL["reap_for_retry"],
                    job_id,
                    reason="lease_expired",
                    detail=detail,
                    fence=fence,
                    delay=backoff_seconds(attempt),
                )
            if moved is not None:
                _end_attempt(cursor, job_id, fence, report)
                _observe_end(JobState.FAILED_TERMINAL, moved.accepted_seconds_ago)  # None for a retry
                reaped += 1
                logger.warning(
                    "lease expired: job reaped", extra={"job_id": str(job_id), "attempt": attempt, "fence": fence}
                )
    return reaped


def expire_deadlines(*, limit: int = 500) -> int:
    """Jobs still waiting at their deadline fail terminally (``deadline_exceeded``) with a
    dead-letter event. RUNNING jobs are left to their worker and the reaper."""
    expired = 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(SQL["expired_waiting_jobs"], {"limit": limit})
        for job_id, state, attempt, model_policy in cursor.fetchall():
            moved = _transition(
                cursor,
                SQL["expire_deadline"],
                job_id,
                reason="deadline_exceeded",
                from_state=state,
                attempt=attempt,
                price=_price_micros(model_policy),
                event_id=uuid.uuid4(),
                event_type=EventType.DEAD_LETTERED,
            )
            if moved is not None:
                _observe_end(JobState.FAILED_TERMINAL, moved.accepted_seconds_ago)
                expired += 1
    return expired


def recover_lost_ingress(*, limit: int = 500) -> int:
    """BRK-4: an ACCEPTED job whose requested event was published long ago but never reached
    the inbox (message purged, queue deleted) becomes READY anyway. The inbox would dedupe
    a late message; the guarded ACCEPTED → READY makes the late one a no-op."""
    recovered = 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            SQL["lost_ingress_jobs"],
            {
                "requested_event": EventType.REQUESTED,
                "recovery_seconds": settings.INGRESS_RECOVERY_SECONDS,
                "limit": limit,
            },
        )
        for (job_id,) in cursor.fetchall():
            if _transition(cursor, SQL["recover_ingress"], job_id, reason="ingress_recovered") is not None:
                recovered += 1
    if recovered:
        logger.warning("made ACCEPTED jobs READY without their ingress message", extra={"count": recovered})
    return recovered


def count_eligible_jobs(*, cap: int) -> int:
    """Runnable jobs whose time has come, counted up to ``cap`` (bounded work per sweep)."""
    with connection.cursor() as cursor:
        cursor.execute(SQL["count_eligible_jobs"], {"cap": cap})
        return int(cursor.fetchone()[0])


# --- operators (bulk actions) ----------------------------------------------------------------

# What an operator may cancel: any job still waiting or running. What an operator may re-run:
# a failed job, or one waiting for review (its result is kept as superseded). A SUCCEEDED
# job's result has been delivered; running it again would make a second invoice of it.
CANCELLABLE_STATES = (JobState.ACCEPTED, JobState.READY, JobState.RETRY_SCHEDULED, JobState.RUNNING)
RERUNNABLE_STATES = (JobState.FAILED_TERMINAL, JobState.REVIEW_REQUIRED)


class LockedJob(NamedTuple):
    """A job row as :func:`lock_jobs_for_operator` locked it: what its guarded move expects."""

    job_id: uuid.UUID
    state: str
    fence: int
    attempt: int
    model_policy: str


def lock_jobs_for_operator(
    cursor: CursorWrapper, *, tenant_id: uuid.UUID, job_ids: Sequence[uuid.UUID]
) -> list[LockedJob]:
    """Lock a batch of the tenant's jobs until the caller's transaction ends (in id order)."""
    cursor.execute(SQL["locked_jobs_for_operator"], {"tenant": tenant_id, "ids": list(job_ids)})
    return [LockedJob(*row) for row in cursor.fetchall()]


def cancel_locked_job(cursor: CursorWrapper, job: LockedJob, *, action_id: uuid.UUID) -> Moved | None:
    """Cancel a job locked by :func:`lock_jobs_for_operator`; None if its state is not
    cancellable. A RUNNING job's attempt ends in the ledger as ``lease_lost``."""
    if job.state not in CANCELLABLE_STATES:
        return None
    moved = _transition(
        cursor,
        SQL["cancel_job"],
        job.job_id,
        reason="cancelled",
        detail={"operator_action": str(action_id)},
        from_state=job.state,
        fence=job.fence,
        attempt=job.attempt,
        error_detail=f"cancelled by operator action {action_id}",
        price=_price_micros(job.model_policy),
        event_id=uuid.uuid4(),
        event_type=EventType.DEAD_LETTERED,
    )
    if moved is not None and job.state == JobState.RUNNING:
        report = AttemptReport(outcome=AttemptOutcome.LEASE_LOST, error_detail="cancelled by operator")
        _end_attempt(cursor, job.job_id, job.fence, report)
    return moved


def rerun_locked_job(cursor: CursorWrapper, job: LockedJob, *, action_id: uuid.UUID) -> Moved | None:
    """Make a job locked by :func:`lock_jobs_for_operator` READY again with a fresh attempt
    budget; None if its state is not re-runnable or the tenant's admission budget is full."""
    if job.state not in RERUNNABLE_STATES:
        return None
    return _transition(
        cursor,
        SQL["rerun_job"],
        job.job_id,
        reason="operator_rerun",
        detail={"operator_action": str(action_id)},
        from_state=job.state,
        fence=job.fence,
        attempts=settings.JOB_MAX_ATTEMPTS,
        price=_price_micros(job.model_policy),
        action_id=action_id,
    )
