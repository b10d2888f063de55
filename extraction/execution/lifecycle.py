"""The job state machine: every way a job moves, in one module.

    ACCEPTED ──ingress──▶ READY ──claim──▶ RUNNING ──complete──▶ SUCCEEDED
        │                   ▲  ▲             │  │  └─complete──▶ REVIEW_REQUIRED ──review──▶ SUCCEEDED / FAILED_TERMINAL
        │                   │  └─hand back───┘  ├─retry──▶ RETRY_SCHEDULED ──claim──▶ RUNNING
        │                   └── recovery        └─fail / reap (budget spent)──▶ FAILED_TERMINAL
        └──────────────────── deadline ───────────────────────────────────────▶ FAILED_TERMINAL

Every transition is one guarded ``UPDATE … WHERE state = ANY(expected) [AND fence = F]`` whose
row count decides: 0 rows means another actor won (a newer fence, the reaper, a deadline) and
the caller writes nothing else. Each transition bumps ``state_version`` and appends the
matching ``job_events`` row in the same transaction. Leaving the pending states gives the
job's share of the tenant's admission budget back. Time is always the database's ``now()``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Sequence

from django.conf import settings
from django.db import connection, transaction

from config.db import prepared_cursor

from extraction.models import PENDING_STATES, AttemptOutcome, JobState

logger = logging.getLogger(__name__)

COMPLETED_EVENT = "extraction.completed.v1"
REVIEW_REQUIRED_EVENT = "extraction.review_required.v1"
DEAD_LETTERED_EVENT = "extraction.dead_lettered.v1"


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

def _transition(
    cursor,
    job_id: uuid.UUID,
    *,
    from_states: Sequence[str],
    to_state: str,
    reason: str,
    fence: int | None = None,
    live_lease: bool = False,
    set_sql: str = "",
    where_sql: str = "",
    params: dict[str, Any] | None = None,
    detail: dict[str, Any] | None = None,
) -> tuple | None:
    """Move one job, guarded; return ``(tenant_id, state_version, fence)`` or None if it lost.

    ``set_sql`` and ``where_sql`` are fixed fragments written in this module (never user
    input): the columns a particular transition also sets, and any extra guard it needs.
    """
    leaves_pending = to_state not in PENDING_STATES
    assert all((s in PENDING_STATES) == (from_states[0] in PENDING_STATES) for s in from_states)
    releases_budget = leaves_pending and from_states[0] in PENDING_STATES
    guard = where_sql
    if fence is not None:
        guard += " AND fence = %(fence)s"
    if live_lease:
        guard += " AND lease_until > now()"
    values = {"id": job_id, "from": list(from_states), "to": to_state, "fence": fence, **(params or {})}
    cursor.execute(
        f"""
        UPDATE extraction_jobs
           SET state = %(to)s, state_version = state_version + 1, updated_at = now() {set_sql}
         WHERE id = %(id)s AND state = ANY(%(from)s) {guard}
        RETURNING tenant_id, state_version, fence, byte_size, estimated_tokens, model_policy
        """,
        values,
    )
    row = cursor.fetchone()
    if row is None:
        return None
    tenant_id, state_version, new_fence, byte_size, tokens, model_policy = row
    cursor.execute(
        """
        INSERT INTO job_events (job_id, tenant_id, state_version, from_state, to_state, reason, detail, created_at)
        VALUES (%s, %s, %s, %s, %s, %s, %s, now())
        """,
        [job_id, tenant_id, state_version, from_states[0] if len(from_states) == 1 else "", to_state, reason,
         json.dumps(detail or {})],
    )
    if releases_budget:
        # The attempts' usage was recorded in the ledger before this transition.
        cursor.execute(
            "UPDATE accounts_tenantusage SET " + _BUDGET_RELEASED.format(
                bytes="%(bytes)s", tokens="%(tokens)s", used=f"({_TOKENS_USED} WHERE job_id = %(job)s)")
            + " WHERE tenant_id = %(tenant)s",
            {"bytes": byte_size, "tokens": tokens, "job": job_id, "tenant": tenant_id,
             "price": _price_micros(model_policy)},
        )
    return tenant_id, state_version, new_fence


# CAP-4: what the job cost is the usage providers reported for its attempts (recorded in the
# ledger before the job leaves the pending states), not the reservation it was admitted with.
_BUDGET_RELEASED = """
    pending_jobs = pending_jobs - 1, pending_bytes = pending_bytes - {bytes},
    reserved_tokens = reserved_tokens - {tokens},
    spent_today_micros = CASE WHEN spend_day = current_date THEN spent_today_micros ELSE 0 END
        + {used} * %(price)s / 1000,
    spend_day = current_date
