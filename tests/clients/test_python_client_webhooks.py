"""``verify_webhook`` accepts exactly what our server signs: a real delivery (the dispatcher
posting a completed job's event to a receiver on 127.0.0.1), and headers made by our signing
function (``delivery.signing``) for the cases a delivery cannot be made to show: a stale
timestamp, a rotation's two signatures."""

from __future__ import annotations

import time
import uuid

import pytest
from invoice_extraction_client import WebhookVerificationError, verify_webhook

from delivery import dispatch, fan_out, signing
from tests.delivery.support import active_endpoint, completed_job


def _signed(keys: list[signing.SigningKey], *, timestamp: int | None = None) -> tuple[dict[str, str], bytes]:
    body = signing.serialize_body({"type": "extraction.completed.v1", "data": {"job_id": str(uuid.uuid4())}})
    headers = signing.signed_headers(
        keys, webhook_id=f"msg_{uuid.uuid4().hex}", timestamp=timestamp or int(time.time()), body=body
    )
    return dict(headers), body


def _key() -> tuple[str, signing.SigningKey]:
    text, raw = signing.new_secret()
    return text, signing.SigningKey(key_id=signing.new_key_id(), secret=raw)


@pytest.mark.django_db(transaction=True)
def test_a_delivery_of_our_server_verifies_and_a_tampered_or_foreign_one_does_not(tenant, scripted_erp, loopback):
    _, secret = active_endpoint(tenant, scripted_erp.url)
    job_id, outbox = completed_job(tenant)
    (delivery_id,) = fan_out.fan_out_event(outbox.event_id).created
    assert dispatch.deliver(delivery_id) == "delivered"
    request = scripted_erp.received[-1]

    event = verify_webhook(request.headers, request.body, secret)

    assert event.webhook_id == str(delivery_id)
    assert event.type == "extraction.completed.v1"
    assert event.data["job_id"] == job_id and event.data["state"] == "SUCCEEDED"
    with pytest.raises(WebhookVerificationError):
        verify_webhook(request.headers, request.body.replace(b"SUCCEEDED", b"FAILED_TERMINAL"), secret)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(request.headers, request.body, signing.new_secret()[0])


def test_header_names_in_any_case_verify():
    text, key = _key()
    headers, body = _signed([key])
    event = verify_webhook({name.title(): value for name, value in headers.items()}, body, text)
    assert event.payload["type"] == "extraction.completed.v1"


def test_during_a_rotation_either_secret_verifies():
    (old_text, old), (new_text, new) = _key(), _key()
    headers, body = _signed([new, old])  # newest first, as the dispatcher signs
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old_text, new_text, [signing.new_secret()[0], old_text]):
        assert verify_webhook(headers, body, secret).webhook_id == headers["webhook-id"]


def test_a_stale_timestamp_is_refused_though_the_signature_is_ours():
    text, key = _key()
    headers, body = _signed([key], timestamp=int(time.time()) - 6 * 60)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(headers, body, text)


@pytest.mark.parametrize(
    "broken",
    [
        {"webhook-signature": "v1"},  # no comma
        {"webhook-signature": "v1,not base64!"},
        {"webhook-signature": "v2,c2lnbmF0dXJl"},  # a scheme we do not sign with
        {"webhook-timestamp": "yesterday"},
        {"webhook-id": ""},
    ],
)
def test_a_malformed_header_is_a_verification_error_not_a_crash(broken):
    text, key = _key()
    headers, body = _signed([key])
    with pytest.raises(WebhookVerificationError):
        verify_webhook({**headers, **broken}, body, text)


def test_a_missing_header_is_a_verification_error():
    text, key = _key()
    headers, body = _signed([key])
    del headers["webhook-signature"]
    with pytest.raises(WebhookVerificationError):
        verify_webhook(headers, body, text)
