"""What the client raises: the server's RFC 9457 problems, a wait that ran out, a webhook that
does not verify. All derive from :class:`ClientError`."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from uuid import UUID

import httpx

if TYPE_CHECKING:
    from invoice_extraction_client.client import Job

# The members every problem has; anything else the server sends is an extension member.
_PROBLEM_MEMBERS = ("type", "title", "status", "detail", "instance")
_DELTA_SECONDS = re.compile(r"\d+(?:\.\d+)?")


class ClientError(Exception):
    """Anything the client raises on purpose."""


class ProblemError(ClientError):
    """The server answered 4xx or 5xx. Its body is ``application/problem+json`` (RFC 9457):
    switch on :attr:`type` (``/problems/idempotency-key-conflict``, …); :attr:`extensions` holds
    the members a type adds (``errors`` of a validation error, ``job_id`` of a key conflict,
    ``limit`` of a tenant limit, …). An answer that is not a problem (a proxy's HTML error page)
    becomes one with type ``about:blank`` and the start of its body as the detail."""

    def __init__(
        self,
        *,
        status: int,
        type: str,
        title: str,
        detail: str,
        instance: str | None = None,
        extensions: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {type}: {detail}")
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.instance = instance
        self.extensions: Mapping[str, Any] = dict(extensions or {})
        # Seconds the server asked the client to wait (its Retry-After), on 429 and 503.
        self.retry_after = retry_after

    @property
    def job_id(self) -> UUID | None:
        """idempotency-key-conflict: the job the key was first used for."""
        value = self.extensions.get("job_id")
        return UUID(value) if isinstance(value, str) else None

    @classmethod
    def from_body(
        cls, body: Mapping[str, Any], *, status: int | None = None, retry_after: float | None = None
    ) -> ProblemError:
        """A problem the server sent as JSON: an error answer's body, or the problem a batch
        gives for one of its files. ``status`` is the answer's, when the body names none."""
        return cls(
            status=int(body.get("status") or status or 0),
            type=str(body["type"]),
            title=str(body.get("title") or ""),
            detail=str(body.get("detail") or ""),
            instance=body.get("instance"),
            extensions={key: value for key, value in body.items() if key not in _PROBLEM_MEMBERS},
            retry_after=retry_after,
        )

    @property
    def batch_id(self) -> UUID | None:
        """idempotency-key-conflict of a batch: the batch the key was first used for."""
        value = self.extensions.get("batch_id")
        return UUID(value) if isinstance(value, str) else None

    @classmethod
    def from_response(cls, response: httpx.Response) -> ProblemError:
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        body: Any = None
        try:
            body = json.loads(response.content)
        except ValueError:
            pass
        if isinstance(body, dict) and isinstance(body.get("type"), str):
            return cls.from_body(body, status=response.status_code, retry_after=retry_after)
        try:
            title = HTTPStatus(response.status_code).phrase
        except ValueError:
            title = "HTTP error"
        return cls(
            status=response.status_code,
            type="about:blank",
            title=title,
            detail=response.content[:300].decode("utf-8", errors="replace"),
            retry_after=retry_after,
        )


class UnexpectedAnswer(ClientError):
    """A success status with a body the client cannot read: a server newer or older than the
    document the client was generated from (regenerate it: bin/generate-client)."""


class WaitTimeout(ClientError):
    """:meth:`Client.wait` ran out of time before the job settled. :attr:`job` is the last
    state read (None when no read succeeded); the job goes on, wait again to keep watching."""

    def __init__(self, job_id: UUID, timeout: float, job: Job | None) -> None:
        state = job.state.value if job is not None else "unknown"
        super().__init__(f"job {job_id} not settled after {timeout:g} s (last state: {state})")
        self.job_id = job_id
        self.timeout = timeout
        self.job = job


class WebhookVerificationError(ClientError):
    """The request is not a genuine, fresh webhook signed with the secret given: answer 401."""


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` value: delta-seconds or an HTTP-date (RFC 9110 §10.2.3).
    A date past is 0; anything unreadable is None (the caller's own backoff applies)."""
    if value is None:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        seconds = float(value)
        return seconds if math.isfinite(seconds) else None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # asctime() dates carry no zone; HTTP dates are GMT
    return max(0.0, (moment - (now or datetime.now(UTC))).total_seconds())