"""
_TOKENS_USED = "SELECT coalesce(sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)), 0) FROM extraction_attempts"


def _price_micros(model_policy: str) -> int:
    return int(settings.MODEL_POLICIES.get(model_policy, {}).get("price_per_1k_tokens_micros", 0))


def _outbox(cursor, *, job_id: uuid.UUID, tenant_id: uuid.UUID, event_type: str, payload: dict[str, Any]) -> None:
    cursor.execute(
        """
        INSERT INTO outbox_events (event_id, job_id, tenant_id, event_type, payload, created_at,
                                   publish_attempts, last_error)
        VALUES (%s, %s, %s, %s, %s, now(), 0, '')
        """,
        [uuid.uuid4(), job_id, tenant_id, event_type, json.dumps(payload)],
    )


# What an attempt's ledger row learns when it ends; ``{outcome}`` and ``{error}`` are the
# expressions for those two columns (the completion statement swaps in the stale verdict).
_ATTEMPT_ENDED = """
    ended_at = coalesce(ended_at, now()), outcome = {outcome}, provider = %(provider)s,
    model = %(model)s, provider_request_id = %(request_id)s, input_tokens = %(input_tokens)s,
    output_tokens = %(output_tokens)s, latency_ms = %(latency_ms)s, http_status = %(http_status)s,
    retry_after_seconds = %(retry_after)s, error_detail = {error}
