"""Receiving our webhooks in an ERP: verify, then deduplicate (DLV-3). Copy this file.

No framework and, beyond the standard library, only psycopg 3 (its ``sql`` module quotes the
inbox's table and column names; with psycopg2, import ``psycopg2.sql``, the same API): pass
the raw body bytes and the request headers from whatever web framework you use, and a
psycopg cursor (Django's on PostgreSQL is one) for the inbox. The contract, in order:

1. Refuse bodies larger than you accept (``MAX_BODY_BYTES``) before reading them whole.
2. :func:`verify` — the ``webhook-timestamp`` within ±5 minutes of your clock, then the
   HMAC-SHA256 over ``f"{webhook-id}.{webhook-timestamp}.{raw body}"`` compared in constant
   time against each secret you hold (two during a rotation). Any malformed header is a plain
   :class:`VerificationFailed`, never another exception. Answer 401.
3. Check the event schema; resolve the tenant from YOUR configuration of the sender (the
   URL or credentials it posts to), never from the payload.
4. In ONE transaction: :func:`record_in_inbox` (``INSERT … ON CONFLICT DO NOTHING`` keyed by
   ``webhook-id`` with the body's SHA-256) and, if the delivery is new, your business effect
   under its own idempotency key (e.g. one posting per job id). COMMIT.
5. Only then answer 2xx. A duplicate with the same digest answers 2xx again (the sender did
   not see your first answer); the same id with another digest is a replay or a bug: 409,
   and alert.

The signature alone does not stop a replay: the time window bounds it, the inbox stops it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from psycopg import sql

MAX_BODY_BYTES = 1024 * 1024
TOLERANCE_SECONDS = 5 * 60
SECRET_PREFIX = "whsec_"


class VerificationFailed(Exception):
    """The request is not a genuine, fresh webhook from the sender: answer 401."""


@dataclass(frozen=True)
class VerifiedWebhook:
    webhook_id: str
    timestamp: int
    key_id: str | None  # which of your secrets matched, when you gave key ids
    body: bytes

    @property
    def digest(self) -> str:
        return body_digest(self.body)


def body_digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def secret_bytes(secret: str | bytes) -> bytes:
    """``whsec_<base64>`` → key bytes. Only the ``whsec_`` prefix is stripped (``v1,`` belongs
    to signatures, not secrets)."""
    if isinstance(secret, bytes):
        return secret
    text = secret[len(SECRET_PREFIX) :] if secret.startswith(SECRET_PREFIX) else secret
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name or key.lower() == "http_" + name.replace("-", "_"):
            return value
    raise VerificationFailed(f"missing header {name}")


def verify(
    body: bytes,
    headers: Mapping[str, str],
    secrets: Iterable[str | bytes | tuple[str, str | bytes]],
    *,
    now: float | None = None,
    tolerance_seconds: int = TOLERANCE_SECONDS,
) -> VerifiedWebhook:
    """Check one webhook request. ``secrets``: ``whsec_…`` strings, raw key bytes, or
    ``(key_id, secret)`` pairs. Raises :class:`VerificationFailed`; returns what was proved."""
    webhook_id = _header(headers, "webhook-id")
    raw_timestamp = _header(headers, "webhook-timestamp")
    raw_signatures = _header(headers, "webhook-signature")
    if not webhook_id or "." in webhook_id or len(webhook_id) > 64:
        raise VerificationFailed("malformed webhook-id")
    if not raw_timestamp.isdigit() or len(raw_timestamp) > 12:
        raise VerificationFailed("malformed webhook-timestamp")
    timestamp = int(raw_timestamp)
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_seconds:
        raise VerificationFailed("webhook-timestamp outside the tolerance window")

    offered: list[bytes] = []
    for item in raw_signatures.split():
        version, _, encoded = item.partition(",")
        if version != "v1":
            continue  # other schemes (v1a) are not ours to check here
        try:
            offered.append(base64.b64decode(encoded, validate=True))
        except (ValueError, TypeError):
            continue
    if not offered:
        raise VerificationFailed("no v1 signature")

    signed = f"{webhook_id}.{timestamp}.".encode() + body
    for entry in secrets:
        key_id, secret = entry if isinstance(entry, tuple) else (None, entry)
        try:
            key = secret_bytes(secret)
        except (ValueError, TypeError):
            continue
        expected = hmac.new(key, signed, hashlib.sha256).digest()
        # compare_digest against every offered signature: no early exit that leaks which matched.
        if any(hmac.compare_digest(expected, candidate) for candidate in offered):
            return VerifiedWebhook(webhook_id=webhook_id, timestamp=timestamp, key_id=key_id, body=body)
    raise VerificationFailed("no matching signature")


InboxDecision = Literal["new", "duplicate", "conflict"]


def record_in_inbox(
    cursor: Any, *, table: str, webhook_id: str, digest: str, extra: Mapping[str, Any] | None = None
) -> InboxDecision:
    """Insert the delivery into a PostgreSQL inbox table (``delivery_id`` primary key holding the webhook-id,
    ``body_sha256`` text, plus ``extra`` columns) inside the caller's transaction.

    "new": first time: apply the effect in this same transaction. "duplicate": seen with the
    same body: answer 2xx, do nothing. "conflict": the id was seen with ANOTHER body: 409.
    ``table`` (``schema.table`` for a qualified one) and the column names are identifiers from
    your code, as PostgreSQL stores them (lowercase unless created quoted).
    """
    columns = {"body_sha256": digest, **(extra or {})}
    # The table and columns are the caller's (the reference ERP's erp_inbox has its own extra
    # columns), so they cannot be fixed names here: psycopg's sql.Identifier quotes each one,
    # and a name can only ever be a name, never SQL; values stay parameters.
    inbox = sql.Identifier(*table.split("."))
    cursor.execute(
        sql.SQL(
            "INSERT INTO {inbox} (delivery_id, {columns}) VALUES ({values}) ON CONFLICT (delivery_id) DO NOTHING"
        ).format(
            inbox=inbox,
            columns=sql.SQL(", ").join(sql.Identifier(name) for name in columns),
            values=sql.SQL(", ").join([sql.Placeholder()] * (len(columns) + 1)),
        ),
        [webhook_id, *columns.values()],
    )
    if cursor.rowcount == 1:
        return "new"
    cursor.execute(sql.SQL("SELECT body_sha256 FROM {inbox} WHERE delivery_id = %s").format(inbox=inbox), [webhook_id])
    row = cursor.fetchone()
    return "duplicate" if row is not None and hmac.compare_digest(row[0], digest) else "conflict"
