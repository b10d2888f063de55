"""The reference ERP's receiving endpoint (DLV-3), built on :mod:`delivery.receiver`.

``POST /erp/<connection>/webhooks``: size limit → signature and timestamp window → event
schema → in one transaction the inbox row (keyed by webhook-id, with the body digest) and,
for a new ``extraction.completed.v1``, one ledger posting per job → COMMIT → 2xx. The other
known types (a split, a batch's completion) are recorded and answered 2xx, not booked.
"""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from config.sql import load_statements
from delivery import receiver
from delivery.erp.models import ErpConnection
from extraction.events import WebhookType

logger = logging.getLogger("delivery.erp")

SQL = load_statements(Path(__file__).with_suffix(".sql"))

EVENT_TYPES = frozenset(WebhookType)
# The types that report a job's state, checked for the job's fields; of them only
# extraction.completed.v1 is booked.
JOB_EVENT_TYPES = frozenset({WebhookType.COMPLETED, WebhookType.REVIEW_REQUIRED, WebhookType.FAILED})


class SchemaViolation(ValueError):
    pass


def _answer(status: int, outcome: str, detail: str = "") -> JsonResponse:
    body: dict[str, Any] = {"outcome": outcome}
    if detail:
        body["detail"] = detail
    return JsonResponse(body, status=status)


def _text(value: Any) -> str:
    return value["value"] if isinstance(value, dict) and isinstance(value.get("value"), str) else ""


def check_event(event: Any) -> dict[str, Any]:
    """The event schema this ERP accepts; anything else is refused before it is stored."""
    if not isinstance(event, dict) or event.get("type") not in EVENT_TYPES or not isinstance(event.get("data"), dict):
        raise SchemaViolation("not an event of a known type")
    data = event["data"]
    if event["type"] == WebhookType.VERIFICATION:
        if not isinstance(data.get("endpoint_id"), str):
            raise SchemaViolation("verification without endpoint_id")
        return event
    if event["type"] not in JOB_EVENT_TYPES:
        # A type this ERP does not book (a batch's completion): recorded in the inbox and
        # answered 2xx, so the sender does not retry what will never be booked.
        return event
    try:
        uuid.UUID(str(data.get("job_id")))
    except ValueError as exc:
        raise SchemaViolation("job_id is not a UUID") from exc
    if not isinstance(data.get("state_version"), int) or not isinstance(data.get("state"), str):
        raise SchemaViolation("state and state_version are required")
    if event["type"] == WebhookType.COMPLETED:
        result = data.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("output"), dict):
            raise SchemaViolation("a completed event carries result.output")
    return event


def _post_invoice(cursor: CursorWrapper, *, connection_slug: str, delivery_id: str, data: dict[str, Any]) -> bool:
    """The ERP effect, idempotent on its own key (one posting per job), whatever the delivery id."""
    output = data["result"]["output"]
    cursor.execute(
        SQL["post_invoice"],
        {
            "connection": connection_slug,
            "job": data["job_id"],
            "delivery": delivery_id,
            "state_version": data["state_version"],
            "invoice_number": _text(output.get("invoice_number"))[:128],
            "supplier_name": _text((output.get("supplier") or {}).get("name"))[:256],
            "currency": _text(output.get("currency"))[:3],
            "total": _text((output.get("totals") or {}).get("gross"))[:32],
        },
    )
    return cursor.rowcount == 1


@csrf_exempt
@require_POST
def receive_webhook(request: HttpRequest, slug: str) -> JsonResponse:
    erp = ErpConnection.objects.filter(slug=slug).first()
    if erp is None:
        return _answer(404, "unknown_connection")
    if int(request.META.get("CONTENT_LENGTH") or 0) > receiver.MAX_BODY_BYTES:
        return _answer(413, "too_large")
    body = request.read(receiver.MAX_BODY_BYTES + 1)
    if len(body) > receiver.MAX_BODY_BYTES:
        return _answer(413, "too_large")
    try:
        webhook = receiver.verify(body, request.headers, [(s["key_id"], s["secret"]) for s in erp.secrets])
    except receiver.VerificationFailed as exc:
        logger.warning("webhook refused: verification failed", extra={"connection": slug, "reason": str(exc)})
        return _answer(401, "verification_failed", str(exc))
    try:
        event = check_event(json.loads(body))
    except (ValueError, SchemaViolation) as exc:
        logger.warning("webhook refused: schema", extra={"connection": slug, "reason": str(exc)[:200]})
        return _answer(422, "schema_violation", str(exc)[:200])

    with transaction.atomic(), connection.cursor() as cursor:
        decision = receiver.record_in_inbox(
            cursor,
            table="erp_inbox",
            webhook_id=webhook.webhook_id,
            digest=webhook.digest,
            extra={"connection_id": slug, "event_type": event["type"]},
        )
        posted = False
        if decision == "new" and event["type"] == WebhookType.COMPLETED:
            posted = _post_invoice(cursor, connection_slug=slug, delivery_id=webhook.webhook_id, data=event["data"])
    # Only now, after COMMIT, does the sender hear 2xx.
    if decision == "conflict":
        logger.error(
            "webhook id replayed with another body: refused",
            extra={"connection": slug, "delivery_id": webhook.webhook_id, "alarm": "erp_inbox_digest_mismatch"},
        )
        return _answer(409, "conflict", "this webhook-id was received with another body")
    return _answer(200, "duplicate" if decision == "duplicate" else "posted" if posted else "accepted")