"""


def _attempt_params(report: AttemptReport) -> dict[str, Any]:
    return {
        "outcome": report.outcome, "provider": report.provider, "model": report.model[:128],
        "request_id": report.provider_request_id[:128], "input_tokens": report.input_tokens,
        "output_tokens": report.output_tokens, "latency_ms": report.latency_ms,
        "http_status": report.http_status, "retry_after": report.retry_after_seconds,
        "error": report.error_detail[:2000],
    }


def _end_attempt(cursor, job_id: uuid.UUID, fence: int, report: AttemptReport) -> None:
    cursor.execute(
        "UPDATE extraction_attempts SET " + _ATTEMPT_ENDED.format(outcome="%(outcome)s", error="%(error)s")
        + " WHERE job_id = %(job)s AND fence = %(fence)s",
        {**_attempt_params(report), "job": job_id, "fence": fence},
    )


def _dead_letter_payload(job_id: uuid.UUID, state_version: int, error_class: str, attempt: int) -> dict[str, Any]:
    # A reference, never the invoice (DLQ-1): the job row holds the history.
    return {"job_id": str(job_id), "event_version": 1, "state_version": state_version,
            "error_class": error_class, "attempt": attempt}


# --- ingress (BRK-2, BRK-3) ------------------------------------------------------------------

def payload_digest(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def take_in_requested_event(*, event_id: uuid.UUID, payload: dict[str, Any]) -> str:
    """Record an ``extraction.requested.v1`` message in the inbox and make its job runnable.

    1. ``INSERT INTO execution_inbox … ON CONFLICT (event_id) DO NOTHING``.
    2. Already there: same digest → "duplicate" (harmless redelivery); other digest →
       quarantine row + error log → "quarantined".
    3. New: ACCEPTED → READY in the same statement. A job that is already past ACCEPTED
       (RUNNING, terminal, or made READY by recovery) is left alone: "already_taken_in".
    The caller acks the message only after this returns (the commit happened).
    """
    digest = payload_digest(payload)
    job_id = uuid.UUID(str(payload["job_id"]))
    with prepared_cursor() as cursor:
        # The usual case in one statement: the inbox row, the move to READY and its event
        # (ACCEPTED and READY are both pending: no budget changes hands).
        cursor.execute(
            """
            WITH inbox AS (
                INSERT INTO execution_inbox (event_id, job_id, payload_digest, received_at)
                SELECT %(event)s, id, %(digest)s, now() FROM extraction_jobs WHERE id = %(job)s
                ON CONFLICT (event_id) DO NOTHING
                RETURNING job_id
            ),
            moved AS (
                UPDATE extraction_jobs
                   SET state = 'READY', state_version = state_version + 1, updated_at = now()
                 WHERE id = (SELECT job_id FROM inbox) AND state = 'ACCEPTED'
                RETURNING tenant_id, state_version
            ),
            event AS (
                INSERT INTO job_events (job_id, tenant_id, state_version, from_state, to_state, reason, detail,
                                        created_at)
                SELECT %(job)s, tenant_id, state_version, 'ACCEPTED', 'READY', 'taken_in',
                       jsonb_build_object('event_id', %(event)s::text), now()
                  FROM moved
            )
            SELECT EXISTS (SELECT FROM moved) FROM inbox
            """,
            {"event": event_id, "digest": digest, "job": job_id}, prepare=True,
        )
        taken_in = cursor.fetchone()
        if taken_in is not None:
            return "taken_in" if taken_in[0] else "already_taken_in"
        # Nothing inserted: a redelivery (same digest), a conflicting message, or no such job.
        cursor.execute("SELECT payload_digest FROM execution_inbox WHERE event_id = %s", [event_id])
        stored = cursor.fetchone()
        if stored is None:
            return "unknown_job"
        if stored[0] == digest:
            return "duplicate"
        cursor.execute(
            """
            INSERT INTO quarantined_messages (event_id, job_id, stored_digest, received_digest, payload,
                                              reason, received_at)
            VALUES (%s, %s, %s, %s, %s, 'digest_mismatch', now())
            """,
            [event_id, job_id, stored[0], digest, json.dumps(payload)],
        )
        logger.error("inbox digest mismatch: message quarantined",
                     extra={"event_id": str(event_id), "job_id": str(job_id)})
        return "quarantined"


# --- execution (EXE-1..3) --------------------------------------------------------------------

# The fair claim (EXE-1, BP-4). One statement, in the claiming transaction (built from the
# fragments below):
#
# 1. ``running``: RUNNING jobs per tenant (the few running rows, by job_running_tenant_idx).
# 2. ``tenants``: tenants with pending work and below their in-flight cap.
# 3. ``candidates``: each such tenant's next few runnable jobs, by effective time =
#    available_at, minus INTERACTIVE_PRIORITY_BOOST for interactive jobs (priority with aging:
#    a batch job that has waited longer than the boost beats a fresh interactive one). Two
#    index probes per tenant (job_fair_claim_idx), so the cost does not grow with the table.
#    Each candidate's share = (tenant's running jobs + its rank among the tenant's
#    candidates) / tenant weight: the tenant furthest below its weighted share goes first,
#    and concurrent claimers fall through to the next tenant in round-robin order.
# 4. ``next``: the best candidate not locked by another claimer (SKIP LOCKED), re-checked
#    to be runnable after the lock.
# 5. It becomes RUNNING with attempt+1, fence+1 and a lease, all by the database clock.
#
# Bound on waiting: a tenant with nothing running has share 0 and is served by the next free
# worker slot, ahead of every tenant with running work; ties between idle tenants go by
# effective time. So a 1-job tenant waits for at most one slot to free up (about the mean
# model latency / worker slots) plus the claims of other idle tenants that were there first,
# however large another tenant's backlog is.
# The in-flight cap is checked against committed RUNNING rows: claimers racing in the same
# instant may overshoot it by at most their number.
_ELIGIBLE_TENANTS = """
WITH running AS (
    SELECT tenant_id, count(*) AS n FROM extraction_jobs WHERE state = 'RUNNING' GROUP BY tenant_id
),
-- MATERIALIZED: the candidates' probes start from these few tenants in every plan; inlined,
-- a generic plan probed the job index for every tenant and joined the result afterwards.
tenants AS MATERIALIZED (
    SELECT t.id, t.weight, coalesce(r.n, 0) AS running
      FROM accounts_tenantusage u
      JOIN accounts_tenant t ON t.id = u.tenant_id
      LEFT JOIN running r ON r.tenant_id = u.tenant_id
     WHERE u.pending_jobs > 0 AND coalesce(r.n, 0) < t.max_in_flight
),
"""

_FAIR_NEXT = """
candidates AS (
    SELECT c.id, c.effective_at,
           (tn.running + row_number() OVER (PARTITION BY tn.id ORDER BY c.effective_at, c.id) - 1)::float
             / tn.weight AS share
      FROM tenants tn
      CROSS JOIN LATERAL (
          (SELECT j.id, j.available_at - make_interval(secs => %(boost)s) AS effective_at, j.deadline_at
             FROM extraction_jobs j
            WHERE j.tenant_id = tn.id AND j.priority_class = 'interactive'
              AND j.state IN ('READY', 'RETRY_SCHEDULED') AND j.available_at <= now()
              AND j.model_policy = ANY(%(policies)s)
            ORDER BY j.available_at
            LIMIT %(per_tenant)s)
          UNION ALL
          (SELECT j.id, j.available_at AS effective_at, j.deadline_at
             FROM extraction_jobs j
            WHERE j.tenant_id = tn.id AND j.priority_class = 'batch'
              AND j.state IN ('READY', 'RETRY_SCHEDULED') AND j.available_at <= now()
              AND j.model_policy = ANY(%(policies)s)
            ORDER BY j.available_at
            LIMIT %(per_tenant)s)
      ) AS c
     -- The deadline is checked on the few candidates, not inside the probes: there the planner
     -- took "pending and deadline in the future" for one row and scanned every pending job by
     -- job_pending_deadline_idx instead of reading four rows of job_fair_claim_idx (36 ms and
     -- 100,000 buffers per claim at a million rows, against 1.6 ms). An expired job holds a
     -- candidate slot until expire_deadlines takes it, within a scheduler interval.
     WHERE c.deadline_at > now()
),
-- Each candidate in order is looked up by its key and locked unless another claimer holds it,
-- until one is taken. LATERAL keeps the lookup by key whatever the plan: as a plain join, the
-- generic plan of the prepared claim (planned while the queue was short) read every runnable
-- job to join with the 64 candidates, a cost that grew with the backlog.
--
-- When more claimers arrive at once than there are fair candidates, the fair pick finds them
-- all locked; the job is then taken in plain order of availability among the same eligible
-- tenants (caps still apply), so a burst of claimers never comes back empty while work waits.
-- The second arm of the UNION ALL runs only when the first returned nothing (LIMIT 1 over an
-- Append), and not at all when there was no candidate to lock (then it could find nothing):
-- still one statement. The tenants as an array filter keep it a walk of job_runnable_idx in
-- its own order that stops at the first unlocked job; as a join, the planner (misjudging how
-- many runnable jobs the join keeps) read and sorted every runnable job of those tenants,
-- 2.6–5 ms with 3,000 waiting, and more with every job added. The walk's bound instead: the
-- runnable jobs of tenants at their cap that are older than the job taken.
next AS (
    (SELECT j.id, j.prior_state, false AS fallback
       FROM (SELECT id, share, effective_at FROM candidates ORDER BY share, effective_at LIMIT %(window)s) AS c
       CROSS JOIN LATERAL (
           SELECT j.id, j.state AS prior_state
             FROM extraction_jobs j
            WHERE j.id = c.id AND j.state IN ('READY', 'RETRY_SCHEDULED')
              FOR UPDATE SKIP LOCKED
       ) AS j
      ORDER BY c.share, c.effective_at
      LIMIT 1)
    UNION ALL
    (SELECT id, prior_state, true AS fallback FROM (
        SELECT j.id, j.state AS prior_state
          FROM extraction_jobs j
         WHERE EXISTS (SELECT FROM candidates)
           AND j.state IN ('READY', 'RETRY_SCHEDULED') AND j.available_at <= now()
           AND j.deadline_at > now() AND j.model_policy = ANY(%(policies)s)
           AND j.tenant_id = ANY(ARRAY(SELECT id FROM tenants))
         ORDER BY j.available_at, j.id
         FOR UPDATE OF j SKIP LOCKED
         LIMIT 1) AS in_order)
    LIMIT 1
)
"""

# The take, the "claimed" event and the attempt's ledger row in ONE statement: a claim is
# one round trip and one autocommit transaction. The CTEs see one snapshot; the inserts
# read the UPDATE's RETURNING, so they exist exactly when the job was taken.
_TAKE = """
, taken AS (
UPDATE extraction_jobs AS j
   SET state = 'RUNNING', attempt = j.attempt + 1, fence = j.fence + 1,
       lease_owner = %(worker)s, lease_until = now() + make_interval(secs => %(lease)s),
       state_version = j.state_version + 1, updated_at = now()
  FROM next
 WHERE j.id = next.id
RETURNING j.id, j.tenant_id, j.document_id, j.schema, j.model_policy, j.options, j.attempt,
          j.max_attempts, j.fence, j.deadline_at, j.state_version, next.prior_state, {more} AS more_eligible
),
claimed_event AS (
    INSERT INTO job_events (job_id, tenant_id, state_version, from_state, to_state, reason, detail, created_at)
    SELECT id, tenant_id, state_version, prior_state, 'RUNNING', 'claimed',
           jsonb_build_object('attempt', attempt, 'fence', fence), now()
      FROM taken
),
opened_attempt AS (
    INSERT INTO extraction_attempts (job_id, number, fence, worker_id, started_at, outcome, provider, model,
                                     provider_request_id, error_detail)
    SELECT id, attempt, fence, %(worker)s, now(), 'running', '', '', '', ''
      FROM taken
)
-- The deadline as epoch seconds: the Python timestamptz loader Django installs costs more
-- than the rest of reading the row.
SELECT id, tenant_id, document_id, schema, model_policy, options, attempt, max_attempts,
       fence, extract(epoch FROM deadline_at)::float8, more_eligible
  FROM taken
