"""The webhook-endpoint API: registration shows the secret once, vets the URL, needs the admin
role; rotation; disabling; tenant isolation; problem+json errors."""

from __future__ import annotations

import pytest
from standardwebhooks import Webhook

from accounts.models import Role
from delivery import dispatch
from delivery.models import Delivery, WebhookEndpoint
from tests.factories import make_tenant_context

pytestmark = pytest.mark.django_db(transaction=True)

TYPES = ["extraction.completed.v1"]


def _create(ctx, url: str, types=TYPES):
    return ctx.client.post("/api/v1/webhook-endpoints", {"url": url, "event_types": types}, format="json")


def test_registration_shows_the_secret_once_and_activates_after_a_signed_2xx(tenant, scripted_erp, loopback):
    response = _create(tenant, scripted_erp.url)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["secret"].startswith("whsec_") and body["key_id"].startswith("key_")
    assert body["status"] == "pending_verification"

    verification = Delivery.objects.get(endpoint_id=body["id"], is_verification=True)
    assert dispatch.deliver(verification.pk) == "delivered"
    Webhook(body["secret"]).verify(scripted_erp.received[0].body, scripted_erp.received[0].headers)

    detail = tenant.client.get(f"/api/v1/webhook-endpoints/{body['id']}").json()
    assert detail["status"] == "active"
    assert "secret" not in detail and body["secret"] not in str(detail)
    assert [k["key_id"] for k in detail["signing_keys"]] == [body["key_id"]]
    listing = tenant.client.get("/api/v1/webhook-endpoints").json()["results"]
    assert [e["id"] for e in listing] == [body["id"]] and body["secret"] not in str(listing)
    stored = WebhookEndpoint.objects.get(pk=body["id"]).secrets.get()
    assert body["secret"][6:] not in stored.sealed  # encrypted at rest


def test_an_endpoint_that_never_answers_2xx_stays_pending(tenant, scripted_erp, loopback):
    scripted_erp.answer(404)
    body = _create(tenant, scripted_erp.url).json()
    verification = Delivery.objects.get(endpoint_id=body["id"], is_verification=True)
    assert dispatch.deliver(verification.pk) == "pending"
    assert WebhookEndpoint.objects.get(pk=body["id"]).status == "pending_verification"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/erp/x/webhooks",
        "https://10.0.0.1/hook",
        "https://169.254.169.254/",
        "https://[::ffff:127.0.0.1]/",
        "https://2130706433/",
    ],
)
def test_registration_refuses_urls_the_egress_rule_refuses(tenant, url, settings, connect_guard):
    settings.EGRESS_ALLOW_LOOPBACK = False
    response = _create(tenant, url)
    assert response.status_code == 422
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"] == "/problems/invalid-webhook-endpoint"
    assert not WebhookEndpoint.objects.exists()
    assert connect_guard.attempts == []


def test_registration_refuses_unknown_event_types(tenant, scripted_erp, loopback):
    response = _create(tenant, scripted_erp.url, types=["extraction.requested.v1"])
    assert response.status_code == 400
    assert response.json()["type"] == "/problems/validation-error"


def test_only_tenant_admins_register_and_operators_read(db, scripted_erp, loopback):
    member = make_tenant_context("t-member", role=Role.MEMBER)
    operator = make_tenant_context("t-operator", role=Role.OPERATOR)
    assert _create(member, scripted_erp.url).status_code == 403
    assert _create(operator, scripted_erp.url).status_code == 403
    assert operator.client.get("/api/v1/webhook-endpoints").status_code == 200
    assert member.client.get("/api/v1/webhook-endpoints").status_code == 403


def test_another_tenants_endpoint_is_not_found(tenant, scripted_erp, loopback):
    body = _create(tenant, scripted_erp.url).json()
    other = make_tenant_context("t-other")
    for method, path in [("get", ""), ("delete", ""), ("post", "/rotate-secret"), ("post", "/verify")]:
        response = getattr(other.client, method)(f"/api/v1/webhook-endpoints/{body['id']}{path}")
        assert response.status_code == 404
    assert WebhookEndpoint.objects.get(pk=body["id"]).status == "pending_verification"


def test_rotation_returns_a_new_secret_and_keeps_the_old_key_for_the_window(tenant, scripted_erp, loopback):
    body = _create(tenant, scripted_erp.url).json()
    rotated = tenant.client.post(f"/api/v1/webhook-endpoints/{body['id']}/rotate-secret").json()
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != body["secret"]
    assert rotated["previous_key_id"] == body["key_id"]
    keys = rotated["signing_keys"]
    assert [k["key_id"] for k in keys] == [rotated["key_id"], body["key_id"]]
    assert keys[0]["expires_at"] is None and keys[1]["expires_at"] is not None
    # A second rotation retires the oldest key at once: never more than two sign.
    again = tenant.client.post(f"/api/v1/webhook-endpoints/{body['id']}/rotate-secret").json()
    assert [k["key_id"] for k in again["signing_keys"]] == [again["key_id"], rotated["key_id"]]


def test_delete_disables_the_endpoint_and_fan_out_skips_it(tenant, scripted_erp, loopback):
    body = _create(tenant, scripted_erp.url).json()
    assert tenant.client.delete(f"/api/v1/webhook-endpoints/{body['id']}").status_code == 204
    endpoint = WebhookEndpoint.objects.get(pk=body["id"])
    assert endpoint.status == "disabled"
    assert not Delivery.objects.filter(endpoint=endpoint, state="pending").exists()  # verification cancelled
    assert (
        tenant.client.get(f"/api/v1/webhook-endpoints/{body['id']}/deliveries").json()["results"][0]["state"]
        == "failed"
    )
