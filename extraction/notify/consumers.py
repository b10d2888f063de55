"""The ``/ws/jobs/`` WebSocket: "job changed" notices for one job or all of a tenant's jobs.

Protocol (JSON text frames):

* Authentication: the session cookie (the router checks the origin), or the subprotocols
  ``["jobs.v1", "token.<api token>"]`` / ``["jobs.v1", "ticket.<ticket>"]``; the server echoes only
  ``jobs.v1``. The query string is ignored (URLs end up in logs). No credential → 4401 before accepting.
* Client → ``{"type": "subscribe", "job_id": <uuid or null>, "cursor": <last event_id or null>}``;
  a new subscribe replaces the previous one.
* Server → the catch-up (:func:`extraction.notify.listeners.catch_up`), then ``{"type":
  "subscribed", "mode": "replay" | "snapshot", "event_id": <cursor to keep>}``, then live
  ``job.changed`` frames. Notices may repeat or reorder: keep the highest ``state_version`` per job.
* Authorization is re-checked every ``NOTIFY_REAUTH_SECONDS`` and on a pushed revocation; 4403 if it fails.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from extraction.notify.listeners import (
    JOB_CHANGED,
    CatchUp,
    JobNotice,
    Listener,
    MissedNoticeSweep,
    Subscription,
    catch_up,
    listener_for_token,
    listener_for_user,
    redeem_ticket,
    still_authorized,
    subscription_for,
)

logger = logging.getLogger("extraction.notify")

SUBPROTOCOL = "jobs.v1"
TOKEN_PROTOCOL_PREFIX = "token."
TICKET_PROTOCOL_PREFIX = "ticket."
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403


def _in_thread(func: Any) -> Any:
    # Not thread-sensitive: sockets' database checks run side by side in the executor
    # instead of queueing on one shared thread.
    return database_sync_to_async(func, thread_sensitive=False)


def authenticate_socket(scope: dict[str, Any]) -> Listener | None:
    """The listener behind a WebSocket handshake, or None. A credential sent as a subprotocol
    counts only next to ``jobs.v1`` (the one the server can echo back)."""
    offered = list(scope.get("subprotocols") or [])
    if SUBPROTOCOL in offered:
        for value in offered:
            if value.startswith(TOKEN_PROTOCOL_PREFIX):
                return listener_for_token(value[len(TOKEN_PROTOCOL_PREFIX) :])
            if value.startswith(TICKET_PROTOCOL_PREFIX):
                return redeem_ticket(value[len(TICKET_PROTOCOL_PREFIX) :])
    session = scope.get("session")
    return listener_for_user(scope.get("user"), session.session_key if session is not None else None)


class LiveJobsMixin:
    """What the WebSocket and the SSE stream share: a listener, one subscription, the
    periodic re-authorization and the send-time check. The transport supplies
    :meth:`deliver` and :meth:`end_forbidden`."""

    listener: Listener | None = None
    subscription: Subscription | None = None
    sweep: MissedNoticeSweep | None = None
    verified_at: float = 0.0
    _reauthorization: asyncio.Task | None = None
    channel_layer: Any
    channel_name: str

    async def deliver(self, frame: dict[str, Any]) -> None:
        raise NotImplementedError

    async def end_forbidden(self) -> None:
        raise NotImplementedError

    async def heartbeat(self) -> None:
        """Called between re-checks; SSE writes a comment to keep proxies from idling out."""

    async def start_listening(self, listener: Listener) -> None:
        self.listener = listener
        self.verified_at = time.monotonic()
        for group in listener.auth_groups:
            await self.channel_layer.group_add(group, self.channel_name)
        self._reauthorization = asyncio.create_task(self._reauthorize_periodically())

    async def subscribe(self, job_id: str | None, cursor: int | None) -> CatchUp | None:
        """Join the live group first, then catch up from the database (see catch_up)."""
        assert self.listener is not None
        subscription = await _in_thread(subscription_for)(self.listener, job_id)
        if subscription is None:
            return None
        if self.subscription is not None and self.subscription.group != subscription.group:
            await self.channel_layer.group_discard(self.subscription.group, self.channel_name)
        self.subscription = subscription
        await self.channel_layer.group_add(subscription.group, self.channel_name)
        caught_up = await _in_thread(catch_up)(subscription, cursor)
        self.sweep = MissedNoticeSweep.after(caught_up)
        return caught_up

    async def stop_listening(self) -> None:
        if self._reauthorization is not None and self._reauthorization is not asyncio.current_task():
            self._reauthorization.cancel()
        groups = list(self.listener.auth_groups) if self.listener else []
        if self.subscription is not None:
            groups.append(self.subscription.group)
        for group in groups:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # A notice touches no database, so it skips AsyncConsumer.dispatch's
        # close_old_connections, a thread round trip per message. Everything that does use
        # the database goes through database_sync_to_async, which cleans up after itself.
        if message.get("type") == JOB_CHANGED:
            await self.job_changed(message)
            return
        await super().dispatch(message)  # type: ignore[misc]

    # channel layer handlers

    async def job_changed(self, message: dict[str, Any]) -> None:
        notice = JobNotice.from_layer_message(message)
        if self.listener is None or self.subscription is None:
            return
        # Send-time check: the notice's tenant (from job_events, the authority) must be the
        # listener's, and the listener must have been verified recently: a re-check that is
        # overdue (a stalled loop, a hanging database) withholds notices rather than trust.
        if not (self.listener.may_see(notice) and self.subscription.covers(notice)):
            return
        if time.monotonic() - self.verified_at > 2 * settings.NOTIFY_REAUTH_SECONDS:
            return
        if self.sweep is not None:
            self.sweep.mark_sent(notice.event_id)
        await self.deliver(notice.frame())

    async def auth_revoked(self, message: dict[str, Any]) -> None:
        await self.forbid()

    async def forbid(self) -> None:
        """Stop every notice at once, then end the transport with 4403."""
        self.subscription = None
        await self.end_forbidden()

    async def _reauthorize_periodically(self) -> None:
        """NTF-2, the pull backstop: every NOTIFY_REAUTH_SECONDS ask the database whether the
        credential still holds; a "no", an error or a timeout ends the stream (fail closed)."""
        interval = settings.NOTIFY_REAUTH_SECONDS
        # A random phase: sockets opened together (a page of tabs, a reconnect storm) would
        # otherwise all hit the database in the same instant every interval.
        await asyncio.sleep(random.uniform(0, interval))
        swept_at = time.monotonic()
        while True:
            try:
                authorized = await asyncio.wait_for(_in_thread(still_authorized)(self.listener), timeout=interval)
            except Exception as exc:  # noqa: BLE001 — any failure to confirm is a "no"
                logger.warning("re-authorization failed; closing", extra={"error": repr(exc)})
                authorized = False
            if not authorized:
                await self.forbid()
                return
            self.verified_at = time.monotonic()
            await self.heartbeat()
            if time.monotonic() - swept_at >= settings.NOTIFY_CATCHUP_SECONDS:
                swept_at = time.monotonic()
                await self._send_missed()
            await asyncio.sleep(interval)

    async def _send_missed(self) -> None:
        """The backstop for notices the channel layer lost (pub/sub drops what is published
        while a process's subscription reconnects, a Redis failover loses its last writes):
        re-read the event log from the sweep's start and send what this stream has not sent.
        Too many events for a replay: the snapshot of the subscription's jobs instead."""
        subscription, sweep = self.subscription, self.sweep
        if subscription is None or sweep is None:
            return
        try:
            caught_up = await asyncio.wait_for(
                _in_thread(catch_up)(subscription, sweep.start), timeout=settings.NOTIFY_REAUTH_SECONDS
            )
        except Exception as exc:  # noqa: BLE001 — the next round tries again
            logger.warning("catch-up of missed notices failed", extra={"error": repr(exc)})
            return
        if self.subscription is not subscription or self.sweep is not sweep:
            return  # re-subscribed meanwhile: that subscribe's catch-up stands
        for notice in sweep.unsent(caught_up.notices):
            sweep.mark_sent(notice.event_id)
            await self.deliver(notice.frame())
        sweep.advance(caught_up.cursor)


class JobEventsConsumer(LiveJobsMixin, AsyncWebsocketConsumer):
    async def connect(self) -> None:
        try:
            listener = await _in_thread(authenticate_socket)(self.scope)
        except Exception as exc:  # noqa: BLE001 — cannot tell who it is: refuse
            logger.warning("websocket authentication failed", extra={"error": repr(exc)})
            listener = None
        if listener is None:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        await self.start_listening(listener)
        offered = self.scope.get("subprotocols") or []
        await self.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered else None)

    async def disconnect(self, code: int) -> None:
        await self.stop_listening()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            message = json.loads(text_data or "")
        except ValueError:
            await self.deliver({"type": "error", "code": "bad_request", "detail": "Frames are JSON objects."})
            return
        if not isinstance(message, dict) or message.get("type") != "subscribe":
            await self.deliver({"type": "error", "code": "bad_request", "detail": "Expected a subscribe frame."})
            return
        job_id, cursor = message.get("job_id"), message.get("cursor")
        if (job_id is not None and not isinstance(job_id, str)) or (
            cursor is not None and (not isinstance(cursor, int) or isinstance(cursor, bool))
        ):
            await self.deliver({"type": "error", "code": "bad_request", "detail": "job_id: string, cursor: integer."})
            return
        caught_up = await self.subscribe(job_id, cursor)
        if caught_up is None:
            await self.deliver({"type": "error", "code": "not_found", "detail": "No such extraction job."})
            return
        for notice in caught_up.notices:
            await self.deliver(notice.frame())
        await self.deliver(
            {
                "type": "subscribed",
                "mode": caught_up.mode,
                "event_id": caught_up.cursor,
                "job_id": job_id,
                "truncated": caught_up.truncated,
            }
        )

    async def deliver(self, frame: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(frame))

    async def end_forbidden(self) -> None:
        await self.close(code=CLOSE_FORBIDDEN)