"""

# "more": whether another job was eligible at the claim, so a slot that took the last one
# stops after it instead of paying an empty claim (new jobs bring their own wake-ups).
# After the fallback, more was eligible by definition (fair candidates were there, locked).
_CLAIM_SQL = _ELIGIBLE_TENANTS + _FAIR_NEXT + _TAKE.format(
    more="next.fallback OR (SELECT count(*) FROM candidates) > 1")


def claim_next_job(*, worker_id: str, policies: Sequence[str] | None = None,
                   lease_seconds: float | None = None) -> Claim | None:
    """EXE-1: take the next runnable job, chosen fairly (see ``_CLAIM_SQL``), or None.

    ``policies`` limits the claim to jobs whose model policy's pool has capacity right now,
    so a saturated pool's jobs stay READY instead of being claimed and handed back. The
    model is called only after this short transaction has committed.
    """
    lease = lease_seconds if lease_seconds is not None else settings.LEASE_SECONDS
    params = {
        "worker": worker_id, "lease": float(lease), "policies": list(policies or settings.MODEL_POLICIES),
        "boost": float(settings.INTERACTIVE_PRIORITY_BOOST_SECONDS), "per_tenant": 4, "window": 64,
    }
    with prepared_cursor() as cursor:
        cursor.execute(_CLAIM_SQL, params, prepare=True)
        row = cursor.fetchone()
    if row is None:
        return None
    (job_id, tenant_id, document_id, schema, model_policy, options, attempt, max_attempts, fence,
     deadline_epoch, more_eligible) = row
    if isinstance(options, str):
        options = json.loads(options)
    return Claim(job_id=job_id, tenant_id=tenant_id, document_id=document_id, schema=schema,
                 model_policy=model_policy, options=options, attempt=attempt, max_attempts=max_attempts,
                 fence=fence, deadline_at=datetime.fromtimestamp(deadline_epoch, tz=timezone.utc),
                 worker_id=worker_id, more_eligible=more_eligible)


def extend_leases(claims: Sequence[Claim], *, lease_seconds: float | None = None) -> set[uuid.UUID]:
    """EXE-2: one heartbeat for many in-flight jobs. Returns the job ids whose ownership is
    LOST: a newer fence (the reaper, another worker), or a lease that expired while RUNNING.

    A job that left RUNNING under our own fence was moved by us (completed, retried or handed
    back between the caller's snapshot of its claims and this statement): not lost. Reporting
    it was a false "lease lost" warning about a result that had just been committed."""
    if not claims:
        return set()
    lease = lease_seconds if lease_seconds is not None else settings.LEASE_SECONDS
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH owned AS (
                SELECT * FROM unnest(%(ids)s::uuid[], %(fences)s::bigint[]) AS owned(id, fence)
            ),
            extended AS (
                UPDATE extraction_jobs AS j
                   SET lease_until = now() + make_interval(secs => %(lease)s)
                  FROM owned
                 WHERE j.id = owned.id AND j.fence = owned.fence
                   AND j.state = 'RUNNING' AND j.lease_until > now()
                RETURNING j.id
            )
            SELECT owned.id
              FROM owned LEFT JOIN extraction_jobs AS j ON j.id = owned.id
             WHERE owned.id NOT IN (SELECT id FROM extended)
               AND (j.id IS NULL OR j.fence <> owned.fence OR j.state = 'RUNNING')
            """,
            {"lease": lease, "ids": [c.job_id for c in claims], "fences": [c.fence for c in claims]},
        )
        return {row[0] for row in cursor.fetchall()}


