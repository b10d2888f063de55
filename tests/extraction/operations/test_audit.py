"""The self-audit (OPS-6): each finding made for real (rows, Redis keys, a broker), found, and
repaired or alarmed on; one JSON log line per finding; the scheduler's sweep at most every
AUDIT_INTERVAL_SECONDS."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db.models.functions import Now
from django.utils import timezone
from kombu import Connection

from config.logging import JsonFormatter
from config.topology import DELIVERY, INGRESS
from delivery import dispatch, fan_out
from delivery.endpoints import register_endpoint
from delivery.models import CircuitState, Delivery, DeliveryState, WebhookEndpoint
from extraction.capacity import limiter
from extraction.events import EventType
from extraction.execution import scheduler
from extraction.models import Attempt, AttemptOutcome, ExtractionJob, JobState, OutboxEvent
from extraction.operations.audit import Action, Finding, PeriodicAudit, run_audit
from extraction.outbox.relay import OutboxRelay
from tests.extraction.operations.history import claim, complete, relive, unpaid, waiting_job
from tests.factories import make_job, make_tenant
from tests.system import purge_queues, queue_depth, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _finding(findings: list[Finding], kind: str) -> Finding:
    (found,) = [f for f in findings if f.kind == kind]
    return found


def _audit_json(*args: str) -> dict[str, Any]:
    out = StringIO()
    call_command("audit", *args, "--format", "json", stdout=out)
    return {f["kind"]: f for f in json.loads(out.getvalue())["findings"]}


def _stale_requested_event(settings, *, claimed_for: timedelta | None) -> OutboxEvent:
    """An accepted job whose requested event has waited twice the lag bound, held by a relay's
    claim for ``claimed_for`` more (a relay that claimed it and died), or by none."""
    job = make_job(make_tenant(), state=JobState.ACCEPTED)
    event = OutboxEvent.objects.get(job_id=job.pk, event_type=EventType.REQUESTED)
    now = timezone.now()
    OutboxEvent.objects.filter(pk=event.pk).update(
        created_at=now - timedelta(seconds=2 * settings.AUDIT_OUTBOX_LAG_SECONDS),
        claimed_until=now + claimed_for if claimed_for is not None else None,
        publish_attempts=1,
    )
    return event


def test_an_event_a_dead_relay_still_holds_is_found_and_made_claimable_again(broker, settings):
    event = _stale_requested_event(settings, claimed_for=timedelta(hours=1))
    out = StringIO()

    call_command("audit", stdout=out)  # report only

    assert "audit (report only): 5 checks, 1 with findings" in out.getvalue()
    assert "outbox_unpublished" in out.getvalue() and str(event.event_id) in out.getvalue()
    assert OutboxEvent.objects.get(pk=event.pk).claimed_until is not None
    assert OutboxRelay(broker_url=broker).relay_once() == 0  # the claim keeps the relay away

    found = _audit_json("--repair")["outbox_unpublished"]

    assert found == {
        "kind": "outbox_unpublished",
        "count": 1,
        "examples": [str(event.event_id)],
        "action": "repaired",
        "acted_on": 1,
        "detail": f"unpublished more than {settings.AUDIT_OUTBOX_LAG_SECONDS:g} s after commit; 1 held by a "
        "relay's claim; released 1 claims and woke the relay",
    }
    relay = OutboxRelay(broker_url=broker)
    assert relay.relay_once() == 1
    relay.mark_confirmed()
    assert OutboxEvent.objects.get(pk=event.pk).published_at is not None
    assert queue_depth(broker, INGRESS) == 1
    assert _audit_json("--repair")["outbox_unpublished"]["action"] == "none"


def test_an_event_nobody_holds_that_stays_unpublished_is_an_alarm_logged_as_one_json_line(broker, settings, caplog):
    event = _stale_requested_event(settings, claimed_for=None)
    OutboxEvent.objects.filter(pk=event.pk).update(last_error="OperationalError: connection refused")

    with caplog.at_level(logging.WARNING, logger="extraction.audit"):
        findings = run_audit(repair=True)

    found = _finding(findings, "outbox_unpublished")
    assert (found.count, found.action, found.acted_on) == (1, Action.ALARMED, 0)
    assert "last errors: OperationalError: connection refused" in found.detail
    (record,) = [r for r in caplog.records if r.name == "extraction.audit"]
    line = json.loads(JsonFormatter().format(record))
    assert line["level"] == "ERROR" and line["msg"] == "audit finding"
    assert (line["finding"], line["count"], line["examples"], line["action"], line["acted_on"]) == (
        "outbox_unpublished",
        1,
        [str(event.event_id)],
        "alarmed",
        0,
    )


def test_a_running_job_whose_worker_died_is_reaped_by_the_reapers_transition(broker):
    job = waiting_job(make_tenant())
    taken = claim(job, lease_seconds=0.05)  # the worker dies with the job: no heartbeat comes
    _leases_expired(job)

    reported = _finding(run_audit(repair=False), "running_without_live_lease")
    assert (reported.count, reported.examples, reported.action) == (1, (str(job),), Action.REPORTED)
    assert ExtractionJob.objects.get(pk=job).state == JobState.RUNNING

    repaired = _finding(run_audit(repair=True), "running_without_live_lease")

    assert (repaired.count, repaired.action, repaired.acted_on) == (1, Action.REPAIRED, 1)
    row = ExtractionJob.objects.get(pk=job)
    assert (row.state, row.fence, row.attempt) == (JobState.RETRY_SCHEDULED, taken.fence + 1, 1)
    assert Attempt.objects.get(job_id=job, fence=taken.fence).outcome == AttemptOutcome.LEASE_LOST
    assert _finding(run_audit(repair=True), "running_without_live_lease").action == Action.NONE


def _leases_expired(*job_ids) -> None:
    """Until the database's clock has passed the leases of ``job_ids`` (their workers died)."""
    wait_for(
        lambda: not ExtractionJob.objects.filter(pk__in=job_ids, lease_until__gte=Now()).exists(),
        timeout=10,
        interval=0.02,
        message=f"the leases of {job_ids} to expire",
    )


