"""``GET /api/v1/job-events/stream``: the WebSocket's notices as Server-Sent Events, for clients
that only listen. Served by daphne (config/asgi.py): one open stream would tie up a sync worker.

Authentication: ``Authorization: Bearer <token>`` or the session cookie; ``?job_id=<uuid>``
narrows the stream to one job. ``Last-Event-ID`` is the cursor: a bounded replay from it (or
``event: job.snapshot`` entries without an id), ``event: subscribed`` with the resume cursor as
its id, then live ``event: job.changed`` with the WebSocket's frame as data. A revoked credential
ends the stream with ``event: revoked``; EventSource's reconnect then gets 401/403 and stops.

Clients that can hold neither socket nor stream poll the status URL with full jitter, waiting
``random(0, min(30 s, 1 s × 2^n))`` after the n-th unchanged answer, as the web UI does.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.exceptions import StopConsumer
from channels.generic.http import AsyncHttpConsumer

from extraction.notify.consumers import LiveJobsMixin, _in_thread
from extraction.notify.listeners import listener_for_token, listener_for_user

logger = logging.getLogger("extraction.notify")

RETRY_MILLISECONDS = 3000
HEARTBEAT = b": keepalive\n\n"


def sse_event(frame: dict[str, Any], *, event_id: int | None = None) -> bytes:
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines.append(f"event: {frame['type']}")
    lines.append("data: " + json.dumps(frame))
    return ("\n".join(lines) + "\n\n").encode()


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _problem(status: int, title: str, detail: str) -> bytes:
    return json.dumps({"type": "about:blank", "title": title, "status": status, "detail": detail}).encode()


def _authenticate(scope: dict[str, Any]) -> Any:
    authorization = _header(scope, b"authorization")
    if authorization:
        scheme, _, raw = authorization.partition(" ")
        return listener_for_token(raw.strip()) if scheme.lower() == "bearer" else None
    session = scope.get("session")
    return listener_for_user(scope.get("user"), session.session_key if session is not None else None)


class JobEventStreamConsumer(LiveJobsMixin, AsyncHttpConsumer):
    streaming = False
    finished = False

    async def handle(self, body: bytes) -> None:
        """1. Authenticate (bearer token or session) → 401 without a credential.
        2. Parse job_id and Last-Event-ID → 400 / 404 when they make no sense.
        3. Join the live group, send the catch-up, then stay open for live events."""
        try:
            listener = await _in_thread(_authenticate)(self.scope)
        except Exception as exc:  # noqa: BLE001 — cannot tell who it is: refuse
            logger.warning("stream authentication failed", extra={"error": repr(exc)})
            listener = None
        if listener is None:
            await self.send_response(
                401,
                _problem(401, "Not authenticated", "A bearer token or a session is required."),
                headers=[(b"Content-Type", b"application/problem+json"), (b"WWW-Authenticate", b'Bearer realm="api"')],
            )
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        job_id = query.get("job_id", [None])[0]
        last_event_id = _header(self.scope, b"last-event-id")
        cursor: int | None = None
        if last_event_id:
            try:
                cursor = int(last_event_id)
            except ValueError:
                await self.send_response(
                    400,
                    _problem(400, "Bad Last-Event-ID", "Last-Event-ID is an event id."),
                    headers=[(b"Content-Type", b"application/problem+json")],
                )
                return
        await self.start_listening(listener)
        caught_up = await self.subscribe(job_id, cursor)
        if caught_up is None:
            await self.send_response(
                404,
                _problem(404, "Not found", "No such extraction job."),
                headers=[(b"Content-Type", b"application/problem+json")],
            )
            return
        await self.send_headers(
            status=200,
            headers=[
                (b"Content-Type", b"text/event-stream; charset=utf-8"),
                (b"Cache-Control", b"no-cache"),
                (b"X-Accel-Buffering", b"no"),
            ],
        )
        self.streaming = True
        chunks = [f"retry: {RETRY_MILLISECONDS}\n\n".encode()]
        for notice in caught_up.notices:
            frame = notice.frame()
            chunks.append(sse_event(frame, event_id=notice.event_id if frame["type"] == "job.changed" else None))
        chunks.append(
            sse_event(
                {
                    "type": "subscribed",
                    "mode": caught_up.mode,
                    "event_id": caught_up.cursor,
                    "truncated": caught_up.truncated,
                },
                event_id=caught_up.cursor,
            )
        )
        await self.send_body(b"".join(chunks), more_body=True)

    async def http_request(self, message: dict[str, Any]) -> None:
        # AsyncHttpConsumer ends the response when handle() returns; a stream stays open
        # until the client goes away or the credential is revoked.
        if "body" in message:
            self.body.append(message["body"])
        if message.get("more_body"):
            return
        try:
            await self.handle(b"".join(self.body))
        except Exception:
            await self.disconnect()
            raise
        if not self.streaming:
            await self.disconnect()
            raise StopConsumer()

    async def deliver(self, frame: dict[str, Any]) -> None:
        if self.streaming and not self.finished:
            await self.send_body(sse_event(frame, event_id=frame.get("event_id")), more_body=True)

    async def heartbeat(self) -> None:
        if self.streaming and not self.finished:
            await self.send_body(HEARTBEAT, more_body=True)

    async def end_forbidden(self) -> None:
        if self.streaming and not self.finished:
            self.finished = True
            await self.send_body(sse_event({"type": "revoked", "code": 4403}), more_body=False)
            await self.stop_listening()
            # May run in the re-authorization task: end the consumer through its own queue.
            await self.channel_layer.send(self.channel_name, {"type": "stream.end"})

    async def stream_end(self, message: dict[str, Any]) -> None:
        raise StopConsumer()

    async def disconnect(self) -> None:
        await self.stop_listening()
