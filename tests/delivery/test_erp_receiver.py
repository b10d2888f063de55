"""The reference ERP receiver (DLV-3) and the reusable helper module: signature, timestamp
window, durable dedup by webhook-id with a digest, one ledger posting per job; and the
dispatcher delivering into it over real HTTP (the live server on 127.0.0.1)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime

import pytest
from django.db import ProgrammingError, connection, transaction
from django.test import Client
from standardwebhooks import Webhook

from delivery import dispatch, fan_out, receiver, replay, signing
from delivery.erp.models import ErpConnection, ErpInboxEntry, ErpLedgerEntry
from extraction.execution import lifecycle
from extraction.models import ExtractionJob
from tests.delivery.support import completed_job
from tests.factories import SAMPLE_OUTPUT
from tests.system import ROOT

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OTHER_SECRET = "whsec_" + "dGhpcyBpcyBhbm90aGVyIHNlY3JldCBrZXkh"


def _event(job_id: str | None = None, *, invoice: str = "INV-1") -> dict:
    output = {**SAMPLE_OUTPUT, "invoice_number": {"value": invoice, "evidence": None}}
    return {
        "type": "extraction.completed.v1",
        "timestamp": "2026-11-02T10:00:00Z",
        "data": {
            "job_id": job_id or str(uuid.uuid4()),
            "state": "SUCCEEDED",
            "state_version": 4,
            "result": {"output": output, "validation": {}},
        },
    }


def _signed(body: bytes, *, webhook_id: str | None = None, secret: str = SECRET, at: int | None = None) -> dict:
    webhook_id = webhook_id or str(uuid.uuid4())
    timestamp = int(time.time()) if at is None else at
    headers = dict(
        signing.signed_headers(
            [signing.SigningKey("key_a", signing.decode_secret(secret))],
            webhook_id=webhook_id,
            timestamp=timestamp,
            body=body,
        )
    )
    return {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items() if k != "Content-Type"}


def _post(client: Client, body: bytes, headers: dict, slug: str = "acme"):
    return client.post(f"/erp/{slug}/webhooks", data=body, content_type="application/json", **headers)


@pytest.fixture
def erp(db) -> ErpConnection:
    return ErpConnection.objects.create(
        slug="acme", tenant_label="ACME", secrets=[{"key_id": "key_a", "secret": SECRET}]
    )


def test_a_signed_completed_event_posts_the_invoice_once(erp):
    client = Client()
    body = signing.serialize_body(_event())
    headers = _signed(body)
    first = _post(client, body, headers)
    again = _post(client, body, headers)  # the sender never saw our first 200
    assert (first.status_code, first.json()["outcome"]) == (200, "posted")
    assert (again.status_code, again.json()["outcome"]) == (200, "duplicate")
    assert ErpInboxEntry.objects.count() == 1
    entry = ErpLedgerEntry.objects.get()
    assert (entry.invoice_number, entry.supplier_name, entry.currency, entry.total) == (
        "INV-1",
        "ACME Supplies GmbH",
        "EUR",
        "119.00",
    )


def test_a_bad_signature_is_refused(erp):
    body = signing.serialize_body(_event())
    response = _post(Client(), body, _signed(body, secret=OTHER_SECRET))
    assert response.status_code == 401
    assert not ErpInboxEntry.objects.exists() and not ErpLedgerEntry.objects.exists()


def test_a_tampered_body_is_refused(erp):
    body = signing.serialize_body(_event())
    headers = _signed(body)
    response = _post(Client(), body.replace(b"INV-1", b"INV-9"), headers)
    assert response.status_code == 401


def test_an_old_timestamp_is_refused_even_with_a_valid_signature(erp):
    body = signing.serialize_body(_event())
    response = _post(Client(), body, _signed(body, at=int(time.time()) - 6 * 60))
    assert response.status_code == 401
    assert "tolerance" in response.json()["detail"]
    assert not ErpLedgerEntry.objects.exists()


def test_a_replayed_id_with_another_body_is_refused_and_logged(erp, caplog):
    client = Client()
    webhook_id = str(uuid.uuid4())
    original = signing.serialize_body(_event(invoice="INV-1"))
    assert _post(client, original, _signed(original, webhook_id=webhook_id)).status_code == 200
    forged = signing.serialize_body(_event(invoice="INV-2"))
    response = _post(client, forged, _signed(forged, webhook_id=webhook_id))
    assert response.status_code == 409
    assert any(getattr(r, "alarm", "") == "erp_inbox_digest_mismatch" for r in caplog.records)
    assert list(ErpLedgerEntry.objects.values_list("invoice_number", flat=True)) == ["INV-1"]


def test_two_deliveries_of_one_job_post_it_once(erp):
    client = Client()
    job_id = str(uuid.uuid4())
    for _ in range(2):  # e.g. an operator's replay to a re-registered endpoint: a new webhook-id
        body = signing.serialize_body(_event(job_id))
        assert _post(client, body, _signed(body)).status_code == 200
    assert ErpInboxEntry.objects.count() == 2
    assert ErpLedgerEntry.objects.filter(job_id=job_id).count() == 1


def test_an_event_outside_the_schema_is_refused(erp):
    body = signing.serialize_body({"type": "extraction.completed.v1", "data": {"job_id": "not-a-uuid"}})
    assert _post(Client(), body, _signed(body)).status_code == 422
    body = signing.serialize_body({"type": "invoice.deleted", "data": {}})
    assert _post(Client(), body, _signed(body)).status_code == 422


def test_an_unknown_connection_is_404(erp):
    body = signing.serialize_body(_event())
    assert _post(Client(), body, _signed(body), slug="nobody").status_code == 404


@pytest.mark.django_db
def test_helper_inbox_quotes_the_callers_table_and_columns():
    # A schema-qualified table and a column whose name is not a bare identifier: each is
    # quoted as a name, and a "table" carrying SQL is a name that does not exist.
    with connection.cursor() as cursor:
        cursor.execute(
            'CREATE TEMP TABLE copied_inbox (delivery_id text PRIMARY KEY, body_sha256 text, "Event Type" text)'
        )

        def record(webhook_id: str, digest: str, table: str = "pg_temp.copied_inbox") -> str:
            return receiver.record_in_inbox(
                cursor, table=table, webhook_id=webhook_id, digest=digest, extra={"Event Type": "t"}
            )

        assert record("msg_1", "d1") == "new"
        assert record("msg_1", "d1") == "duplicate"
        assert record("msg_1", "d2") == "conflict"
        cursor.execute('SELECT delivery_id, body_sha256, "Event Type" FROM copied_inbox')
        assert cursor.fetchall() == [("msg_1", "d1", "t")]
        with pytest.raises(ProgrammingError, match="does not exist"), transaction.atomic():
            record("msg_2", "d1", table="copied_inbox (delivery_id) VALUES ('x'); --")
        cursor.execute("SELECT count(*) FROM copied_inbox")
        assert cursor.fetchone() == (1,)


def test_helper_accepts_either_secret_during_a_rotation():
    body = b'{"type":"extraction.completed.v1"}'
    keys = [
        signing.SigningKey("key_new", signing.decode_secret(OTHER_SECRET)),
        signing.SigningKey("key_old", signing.decode_secret(SECRET)),
    ]
    headers = dict(signing.signed_headers(keys, webhook_id="msg_1", timestamp=int(time.time()), body=body))
    assert receiver.verify(body, headers, [("old", SECRET)]).key_id == "old"
    assert receiver.verify(body, headers, [("new", OTHER_SECRET)]).key_id == "new"
    # The library agrees with both.
    Webhook(SECRET).verify(body, headers)
    Webhook(OTHER_SECRET).verify(body, headers)


@pytest.mark.parametrize("signature", ["garbage", "v1,", "v1,!!!notbase64", "v2,abc", ""])
def test_helper_turns_malformed_signatures_into_verification_failed(signature):
    headers = {"webhook-id": "msg_1", "webhook-timestamp": str(int(time.time())), "webhook-signature": signature}
    with pytest.raises(receiver.VerificationFailed):
        receiver.verify(b"{}", headers, [SECRET])


def test_helper_agrees_with_the_standardwebhooks_signer():
    raw = signing.decode_secret(SECRET)
    moment = datetime.now(UTC)
    signature = Webhook(raw).sign("msg_2", moment, '{"a":1}')
    headers = {"webhook-id": "msg_2", "webhook-timestamp": str(int(moment.timestamp())), "webhook-signature": signature}
    assert receiver.verify(b'{"a":1}', headers, [SECRET]).webhook_id == "msg_2"


# --- the dispatcher into the live ERP over HTTP ----------------------------------------------------------


def _connect_demo_erp(tenant, live_server) -> ErpConnection:
    """What setup_demo_erp does: register an endpoint at the ERP and give the ERP its secret."""
    from delivery.endpoints import register_endpoint

    registration = register_endpoint(
        tenant=tenant.tenant,
        url=f"{live_server.url}/erp/{tenant.tenant.slug}/webhooks",
        event_types=["extraction.completed.v1", "extraction.review_required.v1"],
    )
    erp = ErpConnection.objects.create(
        slug=tenant.tenant.slug,
        tenant_label="t",
        secrets=[{"key_id": registration.secret.key_id, "secret": registration.secret.secret}],
    )
    assert dispatch.deliver(registration.verification_delivery_id) == "delivered"
    return erp


@pytest.mark.django_db(transaction=True)
def test_review_required_job_reaches_no_ledger_until_approved(tenant, live_server, loopback):
    erp = _connect_demo_erp(tenant, live_server)
    job_id, outbox = completed_job(tenant, review_required=True)
    for delivery_id in fan_out.fan_out_event(outbox.event_id).created:
        assert dispatch.deliver(delivery_id) == "delivered"  # the ERP hears of the review...
    assert not ErpLedgerEntry.objects.filter(connection=erp).exists()  # ...and posts nothing

    job = ExtractionJob.objects.get(pk=job_id)
    assert lifecycle.decide_review(
        job_id=job.pk,
        seen_state_version=job.state_version,
        reviewer_id=_reviewer().pk,
        approve=True,
        before=SAMPLE_OUTPUT,
        after=None,
        validation={"ok": True},
    )
    approved = job.outbox.get(event_type="extraction.completed.v1")
    for delivery_id in fan_out.fan_out_event(approved.event_id).created:
        assert dispatch.deliver(delivery_id) == "delivered"
    assert list(ErpLedgerEntry.objects.filter(connection=erp).values_list("job_id", flat=True)) == [job.pk]


def _reviewer():
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(username=f"reviewer-{uuid.uuid4().hex[:6]}")


@pytest.mark.django_db(transaction=True)
def test_redelivery_to_the_live_erp_posts_once(tenant, live_server, loopback):
    erp = _connect_demo_erp(tenant, live_server)
    _, outbox = completed_job(tenant)
    (delivery_id,) = fan_out.fan_out_event(outbox.event_id).created
    assert dispatch.deliver(delivery_id) == "delivered"
    assert replay.redeliver(replay.DeliveryFilter(delivery_ids=(delivery_id,), states=("delivered",)))
    assert dispatch.deliver(delivery_id) == "delivered"  # the ERP answers "duplicate" with 200
    assert ErpLedgerEntry.objects.filter(connection=erp).count() == 1
    assert ErpInboxEntry.objects.filter(delivery_id=str(delivery_id)).count() == 1


# What a process of the system sees, started afresh: is the ERP app installed, is /erp/ routed,
# is its set-up command there, and would delivery's first migration create any erp_* table?
INSTALLATION_PROBE = """
from io import StringIO
import django
django.setup()
from django.apps import apps
from django.core.management import call_command, get_commands
from django.urls import Resolver404, resolve
try:
    routed = bool(resolve("/erp/acme/webhooks"))
except Resolver404:
    routed = False
sql = StringIO()
call_command("sqlmigrate", "delivery", "0001", stdout=sql)
print(apps.is_installed("delivery.erp"), routed, "setup_demo_erp" in get_commands(), "erp_" in sql.getvalue())
"""


@pytest.mark.parametrize(("demo_erp", "expected"), [(None, "False False False False"), ("1", "True True True False")])
def test_the_erp_app_is_installed_only_when_demo_erp_asks_for_it(demo_erp: str | None, expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DEMO_ERP"}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_DEVELOPMENT": "1", "POSTGRES_DB": "postgres"})
    if demo_erp is not None:
        env["DEMO_ERP"] = demo_erp
    result = subprocess.run(
        [sys.executable, "-c", INSTALLATION_PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == expected