# EXE-3 as ONE statement (one round trip, one autocommit transaction): the guarded move,
# the attempt's ledger row, the event, the budget, the result and the outbox event. ``moved``
# is the guard whose row count decides: without its row the job is someone else's, every
# other insert and update finds nothing to read, and the ledger records the stale completion.
# The CTEs share one snapshot, so the spend adds this attempt's tokens from ``ended`` to the
# earlier attempts' (the table still shows this one as running).
_COMPLETE_SQL = """
WITH moved AS (
    UPDATE extraction_jobs
       SET state = %(to)s, state_version = state_version + 1, updated_at = now(),
           lease_owner = '', lease_until = NULL, error_class = '', error_detail = ''
     WHERE id = %(job)s AND state = 'RUNNING' AND fence = %(fence)s AND lease_until > now()
    RETURNING tenant_id, state_version, byte_size, estimated_tokens
),
ended AS (
    UPDATE extraction_attempts
       SET {attempt_ended}
     WHERE job_id = %(job)s AND fence = %(fence)s
    RETURNING coalesce(input_tokens, 0) + coalesce(output_tokens, 0) AS tokens
),
event AS (
    INSERT INTO job_events (job_id, tenant_id, state_version, from_state, to_state, reason, detail, created_at)
    SELECT %(job)s, tenant_id, state_version, 'RUNNING', %(to)s, %(reason)s::text, %(detail)s::jsonb, now()
      FROM moved
),
budget AS (
    UPDATE accounts_tenantusage AS u
       SET {budget}
      FROM moved
     WHERE u.tenant_id = moved.tenant_id
),
result AS (
    INSERT INTO extraction_results (job_id, output, validation, policy_version, attempt_number, fence,
                                    provider, model, created_at)
    SELECT %(job)s, %(output)s::jsonb, %(validation)s::jsonb, %(policy_version)s::text, %(attempt)s::int,
           %(fence)s, %(provider)s, %(model)s, now()
      FROM moved
),
published AS (
    INSERT INTO outbox_events (event_id, job_id, tenant_id, event_type, payload, created_at,
                               publish_attempts, last_error)
    SELECT %(event_id)s, %(job)s, tenant_id, %(event_type)s::text,
           jsonb_build_object('job_id', %(job)s::text, 'event_version', 1, 'state_version', state_version),
           now(), 0, ''
      FROM moved
)
SELECT tenant_id, state_version FROM moved
""".format(attempt_ended=_ATTEMPT_ENDED.format(
    outcome="CASE WHEN EXISTS (SELECT FROM moved) THEN %(outcome)s ELSE 'stale_completion' END",
    error="CASE WHEN EXISTS (SELECT FROM moved) THEN %(error)s "
          "ELSE 'completion refused: fence or lease no longer ours' END",
), budget=_BUDGET_RELEASED.format(
    bytes="moved.byte_size", tokens="moved.estimated_tokens",
    used=f"(({_TOKENS_USED} WHERE job_id = %(job)s AND fence <> %(fence)s) + (SELECT coalesce(sum(tokens), 0) FROM ended))"))


