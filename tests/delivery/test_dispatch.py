"""The delivery state machine against a real HTTP receiver on 127.0.0.1 and real PostgreSQL:
signing, retries, 410, 429, 3xx, 401/403, the circuit breaker, rotation, leases, redelivery."""

from __future__ import annotations

import dataclasses
import json
import logging
import socket
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from delivery import dispatch, endpoint_health, endpoints, fan_out, replay, scheduling
from delivery.models import Delivery, DeliveryAttempt, DeliveryState, WebhookEndpoint
from tests.delivery.support import active_endpoint, completed_job, fake_resolver

pytestmark = [pytest.mark.django_db(transaction=True)]


def _make_due(delivery_id) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE webhook_deliveries SET next_attempt_at = now() WHERE id = %s", [delivery_id])


def _hold_is_over(endpoint_id, column: str) -> None:
    """The endpoint's ``circuit_open_until`` or ``retry_not_before`` has come: moved to now,
    as the database clock would move past it."""
    assert column in ("circuit_open_until", "retry_not_before")
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE webhook_endpoints SET {column} = now() WHERE id = %s", [endpoint_id])


def _database_second() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT floor(extract(epoch FROM now()))::bigint")
        return cursor.fetchone()[0]


def _fan_out(outbox) -> Delivery:
    fanned = fan_out.fan_out_event(outbox.event_id)
    assert fanned.outcome == "fanned_out" and len(fanned.created) == 1
    return Delivery.objects.get(pk=fanned.created[0])


def test_delivery_verifies_with_standardwebhooks_and_carries_the_result(tenant, scripted_erp, loopback):
    endpoint, secret = active_endpoint(tenant, scripted_erp.url)
    verification = scripted_erp.received[0]
    Webhook(secret).verify(verification.body, verification.headers)
    assert json.loads(verification.body)["type"] == "webhook.verification.v1"

    job_id, outbox = completed_job(tenant)
    delivery = _fan_out(outbox)
    assert dispatch.deliver(delivery.pk) == "delivered"

    request = scripted_erp.received[-1]
    event = Webhook(secret).verify(request.body, request.headers)
    assert request.headers["webhook-id"] == str(delivery.pk)
    assert request.headers["webhook-key-id"] == endpoint.secrets.get().key_id
    assert event["type"] == "extraction.completed.v1"
    assert event["data"]["job_id"] == job_id
    assert event["data"]["state"] == "SUCCEEDED"
    assert event["data"]["state_version"] == outbox.payload["state_version"]
    assert event["data"]["result"]["output"]["invoice_number"]["value"] == "INV-2026-001"
    assert event["data"]["result"]["validation"] == {"ok": True}
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.last_status) == ("delivered", 1, 200)


def test_retry_resends_the_same_id_and_bytes_with_a_fresh_signature(tenant, scripted_erp, loopback):
    _, secret = active_endpoint(tenant, scripted_erp.url)
    delivery = _fan_out(completed_job(tenant)[1])
    scripted_erp.answer(500, body=b"database down")

    assert dispatch.deliver(delivery.pk) == "pending"
    delivery.refresh_from_db()
    assert delivery.last_status == 500 and delivery.response_snippet == "database down"
    assert dispatch.deliver(delivery.pk) == "not_due"  # backoff: not before next_attempt_at
    _make_due(delivery.pk)
    before = _database_second()
    claim = dispatch.claim_delivery(delivery.pk)
    assert not isinstance(claim, str)
    assert before <= claim.timestamp <= _database_second()  # the database's clock at this claim
    # The retry is signed with its own claim's timestamp: pass a later second in.
    later = dataclasses.replace(claim, timestamp=claim.timestamp + 1)
    assert dispatch.record_outcome(later, dispatch.send(later)) == "delivered"

    first, second = scripted_erp.received[-2:]
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == str(delivery.pk)
    assert first.body == second.body
    assert second.headers["webhook-timestamp"] == str(claim.timestamp + 1)
    assert int(first.headers["webhook-timestamp"]) <= claim.timestamp
    for request in (first, second):
        Webhook(secret).verify(request.body, request.headers)
    outcomes = list(
        DeliveryAttempt.objects.filter(delivery=delivery)
        .order_by("number")
        .values_list("number", "outcome", "http_status")
    )
    assert outcomes == [(1, "http_error", 500), (2, "delivered", 200)]


