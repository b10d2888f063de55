"""Operator tools: the demo ERP set-up command, redeliver_webhooks, the scheduler's sweep,
the Celery fan-out task's refusals, and the admin pages."""

from __future__ import annotations

import uuid
from io import StringIO

import pytest
from celery.exceptions import Reject
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from kombu import Connection

from delivery import dispatch, fan_out, scheduling, tasks
from delivery.erp.models import ErpConnection, ErpLedgerEntry
from delivery.models import Delivery, WebhookEndpoint
from tests.delivery.support import active_endpoint, completed_job
from tests.system import queue_depth

pytestmark = pytest.mark.django_db(transaction=True)


def test_setup_demo_erp_registers_and_verifies_an_endpoint_at_the_local_erp(tenant, live_server, loopback):
    slug = tenant.tenant.slug
    out = StringIO()
    call_command("setup_demo_erp", slug, "--base-url", live_server.url, "--wait", "10", stdout=out)
    endpoint = WebhookEndpoint.objects.get(tenant=tenant.tenant)
    assert endpoint.status == "active" and endpoint.url == f"{live_server.url}/erp/{slug}/webhooks"
    assert "verified and active" in out.getvalue()
    call_command("setup_demo_erp", slug, "--base-url", live_server.url, stdout=out)  # idempotent
    assert WebhookEndpoint.objects.filter(tenant=tenant.tenant).count() == 1

    _, outbox = completed_job(tenant)
    (delivery_id,) = fan_out.fan_out_event(outbox.event_id).created
    assert dispatch.deliver(delivery_id) == "delivered"
    assert ErpLedgerEntry.objects.filter(connection=ErpConnection.objects.get(slug=slug)).count() == 1


def test_setup_demo_erp_refuses_without_the_loopback_switch(tenant, settings):
    settings.EGRESS_ALLOW_LOOPBACK = False
    with pytest.raises(CommandError, match="EGRESS_ALLOW_LOOPBACK"):
        call_command("setup_demo_erp", tenant.tenant.slug, "--base-url", "http://127.0.0.1:8000", "--wait", "0")


def test_redeliver_command_filters_by_tenant_and_state(tenant, scripted_erp, loopback, settings):
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    active_endpoint(tenant, scripted_erp.url)
    failed = Delivery.objects.get(pk=fan_out.fan_out_event(completed_job(tenant)[1].event_id).created[0])
    delivered = Delivery.objects.get(pk=fan_out.fan_out_event(completed_job(tenant)[1].event_id).created[0])
    scripted_erp.answer(500)
    assert dispatch.deliver(failed.pk) == "failed"
    assert dispatch.deliver(delivered.pk) == "delivered"

    out = StringIO()
    call_command("redeliver_webhooks", "--tenant", tenant.tenant.slug, "--dry-run", stdout=out)
    assert str(failed.pk) in out.getvalue() and str(delivered.pk) not in out.getvalue()
    assert Delivery.objects.get(pk=failed.pk).state == "failed"  # a dry run changes nothing
    call_command("redeliver_webhooks", "--tenant", tenant.tenant.slug, stdout=out)
    assert Delivery.objects.get(pk=failed.pk).state == "pending"
    assert Delivery.objects.get(pk=delivered.pk).state == "delivered"


def test_replay_creates_the_deliveries_a_new_endpoint_never_had(tenant, scripted_erp, loopback):
    _, outbox = completed_job(tenant)
    fan_out.fan_out_event(outbox.event_id)  # no endpoint yet: the event is kept, nothing to send
    endpoint, _ = active_endpoint(tenant, scripted_erp.url)
    out = StringIO()
    call_command("redeliver_webhooks", "--endpoint", str(endpoint.pk), "--replay-missing", stdout=out)
    delivery = Delivery.objects.get(endpoint=endpoint, is_verification=False)
    assert delivery.event_id == outbox.event_id and delivery.state == "pending"
    call_command("redeliver_webhooks", "--endpoint", str(endpoint.pk), "--replay-missing", stdout=out)
    assert Delivery.objects.filter(endpoint=endpoint, is_verification=False).count() == 1


def test_schedule_due_deliveries_hints_each_due_delivery_once(tenant, scripted_erp, loopback, broker):
    active_endpoint(tenant, scripted_erp.url)
    created = [fan_out.fan_out_event(completed_job(tenant)[1].event_id).created[0] for _ in range(3)]
    with Connection(broker) as conn:
        before = queue_depth(broker, "delivery")
        assert scheduling.schedule_due_deliveries(conn) == 3
        assert scheduling.schedule_due_deliveries(conn) == 0  # hinted: not again within REHINT_SECONDS
    assert queue_depth(broker, "delivery") == before + 3
    assert Delivery.objects.filter(pk__in=created, hinted_at__isnull=False).count() == 3


def test_fan_out_task_refuses_malformed_and_unknown_events(tenant):
    task = tasks.fan_out_event
    event_id = str(uuid.uuid4())
    task.push_request(id=event_id)
    try:
        with pytest.raises(Reject, match="unexpected event type"):
            task.run({"event_type": "extraction.requested.v1"})
        unknown = {
            "event_id": event_id,
            "event_type": "extraction.completed.v1",
            "payload": {"job_id": str(uuid.uuid4()), "event_version": 1, "state_version": 4},
        }
        with pytest.raises(Reject, match="unknown_event"):
            task.run(unknown)
        with pytest.raises(Reject, match="task id differs"):
            task.run({**unknown, "event_id": str(uuid.uuid4())})
    finally:
        task.pop_request()


def test_admin_pages_show_endpoints_deliveries_and_the_erp_ledger(tenant, scripted_erp, loopback):
    endpoint, secret = active_endpoint(tenant, scripted_erp.url)
    delivery_id = fan_out.fan_out_event(completed_job(tenant)[1].event_id).created[0]
    dispatch.deliver(delivery_id)
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(admin)
    for url in [
        "/admin/delivery/webhookendpoint/",
        f"/admin/delivery/webhookendpoint/{endpoint.pk}/change/",
        "/admin/delivery/delivery/",
        f"/admin/delivery/delivery/{delivery_id}/change/",
        "/admin/erp/erpledgerentry/",
        "/admin/erp/erpinboxentry/",
    ]:
        response = client.get(url)
        assert response.status_code == 200, url
        assert secret not in response.content.decode()  # the secret never shows again
    response = client.post("/admin/delivery/delivery/", {"action": "redeliver", "_selected_action": [delivery_id]})
    assert response.status_code == 302
    assert Delivery.objects.get(pk=delivery_id).state == "pending"