def complete_job(
    claim: Claim,
    *,
    review_required: bool,
    output: dict[str, Any],
    validation: dict[str, Any],
    policy_version: str,
    report: AttemptReport,
) -> bool:
    """EXE-3: result row + state + outbox event, all or nothing, under the fence and a live
    lease. False = stale completion: discarded, and recorded in the attempt ledger."""
    to_state = (JobState.REVIEW_REQUIRED if review_required else JobState.SUCCEEDED).value
    # Parameters are bound server-side: a parameter's type comes from its first use, so the
    # later uses of the same name carry no cast of their own.
    params = {
        "job": claim.job_id, "fence": claim.fence, "attempt": claim.attempt, "to": to_state,
        "reason": "review_required" if review_required else "succeeded",
        "detail": json.dumps({"attempt": claim.attempt, "fence": claim.fence, "policy_version": policy_version}),
        **_attempt_params(report), "output": json.dumps(output), "validation": json.dumps(validation),
        "policy_version": policy_version, "price": _price_micros(claim.model_policy),
        "event_id": uuid.uuid4(), "event_type": REVIEW_REQUIRED_EVENT if review_required else COMPLETED_EVENT,
    }
    with prepared_cursor() as cursor:
        cursor.execute(_COMPLETE_SQL, params, prepare=True)
        moved = cursor.fetchone()
    if moved is None:
        logger.warning("stale completion discarded", extra=claim.log_extra())
        return False
    return True


def retry_or_fail(claim: Claim, *, report: AttemptReport, retry: bool, delay_seconds: float,
                  error_class: str) -> str:
    """RTY-2: persist the attempt's outcome under the current fence, in one transaction:
    RETRY_SCHEDULED with the next ``available_at`` — unless the next whole attempt (plus the
    commit margin) would end past the deadline, judged by the database clock — else
    FAILED_TERMINAL with a dead-letter outbox event (DLQ-2). Returns "retry", "failed" or "stale"."""
    with transaction.atomic(), connection.cursor() as cursor:
        if retry:
            moved = _transition(
                cursor, claim.job_id, from_states=[JobState.RUNNING], to_state=JobState.RETRY_SCHEDULED,
                reason=report.outcome, fence=claim.fence,
                set_sql=""",
                    lease_owner = '', lease_until = NULL, error_class = %(error_class)s,
                    error_detail = %(error_detail)s,
                    available_at = now() + make_interval(secs => %(delay)s)""",
                where_sql=" AND now() + make_interval(secs => %(delay)s + %(budget)s) <= deadline_at",
                params={"error_class": error_class, "error_detail": report.error_detail[:2000],
                        "delay": delay_seconds,
                        "budget": settings.ATTEMPT_TIMEOUT_SECONDS + settings.COMMIT_MARGIN_SECONDS},
                detail={"attempt": claim.attempt, "delay_seconds": round(delay_seconds, 3)},
            )
            if moved is not None:
                _end_attempt(cursor, claim.job_id, claim.fence, report)
                return "retry"
            error_class = "deadline_exceeded"  # or not ours any more: _fail_running tells
        return _fail_running(cursor, claim, report=report, error_class=error_class)


