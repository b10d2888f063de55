"""Verifying the service's webhooks (Standard Webhooks, https://www.standardwebhooks.com).

The service signs ``f"{webhook-id}.{webhook-timestamp}.{body}"`` with HMAC-SHA256 under each
valid secret of the endpoint (``webhook-signature: v1,<base64> [v1,<base64>]``, two during a
rotation) and sends a fresh timestamp with every attempt. The ``standardwebhooks`` library checks
exactly that, and that the timestamp is within five minutes of this machine's clock.

The signature proves who sent the body, not that it is the first time: a retry comes with the
same ``webhook-id``. Keep the ids you have acted on and ignore a repeat (the service's
``delivery/receiver.py`` shows an inbox table doing it in the same transaction as the effect).
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError as _LibraryVerificationError

from invoice_extraction_client.errors import WebhookVerificationError


@dataclass(frozen=True)
class WebhookEvent:
    """A verified webhook: its id (the receiver's deduplication key), its type
    (``extraction.completed.v1``, …) and its ``data`` (for a job: ``job_id``, ``state``,
    ``result``)."""

    webhook_id: str
    type: str
    data: Mapping[str, Any]
    payload: Mapping[str, Any]


def verify_webhook(headers: Mapping[str, str], body: bytes | str, secret: str | Iterable[str]) -> WebhookEvent:
    """Check one webhook request and return its event; :class:`WebhookVerificationError` (answer
    401) when it is not signed with ``secret`` or not fresh.

    ``headers``: the request's headers, any case (Django's ``request.headers``, Flask's,
    a plain dict). ``body``: the raw bytes as received, before any JSON parsing: a re-serialized
    body does not verify. ``secret``: the endpoint's ``whsec_…`` secret, or several (while you
    rotate to a new one, both verify).
    """
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError("no webhook secret given")
    # The library reads only lowercase names and takes a malformed header for a crash; both are
    # a request to refuse here.
    lowered = {name.lower(): value for name, value in headers.items()}
    for candidate in secrets:
        verifier = Webhook(candidate)  # a malformed secret is the caller's bug: its ValueError stands
        try:
            payload = verifier.verify(body, lowered)
        except (_LibraryVerificationError, ValueError, UnicodeDecodeError, binascii.Error):
            continue
        if not isinstance(payload, dict):
            raise WebhookVerificationError("the body is not a JSON object")
        data = payload.get("data")
        return WebhookEvent(
            webhook_id=lowered["webhook-id"],
            type=str(payload.get("type", "")),
            data=data if isinstance(data, dict) else {},
            payload=payload,
        )
    raise WebhookVerificationError("no valid signature for the secret given, or the timestamp is not fresh")


__all__ = ["WebhookEvent", "verify_webhook"]