def test_410_disables_the_endpoint_and_stops_sending(tenant, scripted_erp, loopback):
    endpoint, _ = active_endpoint(tenant, scripted_erp.url)
    first = _fan_out(completed_job(tenant)[1])
    second = _fan_out(completed_job(tenant)[1])
    scripted_erp.answer(410)

    assert dispatch.deliver(first.pk) == "failed"
    endpoint.refresh_from_db()
    assert endpoint.status == "disabled" and "410" in endpoint.disabled_reason
    sent = len(scripted_erp.received)
    assert dispatch.deliver(second.pk) == "endpoint_not_active"
    assert scheduling.take_due_deliveries(limit=10) == []
    assert len(scripted_erp.received) == sent


def test_429_retry_after_is_honoured_for_the_whole_endpoint(tenant, scripted_erp, loopback, settings):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0.01  # the backoff alone would retry at once
    endpoint, _ = active_endpoint(tenant, scripted_erp.url)
    throttled = _fan_out(completed_job(tenant)[1])
    other = _fan_out(completed_job(tenant)[1])
    scripted_erp.answer(429, {"Retry-After": "2"})

    assert dispatch.deliver(throttled.pk) == "pending"
    attempt = DeliveryAttempt.objects.get(delivery=throttled, number=1)
    assert attempt.retry_after_seconds == 2.0
    throttled.refresh_from_db()
    assert throttled.next_attempt_at >= attempt.ended_at + timedelta(seconds=2)
    endpoint.refresh_from_db()
    assert endpoint.retry_not_before == attempt.ended_at + timedelta(seconds=2)
    # The other delivery waits too: the receiver asked the sender, not one message, to slow down.
    assert scheduling.take_due_deliveries(limit=10) == []
    assert dispatch.deliver(other.pk) == "held"
    assert len(scripted_erp.received) == 2  # verification + the 429

    _hold_is_over(endpoint.pk, "retry_not_before")
    _make_due(throttled.pk)
    assert dispatch.deliver(throttled.pk) == "delivered"


def test_redirect_is_a_failure_and_is_never_followed(tenant, scripted_erp, loopback, connect_guard):
    active_endpoint(tenant, scripted_erp.url)
    delivery = _fan_out(completed_job(tenant)[1])
    scripted_erp.answer(301, {"Location": "http://10.0.0.1/internal"})
    scripted_erp.answer(307, {"Location": "http://169.254.169.254/latest/meta-data/"})

    assert dispatch.deliver(delivery.pk) == "pending"
    _make_due(delivery.pk)
    assert dispatch.deliver(delivery.pk) == "pending"
    delivery.refresh_from_db()
    assert delivery.last_status == 307 and "not followed" in delivery.last_error
    assert len(scripted_erp.received) == 3  # verification + two attempts, nothing else
    assert {str(address[0]) for address in connect_guard.attempts} == {"127.0.0.1"}  # the ERP only


def test_repeated_401_flags_the_endpoint_with_an_alarm_until_verified_again(tenant, scripted_erp, loopback, caplog):
    endpoint, _ = active_endpoint(tenant, scripted_erp.url)
    delivery = _fan_out(completed_job(tenant)[1])
    for _ in range(endpoint_health.AUTH_FAILURES_TO_FLAG):
        scripted_erp.answer(401)
    with caplog.at_level(logging.ERROR, logger="delivery"):
        for _ in range(endpoint_health.AUTH_FAILURES_TO_FLAG):
            _make_due(delivery.pk)
            dispatch.deliver(delivery.pk)
    endpoint.refresh_from_db()
    assert endpoint.status == "flagged"
    assert any(getattr(r, "alarm", "") == "webhook_endpoint_auth" for r in caplog.records)
    _make_due(delivery.pk)
    assert dispatch.deliver(delivery.pk) == "endpoint_not_active"  # held, its attempts not spent

    verification = endpoints.request_verification(endpoint)
    assert dispatch.deliver(verification) == "delivered"
    endpoint.refresh_from_db()
    assert endpoint.status == "active"
    assert dispatch.deliver(delivery.pk) == "delivered"