def _fail_running(cursor, claim: Claim, *, report: AttemptReport, error_class: str) -> str:
    _end_attempt(cursor, claim.job_id, claim.fence, report)  # first: the spend counts this attempt
    moved = _transition(
        cursor, claim.job_id, from_states=[JobState.RUNNING], to_state=JobState.FAILED_TERMINAL,
        reason=error_class, fence=claim.fence,
        set_sql=", lease_owner = '', lease_until = NULL, error_class = %(error_class)s, error_detail = %(error_detail)s",
        params={"error_class": error_class, "error_detail": report.error_detail[:2000]},
        detail={"attempt": claim.attempt},
    )
    if moved is None:
        _end_attempt(cursor, claim.job_id, claim.fence, AttemptReport(
            **{**report.__dict__, "outcome": AttemptOutcome.STALE_COMPLETION}))
        return "stale"
    tenant_id, state_version, _ = moved
    _outbox(cursor, job_id=claim.job_id, tenant_id=tenant_id, event_type=DEAD_LETTERED_EVENT,
            payload=_dead_letter_payload(claim.job_id, state_version, error_class, claim.attempt))
    return "failed"


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
            cursor, claim.job_id, from_states=[JobState.RUNNING], to_state=JobState.READY,
            reason=outcome, fence=claim.fence,
            set_sql=""", attempt = attempt - 1, lease_owner = '', lease_until = NULL,
                    available_at = now() + make_interval(secs => %(delay)s)""",
            params={"delay": available_in_seconds},
            detail={"available_in_seconds": round(available_in_seconds, 3), "detail": detail[:200]},
        )
        if moved is None:
            return False
        _end_attempt(cursor, claim.job_id, claim.fence, AttemptReport(outcome=outcome, error_detail=detail))
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
    to_state = JobState.SUCCEEDED if approve else JobState.FAILED_TERMINAL
    reason = "review_approved" if approve else "review_rejected"
    with transaction.atomic(), connection.cursor() as cursor:
        moved = _transition(
            cursor, job_id, from_states=[JobState.REVIEW_REQUIRED], to_state=to_state, reason=reason,
            where_sql=" AND state_version = %(seen)s",
            set_sql="" if approve else ", error_class = 'review_rejected', error_detail = %(comment)s",
            params={"seen": seen_state_version, "comment": comment[:2000]},
            detail={"reviewer_id": reviewer_id},
        )
        if moved is None:
            return False
        tenant_id, state_version, _ = moved
        cursor.execute(
            """
            INSERT INTO review_decisions (job_id, reviewer_id, decision, state_version, before, after, validation,
                                          comment, created_at)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, now())
            """,
            [job_id, reviewer_id, "approved" if approve else "rejected", seen_state_version, json.dumps(before),
             json.dumps(after) if after is not None else None, json.dumps(validation), comment],
        )
        if approve:
            # The approved output was re-validated: it carries the verdict and policy it passed.
            cursor.execute(
                "UPDATE extraction_results SET output = %s, validation = %s,"
                " policy_version = coalesce(%s, policy_version) WHERE job_id = %s",
                [json.dumps(after if after is not None else before), json.dumps(validation),
                 validation.get("policy_version"), job_id],
            )
            _outbox(cursor, job_id=job_id, tenant_id=tenant_id, event_type=COMPLETED_EVENT,
                    payload={"job_id": str(job_id), "event_version": 1, "state_version": state_version})
        else:
            _outbox(cursor, job_id=job_id, tenant_id=tenant_id, event_type=DEAD_LETTERED_EVENT,
                    payload=_dead_letter_payload(job_id, state_version, "review_rejected", 0))
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
            """
            SELECT id, fence, attempt, max_attempts,
                   now() + make_interval(secs => %s) > deadline_at AS no_time_left
              FROM extraction_jobs
             WHERE state = 'RUNNING' AND lease_until < now()
             ORDER BY id
             FOR UPDATE SKIP LOCKED
             LIMIT %s
            """,
            [settings.ATTEMPT_TIMEOUT_SECONDS + settings.COMMIT_MARGIN_SECONDS, limit],
        )
        for job_id, fence, attempt, max_attempts, no_time_left in cursor.fetchall():
            report = AttemptReport(outcome=AttemptOutcome.LEASE_LOST, error_detail="lease expired; reaped")
            if attempt >= max_attempts or no_time_left:
                error_class = "deadline_exceeded" if no_time_left else "retries_exhausted"
                moved = _transition(
                    cursor, job_id, from_states=[JobState.RUNNING], to_state=JobState.FAILED_TERMINAL,
                    reason=error_class, fence=fence,
                    set_sql=""", fence = fence + 1, lease_owner = '', lease_until = NULL,
                            error_class = %(error_class)s, error_detail = 'lease expired'""",
                    params={"error_class": error_class}, detail={"attempt": attempt, "reaped_fence": fence},
                )
                if moved:
                    _outbox(cursor, job_id=job_id, tenant_id=moved[0], event_type=DEAD_LETTERED_EVENT,
                            payload=_dead_letter_payload(job_id, moved[1], error_class, attempt))
            else:
                moved = _transition(
                    cursor, job_id, from_states=[JobState.RUNNING], to_state=JobState.RETRY_SCHEDULED,
                    reason="lease_expired", fence=fence,
                    set_sql=""", fence = fence + 1, lease_owner = '', lease_until = NULL,
                            error_class = 'lease_expired', error_detail = '',
                            available_at = now() + make_interval(secs => %(delay)s)""",
                    params={"delay": backoff_seconds(attempt)}, detail={"attempt": attempt, "reaped_fence": fence},
                )
            if moved:
                _end_attempt(cursor, job_id, fence, report)
                reaped += 1
                logger.warning("lease expired: job reaped",
                               extra={"job_id": str(job_id), "attempt": attempt, "fence": fence})
    return reaped


