"""The job state machine on real PostgreSQL: fencing, leases, the reaper, deadlines, the inbox.
Several actors are simulated by calling the lifecycle functions as two workers would."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import TenantUsage
from extraction.execution import lifecycle
from extraction.execution.lifecycle import AttemptReport
from extraction.models import (
    Attempt,
    ExecutionInbox,
    ExtractionJob,
    ExtractionResult,
    JobEvent,
    OutboxEvent,
    QuarantinedMessage,
)
from tests.factories import submit

pytestmark = pytest.mark.django_db(transaction=True)

# With POSTGRES_PREPARED_STATEMENTS off, ``prepare=True`` is ignored: nothing to observe.
needs_prepared_statements = pytest.mark.skipif(
    connection.settings_dict["OPTIONS"].get("prepare_threshold") is None, reason="POSTGRES_PREPARED_STATEMENTS is off"
)

OUTPUT = {"schema": "invoice.v1"}


def _ready_job(tenant) -> str:
    job_id = submit(tenant)
    requested = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
    assert lifecycle.take_in_requested_event(event_id=requested.event_id, payload=requested.payload) == "taken_in"
    return job_id


def _expire_lease(job_id: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE extraction_jobs SET lease_until = now() - interval '1 second' WHERE id = %s", [job_id])


def _complete(claim) -> bool:
    return lifecycle.complete_job(
        claim,
        review_required=False,
        output=OUTPUT,
        validation={},
        policy_version="test",
        report=AttemptReport(outcome="succeeded"),
    )


def test_stale_worker_completion_is_rejected_by_the_fence(tenant):
    job_id = _ready_job(tenant)
    stale = lifecycle.claim_next_job(worker_id="worker-a")
    _expire_lease(job_id)  # worker A stalls past its lease
    assert lifecycle.reap_expired_leases() == 1
    ExtractionJob.objects.filter(pk=job_id).update(available_at=timezone.now() - timedelta(seconds=1))
    fresh = lifecycle.claim_next_job(worker_id="worker-b")
    assert (stale.fence, fresh.fence) == (1, 3)

    assert _complete(stale) is False  # zombie A wakes up: 0 rows, discarded
    assert _complete(fresh) is True
    job = ExtractionJob.objects.get(pk=job_id)
    assert job.state == "SUCCEEDED" and job.fence == 3 and job.attempt == 2
    assert ExtractionResult.objects.get(job_id=job_id).fence == 3
    outcomes = dict(Attempt.objects.filter(job_id=job_id).values_list("fence", "outcome"))
    assert outcomes == {1: "stale_completion", 3: "succeeded"}
    assert OutboxEvent.objects.filter(job_id=job_id, event_type="extraction.completed.v1").count() == 1


def test_completion_needs_a_live_lease_even_with_the_right_fence(tenant):
    job_id = _ready_job(tenant)
    claim = lifecycle.claim_next_job(worker_id="w")
    _expire_lease(job_id)
    assert _complete(claim) is False
    assert ExtractionJob.objects.get(pk=job_id).state == "RUNNING"  # the reaper's to take


def test_heartbeat_reports_lost_ownership(tenant):
    job_id = _ready_job(tenant)
    claim = lifecycle.claim_next_job(worker_id="w")
    assert lifecycle.extend_leases([claim]) == set()
    _expire_lease(job_id)
    assert lifecycle.extend_leases([claim]) == {claim.job_id}


def test_a_heartbeat_racing_our_own_completion_does_not_call_the_job_lost(tenant):
    """The heartbeat takes its list of claims, then the completion commits, then its UPDATE
    finds the job no longer RUNNING: under our fence that is our own doing, not a lost lease
    (a benchmark run logged "lease lost: the attempt's result will be discarded" for a job
    whose result had just been committed). A newer fence is still reported."""
    mine, stolen = _ready_job(tenant), _ready_job(tenant)
    claims = {c.job_id: c for c in (lifecycle.claim_next_job(worker_id="w"), lifecycle.claim_next_job(worker_id="w"))}
    assert _complete(claims[uuid.UUID(mine)]) is True
    _expire_lease(stolen)
    assert lifecycle.reap_expired_leases() == 1  # fence + 1: another worker's now
    assert lifecycle.extend_leases(list(claims.values())) == {uuid.UUID(stolen)}


def test_reaper_keeps_the_attempt_counter_and_fails_when_the_budget_is_spent(tenant):
    job_id = _ready_job(tenant)
    ExtractionJob.objects.filter(pk=job_id).update(max_attempts=2)
    for expected_state in ("RETRY_SCHEDULED", "FAILED_TERMINAL"):
        ExtractionJob.objects.filter(pk=job_id).update(available_at=timezone.now() - timedelta(seconds=1))
        assert lifecycle.claim_next_job(worker_id="w") is not None
        _expire_lease(job_id)
        assert lifecycle.reap_expired_leases() == 1
        assert ExtractionJob.objects.get(pk=job_id).state == expected_state
    job = ExtractionJob.objects.get(pk=job_id)
    assert (job.attempt, job.error_class) == (2, "retries_exhausted")
    assert OutboxEvent.objects.filter(job_id=job_id, event_type="extraction.dead_lettered.v1").count() == 1
    usage = TenantUsage.objects.get(tenant=tenant.tenant)
    assert (usage.pending_jobs, usage.reserved_tokens) == (0, 0)  # the budget came back once


def test_retry_that_cannot_finish_before_the_deadline_is_terminal_instead(tenant, settings):
    job_id = _ready_job(tenant)
    claim = lifecycle.claim_next_job(worker_id="w")
    ExtractionJob.objects.filter(pk=job_id).update(deadline_at=timezone.now() + timedelta(seconds=20))
    settings.ATTEMPT_TIMEOUT_SECONDS = 45
    result = lifecycle.retry_or_fail(
        claim, report=AttemptReport(outcome="timeout"), retry=True, delay_seconds=1, error_class="timeout"
    )
    assert result == "failed"
    assert ExtractionJob.objects.get(pk=job_id).error_class == "deadline_exceeded"


def test_waiting_job_past_its_deadline_fails_with_a_dead_letter_event(tenant):
    job_id = _ready_job(tenant)
    ExtractionJob.objects.filter(pk=job_id).update(deadline_at=timezone.now() - timedelta(seconds=1))
    assert lifecycle.expire_deadlines() == 1
    job = ExtractionJob.objects.get(pk=job_id)
    assert (job.state, job.error_class) == ("FAILED_TERMINAL", "deadline_exceeded")
    assert OutboxEvent.objects.filter(job_id=job_id, event_type="extraction.dead_lettered.v1").exists()


def test_hand_back_restores_the_attempt_and_keeps_the_fence(tenant):
    job_id = _ready_job(tenant)
    claim = lifecycle.claim_next_job(worker_id="w")
    assert lifecycle.hand_back(claim, available_in_seconds=30, outcome="capacity_deferred", detail="pool default: rpm")
    job = ExtractionJob.objects.get(pk=job_id)
    assert (job.state, job.attempt, job.fence) == ("READY", 0, 1)
    assert job.available_at > timezone.now() + timedelta(seconds=25)
    assert Attempt.objects.get(job_id=job_id).outcome == "capacity_deferred"


def test_redelivered_event_is_a_no_op_and_never_resets_a_running_job(tenant):
    job_id = submit(tenant)
    requested = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
    assert lifecycle.take_in_requested_event(event_id=requested.event_id, payload=requested.payload) == "taken_in"
    lifecycle.claim_next_job(worker_id="w")
    assert lifecycle.take_in_requested_event(event_id=requested.event_id, payload=requested.payload) == "duplicate"
    assert ExtractionJob.objects.get(pk=job_id).state == "RUNNING"
    assert ExecutionInbox.objects.filter(job_id=job_id).count() == 1


def test_same_event_id_with_another_payload_is_quarantined(tenant):
    job_id = submit(tenant)
    requested = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
    lifecycle.take_in_requested_event(event_id=requested.event_id, payload=requested.payload)
    forged = {**requested.payload, "state_version": 99}
    assert lifecycle.take_in_requested_event(event_id=requested.event_id, payload=forged) == "quarantined"
    quarantined = QuarantinedMessage.objects.get(event_id=requested.event_id)
    assert quarantined.reason == "digest_mismatch" and quarantined.payload == forged


def test_event_for_an_unknown_job_is_refused():
    payload = {"job_id": str(uuid.uuid4()), "event_version": 1, "state_version": 1}
    assert lifecycle.take_in_requested_event(event_id=uuid.uuid4(), payload=payload) == "unknown_job"
    assert not ExecutionInbox.objects.exists()


def test_every_transition_is_numbered_in_the_event_log(tenant):
    job_id = _ready_job(tenant)
    claim = lifecycle.claim_next_job(worker_id="w")
    lifecycle.retry_or_fail(
        claim, report=AttemptReport(outcome="provider_error"), retry=True, delay_seconds=0, error_class="provider_error"
    )
    claim = lifecycle.claim_next_job(worker_id="w")
    _complete(claim)
    events = list(
        JobEvent.objects.filter(job_id=job_id).order_by("state_version").values_list("state_version", "to_state")
    )
    assert events == [
        (1, "ACCEPTED"),
        (2, "READY"),
        (3, "RUNNING"),
        (4, "RETRY_SCHEDULED"),
        (5, "RUNNING"),
        (6, "SUCCEEDED"),
    ]
    assert ExtractionJob.objects.get(pk=job_id).state_version == 6


def test_daily_spend_counts_reported_usage_not_the_reservation(tenant, settings):
    settings.MODEL_POLICIES = {"default": {**settings.MODEL_POLICIES["default"], "price_per_1k_tokens_micros": 2000}}
    job_id = _ready_job(tenant)
    claim = lifecycle.claim_next_job(worker_id="w")
    assert lifecycle.complete_job(
        claim,
        review_required=False,
        output=OUTPUT,
        validation={},
        policy_version="t",
        report=AttemptReport(outcome="succeeded", input_tokens=1000, output_tokens=500),
    )
    usage = TenantUsage.objects.get(tenant=tenant.tenant)
    assert usage.spent_today_micros == 1500 * 2000 // 1000  # CAP-4: 1,500 tokens used, 6,000 were reserved
    assert (usage.pending_jobs, usage.reserved_tokens) == (0, 0)
    assert Attempt.objects.get(job_id=job_id).input_tokens == 1000


def test_a_claim_says_whether_another_job_was_eligible(tenant):
    """A slot that takes the last eligible job stops after it instead of paying an empty claim."""
    _ready_job(tenant)
    _ready_job(tenant)
    first = lifecycle.claim_next_job(worker_id="w")
    last = lifecycle.claim_next_job(worker_id="w")
    assert (first.more_eligible, last.more_eligible) == (True, False)
    assert lifecycle.claim_next_job(worker_id="w") is None


def test_one_wake_up_runs_every_eligible_job_and_stops_when_none_is_left(tenant, settings):
    """Jobs without a wake-up of their own (retries coming due, recovered jobs) are taken by a
    slot that claims again while its claim saw another eligible job, however long its attempt
    took (a scheduler interval of 0: no attempt is "short"); it stops after the last one
    instead of paying an empty claim."""
    from extraction.execution.runtime import WorkerRuntime
    from extraction.execution.worker import run_slot

    settings.SCHEDULER_INTERVAL_SECONDS = 0.0
    jobs = [_ready_job(tenant) for _ in range(3)]
    assert run_slot(WorkerRuntime(worker_id="w")) == 3
    assert set(ExtractionJob.objects.filter(pk__in=jobs).values_list("state", flat=True)) <= {
        "SUCCEEDED",
        "REVIEW_REQUIRED",
    }


def test_a_wake_up_whose_job_a_slot_ran_by_claiming_again_stops_without_a_claim(tenant):
    """In a backlog a slot claiming again takes jobs whose wake-ups are still queued; each such
    wake-up then paid a pre-check and a claim that found nothing of its own. It is dropped now,
    once, and only for a job run that way; a wake-up spent by a first claim still claims."""
    from extraction.execution.runtime import WorkerRuntime
    from extraction.execution.worker import run_slot

    rt = WorkerRuntime(worker_id="w")
    first, second = _ready_job(tenant), _ready_job(tenant)
    assert run_slot(rt, woken_for=first) == 2  # took first, then second by claiming again

    later = _ready_job(tenant)
    assert run_slot(rt, woken_for=second) == 0  # second's wake-up is spent: no claim
    assert ExtractionJob.objects.get(pk=later).state == "READY"
    assert run_slot(rt, woken_for=first) == 1  # first's was spent on first: it claims (later)
    assert ExtractionJob.objects.get(pk=later).state == "SUCCEEDED"

    last = _ready_job(tenant)
    assert run_slot(rt, woken_for=second) == 1  # dropped once only (a redelivery claims)
    assert ExtractionJob.objects.get(pk=last).state == "SUCCEEDED"

    after_a_bad_hint = _ready_job(tenant)
    assert run_slot(rt, woken_for="not-a-job-id") == 1  # a malformed hint is a plain wake-up
    assert ExtractionJob.objects.get(pk=after_a_bad_hint).state == "SUCCEEDED"


def test_the_next_claim_marks_the_confirmed_rows_and_never_takes_them_again(tenant):
    from extraction.outbox.relay import claim_unpublished

    submit(tenant)
    first = claim_unpublished(batch_size=10, claim_seconds=0)  # a claim that has already lapsed
    assert len(first) == 1
    submit(tenant)
    second = claim_unpublished(batch_size=10, claim_seconds=30, confirmed=[first[0].event_id])
    assert [row.event_id for row in second] != [first[0].event_id] and len(second) == 1
    published = dict(OutboxEvent.objects.values_list("event_id", "published_at"))
    assert published[first[0].event_id] is not None and published[second[0].event_id] is None
    assert claim_unpublished(batch_size=10, claim_seconds=30, confirmed=[]) == []


@needs_prepared_statements
def test_the_hot_statements_are_planned_once_per_connection(tenant):
    """Django turns psycopg's prepared statements off unless asked, and psycopg then ignores
    ``prepare=True``: the claim was planned on every call (its planning cost PostgreSQL more
    than running it). The claim, completion, ingress and relay statements are prepared now,
    and the tenant-policy read the worker makes for every answer."""
    from extraction.intake.text import DocumentText
    from extraction.outbox.relay import claim_unpublished
    from extraction.providers.builtin import extract_invoice
    from extraction.validation.policy import tenant_policy
    from extraction.validation.schema import parse_invoice_v1

    def prepared() -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            return [row[0] for row in cursor.fetchall()]

    _ready_job(tenant)
    _ready_job(tenant)
    claim_unpublished(batch_size=10, claim_seconds=30)
    first = lifecycle.claim_next_job(worker_id="w")
    assert _complete(first)
    invoice = parse_invoice_v1(
        json.dumps(
            extract_invoice(
                DocumentText(
                    pages=("ACME Supplies GmbH\nVAT ID: DE123456789\nInvoice number: INV-1\nTotal: 119.00 EUR\n",)
                )
            )
        )
    )
    tenant_policy(first.tenant_id, invoice)
    statements = prepared()
    for marker in (
        "INSERT INTO execution_inbox",
        "candidates AS",
        "ended AS",
        "relaxed AS",
        "t.allowed_currencies",
    ):
        assert sum(marker in s for s in statements) == 1, (marker, statements)
    # The next of each reuses its statement instead of preparing another.
    lifecycle.claim_next_job(worker_id="w")
    _ready_job(tenant)
    claim_unpublished(batch_size=10, claim_seconds=30)
    tenant_policy(first.tenant_id, invoice)
    assert len(prepared()) == len(statements)


def test_claimers_beyond_the_fair_candidates_take_the_oldest_unlocked_job_of_an_eligible_tenant(tenant):
    """The fair pick offers a tenant's four oldest jobs; a claimer that finds them all locked
    by concurrent claimers falls back to plain order of availability, still only among tenants
    below their in-flight cap, instead of coming back empty."""
    import psycopg

    from tests.factories import make_tenant_context

    capped = make_tenant_context(f"c-{uuid.uuid4().hex[:8]}", max_in_flight=1)
    capped_first, capped_second = _ready_job(capped), _ready_job(capped)
    jobs = [_ready_job(tenant) for _ in range(6)]
    assert str(lifecycle.claim_next_job(worker_id="w").job_id) == capped_first  # the capped tenant is full now
    db = connection.settings_dict
    with psycopg.connect(host=db["HOST"], port=db["PORT"], dbname=db["NAME"], user=db["USER"]) as other:
        other.execute("SELECT id FROM extraction_jobs WHERE id = ANY(%s::uuid[]) FOR UPDATE", [jobs[:4]])
        claim = lifecycle.claim_next_job(worker_id="w")
        other.rollback()
    # Not capped_second (older, but its tenant is at its cap), not the four locked ones.
    assert str(claim.job_id) == jobs[4]
    assert claim.more_eligible  # the locked ones are still waiting
    assert ExtractionJob.objects.get(pk=capped_second).state == "READY"


@needs_prepared_statements
def test_the_prepared_hot_statements_settle_on_their_generic_plan(tenant):
    """Prepared, a statement is planned once only if PostgreSQL takes its generic plan, and it
    does only if that plan is as good as one planned for the values. States written into the
    statement (job_state_ready() folds to 'READY' while planning) keep the partial indexes
    usable in the generic plan; a state sent as a parameter would not, and the claim would be
    planned on every call again."""
    jobs = [_ready_job(tenant) for _ in range(8)]
    with connection.cursor() as cursor:
        # A history of finished jobs, as in production: scanning it is what the partial
        # indexes spare every claim.
        cursor.execute(
            """
            INSERT INTO extraction_jobs (id, tenant_id, document_id, document_version, idempotency_key, request_hash,
                schema, model_policy, options, priority_class, state, state_version, attempt, max_attempts, fence,
                lease_owner, available_at, deadline_at, estimated_tokens, byte_size, error_class, error_detail,
                created_at, updated_at)
            SELECT gen_random_uuid(), j.tenant_id, j.document_id, j.document_version, 'h-' || n, '', j.schema,
                   j.model_policy, '{}', 'batch', 'SUCCEEDED', 4, 1, 5, 1, '', now() - interval '1 day',
                   now() - interval '1 hour', 6000, 10, '', '', now() - interval '1 day', now() - interval '1 day'
              FROM generate_series(1, 30000) AS n, extraction_jobs j WHERE j.id = %s
            """,
            [jobs[0]],
        )
        cursor.execute("ANALYZE extraction_jobs")
    for _ in jobs:
        assert _complete(lifecycle.claim_next_job(worker_id="w"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        plans = {statement: (generic, custom) for statement, generic, custom in cursor.fetchall()}
    for marker in ("candidates AS", "ended AS", "INSERT INTO execution_inbox"):
        [(generic, custom)] = [counts for statement, counts in plans.items() if marker in statement]
        assert generic >= 1, (marker, generic, custom)


def test_a_wake_up_while_the_database_is_unreachable_is_dropped_not_dead_lettered(tenant):
    """A real connection failure (the connection's port pointed at a closed one): the wake-up
    task answers 0 instead of failing, and the job waits for the next wake-up."""
    import socket

    from django.db import connection

    from extraction.execution.tasks import wake_up

    job = _ready_job(tenant)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    port = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = str(closed_port)
    try:
        assert wake_up.run() == 0
    finally:
        connection.close()
        connection.settings_dict["PORT"] = port
    assert ExtractionJob.objects.get(pk=job).state == "READY"