def test_circuit_opens_after_consecutive_failures_then_one_probe_closes_it(tenant, scripted_erp, loopback, settings):
    settings.WEBHOOK_CIRCUIT_FAILURES = 2
    settings.WEBHOOK_CIRCUIT_OPEN_SECONDS = 1
    endpoint, _ = active_endpoint(tenant, scripted_erp.url)
    deliveries = [_fan_out(completed_job(tenant)[1]) for _ in range(3)]
    scripted_erp.answer(503)
    scripted_erp.answer(503)

    assert [dispatch.deliver(d.pk) for d in deliveries[:2]] == ["pending", "pending"]
    endpoint.refresh_from_db()
    assert endpoint.circuit_state == "open"
    assert dispatch.deliver(deliveries[2].pk) == "held"  # nothing goes while open
    assert scheduling.take_due_deliveries(limit=10) == []
    sent = len(scripted_erp.received)
    opened_by = DeliveryAttempt.objects.get(delivery=deliveries[1], number=1)
    assert endpoint.circuit_open_until == opened_by.ended_at + timedelta(seconds=1)

    _hold_is_over(endpoint.pk, "circuit_open_until")
    claim = dispatch.claim_delivery(deliveries[2].pk)  # the half-open probe: the longest waiting
    assert not isinstance(claim, str)
    endpoint.refresh_from_db()
    assert endpoint.circuit_state == "half_open"
    for other in deliveries[:2]:
        _make_due(other.pk)
        assert dispatch.deliver(other.pk) == "held"  # one probe at a time
    assert dispatch.record_outcome(claim, dispatch.send(claim)) == "delivered"
    endpoint.refresh_from_db()
    assert (endpoint.circuit_state, endpoint.consecutive_failures) == ("closed", 0)
    assert len(scripted_erp.received) == sent + 1


def test_half_open_probes_go_to_the_longest_waiting_delivery(tenant, scripted_erp, loopback, settings):
    """While the receiver stays down, each half-open probe is the endpoint's longest-waiting
    delivery — whichever hint races in first — so every delivery is tried in turn and none
    probes forever while others starve."""
    settings.WEBHOOK_CIRCUIT_FAILURES = 1
    settings.WEBHOOK_CIRCUIT_OPEN_SECONDS = 0.2
    settings.WEBHOOK_RETRY_CAP_SECONDS = 0.2
    active_endpoint(tenant, scripted_erp.url)
    deliveries = [_fan_out(completed_job(tenant)[1]) for _ in range(3)]
    scripted_erp.default = (503, {}, b"")  # down until the test ends
    assert dispatch.deliver(deliveries[0].pk) == "pending"  # the circuit opens

    probes = []
    deadline = time.monotonic() + 15
    while len(probes) < 4 and time.monotonic() < deadline:
        # Every due hint is handled, newest first: the race the probe rule must not be decided by.
        for delivery_id in reversed(scheduling.take_due_deliveries(limit=10)):
            outcome = dispatch.deliver(delivery_id)
            if outcome != "held":
                assert outcome == "pending"
                probes.append(delivery_id)
        time.sleep(0.05)
    assert probes == [deliveries[1].pk, deliveries[2].pk, deliveries[0].pk, deliveries[1].pk]


