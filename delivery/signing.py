"""Standard Webhooks signing (DLV-2, https://www.standardwebhooks.com) and endpoint secrets at rest.

Headers: ``webhook-id`` (the delivery id, the same on every attempt: the receiver's dedup key),
``webhook-timestamp`` (unix seconds, fresh per attempt), ``webhook-signature`` (``v1,<base64
HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>`` per valid secret, space-separated, newest first)
and ``webhook-key-id`` (their key ids, in the same order). The body is serialized once and those
exact bytes are signed and sent on every attempt. Secrets (``whsec_`` + base64 of 32 random bytes)
are stored sealed with AES-256-GCM to their endpoint and key id, and shown once.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
SIGNATURE_VERSION = "v1"
KEY_ID_HEADER = "webhook-key-id"


@dataclass(frozen=True)
class SigningKey:
    key_id: str
    secret: bytes  # raw key bytes (what follows whsec_, base64-decoded)


def new_secret() -> tuple[str, bytes]:
    """A fresh endpoint secret: (the ``whsec_…`` text shown once, the raw key bytes)."""
    raw = secrets.token_bytes(SECRET_BYTES)
    return SECRET_PREFIX + base64.b64encode(raw).decode(), raw


def new_key_id() -> str:
    return "key_" + secrets.token_hex(8)


def decode_secret(text: str) -> bytes:
    """``whsec_<base64>`` (or bare base64) → key bytes. Only ``whsec_`` is stripped."""
    if text.startswith(SECRET_PREFIX):
        text = text[len(SECRET_PREFIX) :]
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def serialize_body(payload: dict[str, Any]) -> bytes:
    """The one serialization of a webhook body; whatever is stored is what is signed and sent."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


def signature(secret: bytes, *, webhook_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret, signed, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode()}"


def signed_headers(
    keys: Sequence[SigningKey], *, webhook_id: str, timestamp: int, body: bytes
) -> list[tuple[str, str]]:
    """The Standard Webhooks headers for one attempt, signed with every key given (newest first)."""
    if not keys:
        raise ValueError("an endpoint without a valid secret cannot be signed for")
    if "." in webhook_id:
        raise ValueError("a webhook id may not contain '.'")  # it would make the signed string ambiguous
    return [
        ("Content-Type", "application/json"),
        ("User-Agent", "invoice-extraction-webhooks/1"),
        ("webhook-id", webhook_id),
        ("webhook-timestamp", str(int(timestamp))),
        (
            "webhook-signature",
            " ".join(signature(k.secret, webhook_id=webhook_id, timestamp=timestamp, body=body) for k in keys),
        ),
        (KEY_ID_HEADER, " ".join(k.key_id for k in keys)),
    ]


# --- secrets at rest ---------------------------------------------------------------------------------


def _sealing_key() -> bytes:
    configured = getattr(settings, "WEBHOOK_SECRETS_KEY", None)
    material = (configured or settings.SECRET_KEY).encode()
    # A dedicated key when configured; otherwise derived from SECRET_KEY under its own label,
    # so the sealed secrets never share a key with sessions or signing.
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"delivery.webhook-secrets.v1").derive(material)


def seal(raw: bytes, *, context: str) -> str:
    """Encrypt a secret for storage; ``context`` (endpoint + key id) is authenticated, so a
    sealed value copied to another row does not open."""
    nonce = os.urandom(12)
    sealed = AESGCM(_sealing_key()).encrypt(nonce, raw, context.encode())
    return "v1:" + base64.b64encode(nonce + sealed).decode()


def unseal(value: str, *, context: str) -> bytes:
    version, _, data = value.partition(":")
    if version != "v1":
        raise ValueError(f"unknown sealed-secret version {version!r}")
    blob = base64.b64decode(data)
    return AESGCM(_sealing_key()).decrypt(blob[:12], blob[12:], context.encode())