def expire_deadlines(*, limit: int = 500) -> int:
    """Jobs still waiting at their deadline fail terminally (``deadline_exceeded``) with a
    dead-letter event. RUNNING jobs are left to their worker and the reaper."""
    expired = 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT id, state, attempt FROM extraction_jobs
             WHERE state IN ('ACCEPTED', 'READY', 'RETRY_SCHEDULED') AND deadline_at <= now()
             ORDER BY deadline_at
             FOR UPDATE SKIP LOCKED
             LIMIT %s
            """,
            [limit],
        )
        for job_id, state, attempt in cursor.fetchall():
            moved = _transition(
                cursor, job_id, from_states=[state], to_state=JobState.FAILED_TERMINAL,
                reason="deadline_exceeded",
                set_sql=", error_class = 'deadline_exceeded', error_detail = 'deadline passed before completion'",
            )
            if moved:
                _outbox(cursor, job_id=job_id, tenant_id=moved[0], event_type=DEAD_LETTERED_EVENT,
                        payload=_dead_letter_payload(job_id, moved[1], "deadline_exceeded", attempt))
                expired += 1
    return expired


def recover_lost_ingress(*, limit: int = 500) -> int:
    """BRK-4: an ACCEPTED job whose requested event was published long ago but never reached
    the inbox (message purged, queue deleted) becomes READY anyway. The inbox would dedupe
    a late message; the guarded ACCEPTED → READY makes the late one a no-op."""
    recovered = 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT j.id FROM extraction_jobs j
              JOIN outbox_events o ON o.job_id = j.id AND o.event_type = 'extraction.requested.v1'
             WHERE j.state = 'ACCEPTED'
               AND o.published_at < now() - make_interval(secs => %s)
             ORDER BY j.id
             FOR UPDATE OF j SKIP LOCKED
             LIMIT %s
            """,
            [settings.INGRESS_RECOVERY_SECONDS, limit],
        )
        for (job_id,) in cursor.fetchall():
            if _transition(cursor, job_id, from_states=[JobState.ACCEPTED], to_state=JobState.READY,
                           reason="ingress_recovered"):
                recovered += 1
    if recovered:
        logger.warning("made ACCEPTED jobs READY without their ingress message", extra={"count": recovered})
    return recovered


def count_eligible_jobs(*, cap: int) -> int:
    """Runnable jobs whose time has come, counted up to ``cap`` (bounded work per sweep)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT count(*) FROM (
                SELECT 1 FROM extraction_jobs
                 WHERE state IN ('READY', 'RETRY_SCHEDULED') AND available_at <= now() AND deadline_at > now()
                 LIMIT %s) AS eligible
            """,
            [cap],
        )
        return int(cursor.fetchone()[0])