def test_rotation_signs_with_both_secrets_and_either_verifies(tenant, scripted_erp, loopback):
    endpoint, old_secret = active_endpoint(tenant, scripted_erp.url)
    new_secret, previous_key = endpoints.rotate_secret(endpoint)
    delivery = _fan_out(completed_job(tenant)[1])
    assert dispatch.deliver(delivery.pk) == "delivered"

    request = scripted_erp.received[-1]
    assert len(request.headers["webhook-signature"].split(" ")) == 2
    assert request.headers["webhook-key-id"].split(" ") == [new_secret.key_id, previous_key]
    Webhook(old_secret).verify(request.body, request.headers)
    Webhook(new_secret.secret).verify(request.body, request.headers)

    # After the window only the new key signs.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE webhook_secrets SET expires_at = now() - interval '1 second' WHERE key_id = %s", [previous_key]
        )
    second = _fan_out(completed_job(tenant)[1])
    assert dispatch.deliver(second.pk) == "delivered"
    request = scripted_erp.received[-1]
    assert len(request.headers["webhook-signature"].split(" ")) == 1
    Webhook(new_secret.secret).verify(request.body, request.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(old_secret).verify(request.body, request.headers)


def test_fan_out_twice_creates_each_delivery_once_with_a_stable_id(tenant, scripted_erp, loopback):
    active_endpoint(tenant, scripted_erp.url)
    active_endpoint(tenant, scripted_erp.url.replace("/hooks", "/other"))
    _, outbox = completed_job(tenant)
    first = fan_out.fan_out_event(outbox.event_id)
    again = fan_out.fan_out_event(outbox.event_id)
    assert len(first.created) == 2 and again.created == ()
    assert Delivery.objects.filter(event_id=outbox.event_id).count() == 2


def test_review_required_job_never_produces_a_completed_delivery(tenant, scripted_erp, loopback):
    completed_only, _ = active_endpoint(tenant, scripted_erp.url)
    everything, secret = active_endpoint(
        tenant,
        scripted_erp.url.replace("/hooks", "/all"),
        types=("extraction.completed.v1", "extraction.review_required.v1", "extraction.failed.v1"),
    )
    _, outbox = completed_job(tenant, review_required=True)
    fanned = fan_out.fan_out_event(outbox.event_id)
    assert [Delivery.objects.get(pk=d).endpoint_id for d in fanned.created] == [everything.pk]
    assert not Delivery.objects.filter(endpoint=completed_only, is_verification=False).exists()
    assert not Delivery.objects.filter(event_type="extraction.completed.v1").exists()

    assert dispatch.deliver(fanned.created[0]) == "delivered"
    event = Webhook(secret).verify(scripted_erp.received[-1].body, scripted_erp.received[-1].headers)
    assert event["type"] == "extraction.review_required.v1" and event["data"]["state"] == "REVIEW_REQUIRED"
    assert "result" not in event["data"]  # no invoice data leaves before a reviewer approves


def test_an_expired_sending_lease_is_sent_again_under_the_same_id(tenant, scripted_erp, loopback):
    active_endpoint(tenant, scripted_erp.url)
    delivery = _fan_out(completed_job(tenant)[1])
    claim = dispatch.claim_delivery(delivery.pk)  # the sender dies here
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE webhook_deliveries SET lease_until = now() - interval '1 second' WHERE id = %s", [delivery.pk]
        )
    assert scheduling.reap_expired_delivery_leases() == 1
    assert DeliveryAttempt.objects.get(delivery=delivery, number=1).outcome == "unknown"
    assert dispatch.deliver(delivery.pk) == "delivered"
    assert scripted_erp.received[-1].headers["webhook-id"] == str(delivery.pk)
    # The dead sender's late answer is discarded: attempt 2 owns the row now.
    assert dispatch.record_outcome(claim, dispatch.Outcome("delivered", 200)) == "stale"