def _permit(job_id, fence) -> limiter.Permit:
    granted = limiter.acquire(
        limiter.pool_limits("default"), tokens=100, holder=limiter.permit_holder(job_id, fence) if job_id else ""
    )
    assert isinstance(granted, limiter.Permit)
    return granted


def _in_flight() -> int:
    snap = limiter.snapshot(limiter.pool_limits("default"))
    assert snap is not None
    return snap.in_flight


def test_permits_held_for_attempts_no_longer_running_are_given_back(broker):
    tenant = make_tenant()
    live_job = waiting_job(tenant)
    live = claim(live_job)
    live_permit = _permit(live_job, live.fence)  # a call in flight: kept
    dead_job = waiting_job(tenant)
    dead = claim(dead_job, lease_seconds=0.05)
    dead_permit = _permit(dead_job, dead.fence)  # its worker died mid-call
    done_job = waiting_job(tenant)
    done = claim(done_job)
    _permit(done_job, done.fence)  # completed, but the release never reached Redis
    complete(done, unpaid(AttemptOutcome.SUCCEEDED))
    _permit(None, None)  # a permit that names no holder: left to its TTL
    _leases_expired(dead_job)
    assert _in_flight() == 4

    reported = _finding(run_audit(repair=False), "leaked_limiter_permits")
    assert (reported.count, reported.action) == (2, Action.REPORTED)
    assert set(reported.examples) == {f"{dead_job}:{dead.fence}", f"{done_job}:{done.fence}"}
    assert _in_flight() == 4

    reclaimed_before = limiter.permit_counts(limiter.pool_limits("default")).reclaimed
    repaired = _finding(run_audit(repair=True), "leaked_limiter_permits")

    assert (repaired.count, repaired.action, repaired.acted_on) == (2, Action.REPAIRED, 2)
    assert limiter.permit_counts(limiter.pool_limits("default")).reclaimed == reclaimed_before + 2
    assert "1 permits name no holder (their TTL returns them)" in repaired.detail
    assert _in_flight() == 2  # the live call's permit and the one with no holder
    limiter.release(dead_permit, actual_tokens=None)  # the dead worker's late release takes nothing more
    assert _in_flight() == 2
    limiter.release(live_permit, actual_tokens=80)
    assert _in_flight() == 1
    assert _finding(run_audit(repair=True), "leaked_limiter_permits").action == Action.NONE


def test_permits_are_unchecked_not_clean_while_redis_is_unreachable(broker, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.5, "SOCKET_TIMEOUT": 0.5},
        }
    }

    found = _finding(run_audit(repair=True), "leaked_limiter_permits")

    assert (found.count, found.action) == (0, Action.UNCHECKED)
    assert found.detail == "Redis unreachable for pool default: not checked"


