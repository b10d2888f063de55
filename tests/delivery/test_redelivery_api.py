"""Redelivery by filter over the API: an operator action audited like the job actions."""

from __future__ import annotations

import uuid

import pytest

from delivery import dispatch, fan_out
from delivery.models import Delivery
from extraction.models import OperatorAction, OperatorActionTarget
from tests.delivery.support import active_endpoint, completed_job

pytestmark = pytest.mark.django_db(transaction=True)


def test_api_redeliver_by_filter_is_an_audited_operator_action(tenant, scripted_erp, loopback, settings):
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    active_endpoint(tenant, scripted_erp.url)
    failed_id = fan_out.fan_out_event(completed_job(tenant)[1].event_id).created[0]
    scripted_erp.answer(500)
    assert dispatch.deliver(failed_id) == "failed"

    response = tenant.client.post(
        "/api/v1/webhook-deliveries/redeliver", {"filter": {"states": ["failed"]}}, format="json"
    )

    assert response.status_code == 201, response.content
    assert (response.json()["kind"], response.json()["outcomes"]) == ("redeliver_webhooks", {"changed": 1})
    assert Delivery.objects.get(pk=failed_id).state == "pending"
    target = OperatorActionTarget.objects.get(action_id=response.json()["action_id"])
    assert target.object_id == failed_id
    assert uuid.UUID(response.json()["action_id"]) == OperatorAction.objects.get(kind="redeliver_webhooks").pk