def test_the_egress_rule_is_applied_again_at_every_send(tenant, scripted_erp, loopback, monkeypatch, connect_guard):
    port = scripted_erp.url.split(":")[2].split("/")[0]
    table = {"erp.test": ["127.0.0.1"]}
    monkeypatch.setattr(socket, "getaddrinfo", fake_resolver(table))
    active_endpoint(tenant, f"http://erp.test:{port}/hooks")
    delivery = _fan_out(completed_job(tenant)[1])

    table["erp.test"] = ["10.0.0.7"]  # DNS rebinding after registration
    assert dispatch.deliver(delivery.pk) == "pending"
    attempt = DeliveryAttempt.objects.get(delivery=delivery, number=1)
    assert attempt.outcome == "egress_refused" and "10.0.0.7" in attempt.error
    assert {str(address[0]) for address in connect_guard.attempts} == {"127.0.0.1"}  # the ERP only


def test_redeliver_sends_a_failed_delivery_again_under_the_same_id(tenant, scripted_erp, loopback, settings):
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    active_endpoint(tenant, scripted_erp.url)
    delivery = _fan_out(completed_job(tenant)[1])
    scripted_erp.answer(500)
    assert dispatch.deliver(delivery.pk) == "failed"

    ids = replay.redeliver(replay.DeliveryFilter(tenant_id=tenant.tenant.pk))
    assert ids == [delivery.pk]
    assert dispatch.deliver(delivery.pk) == "delivered"
    assert [r.headers["webhook-id"] for r in scripted_erp.received[-2:]] == [str(delivery.pk)] * 2


def test_redeliver_applies_each_filter_it_is_given_and_only_those(tenant, scripted_erp, loopback):
    first, _ = active_endpoint(tenant, scripted_erp.url)
    second, _ = active_endpoint(tenant, scripted_erp.url)
    job_a, outbox_a = completed_job(tenant)
    job_b, outbox_b = completed_job(tenant)
    a = set(fan_out.fan_out_event(outbox_a.event_id).created)  # one delivery per endpoint
    b = set(fan_out.fan_out_event(outbox_b.event_id).created)
    assert len(a) == len(b) == 2
    Delivery.objects.filter(pk__in=a | b).update(state=DeliveryState.FAILED)
    to_first = set(Delivery.objects.filter(endpoint=first, pk__in=a | b).values_list("pk", flat=True))
    b_created = Delivery.objects.get(pk=next(iter(b))).created_at  # one fan-out, one now()

    def matching(**filters) -> set:
        return set(replay.redeliver(replay.DeliveryFilter(**filters), dry_run=True))

    assert matching(tenant_id=tenant.tenant.pk) == a | b  # the verifications are never redelivered
    assert matching(endpoint_id=first.pk) == to_first
    assert matching(job_id=job_a) == a
    assert matching(endpoint_id=second.pk, job_id=job_b) == b - to_first
    assert matching(since=b_created) == b
    assert matching(until=b_created) == a
    assert matching(delivery_ids=tuple(a)) == a
    assert matching(event_type="extraction.completed.v1", tenant_id=tenant.tenant.pk) == a | b
    assert matching(event_type="extraction.review_required.v1") == set()
    assert matching(states=(DeliveryState.PENDING, DeliveryState.SENDING)) == set()  # never touched

    assert set(replay.redeliver(replay.DeliveryFilter(endpoint_id=first.pk))) == to_first
    states = dict(Delivery.objects.filter(pk__in=a | b).values_list("pk", "state"))
    assert states == {pk: DeliveryState.PENDING if pk in to_first else DeliveryState.FAILED for pk in a | b}


def test_an_endpoint_failing_for_days_is_disabled(tenant, scripted_erp, loopback, settings):
    endpoint, _ = active_endpoint(tenant, scripted_erp.url)
    delivery = _fan_out(completed_job(tenant)[1])
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        failing_since=timezone.now() - timedelta(days=settings.WEBHOOK_AUTO_DISABLE_DAYS + 1), consecutive_failures=1
    )
    scripted_erp.answer(500)
    dispatch.deliver(delivery.pk)
    endpoint.refresh_from_db()
    assert endpoint.status == "disabled" and "Failing since" in endpoint.disabled_reason