def test_an_overdue_delivery_is_an_alarm_and_wakes_the_delivery_sweep(broker, erp, settings):
    tenant = make_tenant()
    registration = register_endpoint(tenant=tenant, url=erp.url, event_types=["extraction.completed.v1"])
    assert dispatch.deliver(registration.verification_delivery_id) == "delivered"
    held_back = register_endpoint(tenant=tenant, url=erp.url + "/held", event_types=["extraction.completed.v1"])
    assert dispatch.deliver(held_back.verification_delivery_id) == "delivered"
    job = make_job(tenant, state=JobState.SUCCEEDED)
    event = OutboxEvent.objects.get(job_id=job.pk, event_type="extraction.completed.v1")
    overdue_id, held_id = sorted(
        fan_out.fan_out_event(event.event_id).created,
        key=lambda d: Delivery.objects.get(pk=d).endpoint_id != registration.endpoint.pk,
    )
    # Its endpoint's circuit is open: that delivery waits by design.
    WebhookEndpoint.objects.filter(pk=held_back.endpoint.pk).update(
        circuit_state=CircuitState.OPEN, circuit_open_until=timezone.now() + timedelta(hours=1)
    )
    # Due long ago and hinted a moment ago: the hint was lost, the sweep will not re-hint it soon.
    Delivery.objects.filter(pk__in=[overdue_id, held_id]).update(
        next_attempt_at=timezone.now() - timedelta(seconds=2 * settings.AUDIT_DELIVERY_LAG_SECONDS),
        hinted_at=timezone.now(),
    )
    purge_queues(broker)

    reported = _finding(run_audit(repair=False), "deliveries_overdue")
    assert (reported.count, reported.examples, reported.action) == (1, (str(overdue_id),), Action.REPORTED)

    with Connection(broker) as connection:
        alarmed = _finding(run_audit(repair=True, broker=connection), "deliveries_overdue")

    assert (alarmed.count, alarmed.action, alarmed.acted_on) == (1, Action.ALARMED, 1)
    assert alarmed.detail.endswith("; woke 1; the delivery sweep hinted 1")
    assert queue_depth(broker, DELIVERY) == 1  # the dispatch hint a consumer takes
    assert dispatch.deliver(overdue_id) == "delivered"
    assert Delivery.objects.get(pk=held_id).state == DeliveryState.PENDING
    assert _finding(run_audit(repair=True), "deliveries_overdue").action == Action.NONE


def test_a_review_waiting_past_its_slo_is_an_alarm_and_nothing_moves(broker, settings, caplog):
    tenant = make_tenant()
    now = timezone.now()
    old, recent = waiting_job(tenant), waiting_job(tenant)
    for job, waited in ((old, settings.REVIEW_TURNAROUND_TARGET_SECONDS + 60), (recent, 60)):
        complete(claim(job), unpaid(AttemptOutcome.REVIEW_REQUIRED), review=True)
        relive(job, now - timedelta(seconds=waited + 10), [0, 1, 2, 10])

    with caplog.at_level(logging.ERROR, logger="extraction.audit"):
        found = _finding(run_audit(repair=True), "reviews_past_slo")

    assert (found.count, found.examples, found.action, found.acted_on) == (1, (str(old),), Action.ALARMED, 0)
    assert ExtractionJob.objects.get(pk=old).state == JobState.REVIEW_REQUIRED
    assert [r.finding for r in caplog.records if r.name == "extraction.audit"] == ["reviews_past_slo"]


def test_the_scheduler_audits_at_most_every_interval(broker, settings):
    settings.AUDIT_INTERVAL_SECONDS = 3600
    sweep = PeriodicAudit()
    with Connection(broker) as connection:
        first = sweep(connection)
        assert first is not None and [f.kind for f in first] == [
            "outbox_unpublished",
            "running_without_live_lease",
            "leaked_limiter_permits",
            "deliveries_overdue",
            "reviews_past_slo",
        ]
        assert sweep(connection) is None  # within the interval: nothing runs
        settings.AUDIT_INTERVAL_SECONDS = 0
        assert sweep(connection) is not None


def test_the_scheduler_tick_runs_the_audit_sweep(broker, settings):
    settings.AUDIT_INTERVAL_SECONDS = 0
    event = _stale_requested_event(settings, claimed_for=timedelta(hours=1))

    with Connection(broker) as connection:
        scheduler.scheduler_tick(connection)

    assert OutboxEvent.objects.get(pk=event.pk).claimed_until is None  # the audit's repair


def test_each_check_is_bounded_in_rows_and_examples(broker, settings):
    settings.AUDIT_LIMIT, settings.AUDIT_EXAMPLES = 2, 1
    tenant = make_tenant()
    jobs = []
    for _ in range(3):
        jobs.append(waiting_job(tenant))
        claim(jobs[-1], lease_seconds=0.05)
    _leases_expired(*jobs)

    first = _finding(run_audit(repair=True), "running_without_live_lease")
    second = _finding(run_audit(repair=True), "running_without_live_lease")

    assert (first.count, len(first.examples), first.acted_on) == (2, 1, 2)
    assert (second.count, second.acted_on) == (1, 1)  # the rest, in the next round
    assert ExtractionJob.objects.filter(pk__in=jobs, state=JobState.RETRY_SCHEDULED).count() == 3
