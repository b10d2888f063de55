"""The notifier process (NTF-1): committed ``job_events`` rows become "job changed" notices on
the channel layer, woken by ``LISTEN job_events`` and polling as a fallback, and revoked tokens
and sessions are pushed to the listeners they end (NTF-2). Who may listen and what a client is
owed on reconnecting is :mod:`extraction.notify.listeners`."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import redis
from django.conf import settings

from config import probes, tracing
from config.backoff import full_jitter
from config.db import database_conninfo
from config.sql import load_statements
from extraction.notify.listeners import AUTH_REVOKED, JobNotice, job_group, tenant_group, token_group, user_group

logger = logging.getLogger("extraction.notify")

SQL = load_statements(Path(__file__).with_suffix(".sql"))


# A transition's transaction is short (idle_in_transaction_session_timeout and the
# statement timeout are 30 s); an id still missing after this is a rolled-back insert.
GAP_HORIZON_SECONDS = 120.0
MAX_TRACKED_GAPS = 10_000
STARTUP_REPLAY_SECONDS = 10.0
REVOCATION_CLOCK_MARGIN_SECONDS = 30.0


@dataclass
class EventCursor:
    """The notifier's place in the event log: the highest id forwarded and the lower ids not
    seen yet (uncommitted or rolled back), each with when it was first missed."""

    position: int
    gaps: dict[int, float] = field(default_factory=dict)

    def is_news(self, event_id: int) -> bool:
        return event_id in self.gaps or event_id > self.position

    def admit(self, event_id: int, now: float) -> bool:
        """Record ``event_id`` as forwarded: True when it was news, False when it was forwarded already."""
        if event_id in self.gaps:
            del self.gaps[event_id]
            return True
        if event_id <= self.position:
            return False
        first_missing = max(self.position + 1, event_id - MAX_TRACKED_GAPS)
        for missing in range(first_missing, event_id):
            self.gaps[missing] = now
        self.position = event_id
        return True

    def forget_old_gaps(self, now: float) -> None:
        for missing in [m for m, since in self.gaps.items() if now - since > GAP_HORIZON_SECONDS]:
            del self.gaps[missing]
        while len(self.gaps) > MAX_TRACKED_GAPS:
            del self.gaps[min(self.gaps)]


class Notifier:
    """Committed ``job_events`` rows → ``job.changed`` group messages on the channel layer.

    Woken by ``LISTEN job_events`` on a dedicated autocommit connection (the trigger's
    NOTIFY is a hint), and polls every ``poll_interval`` in case a NOTIFY was missed or the
    listening connection is down. Two notifiers may run at once: each forwards every event,
    and clients ignore what they already have.
    """

    def __init__(self, *, poll_interval: float, batch_size: int = 500, channel_layer: Any = None) -> None:
        from channels.layers import get_channel_layer

        self.poll_interval = poll_interval
        self.batch_size = batch_size
        self.layer = channel_layer or get_channel_layer()
        self.cursor: EventCursor | None = None
        self._query: psycopg.AsyncConnection | None = None
        self._listener_task: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._revocations_since: Any = None
        self._pushed: dict[tuple[str, int], float] = {}
        self._next_revocation_check = 0.0

    # One step each: "did I find work?" answers as a count.

    async def forward_new_events(self) -> int:
        """1. Read the events after the position and the still-missing ids, in id order.
        2. Forward each new one to its tenant's and its job's group (traced: in a span of
           the job's trace, from the job row's stored context).
        3. Repeat while batches come back full; then drop gaps past the horizon."""
        conn = await self._connection()
        assert self.cursor is not None
        forwarded = 0
        while True:
            async with conn.cursor() as cur:
                await cur.execute(
                    SQL["new_events"],
                    {
                        "after": self.cursor.position,
                        "gaps": list(self.cursor.gaps),
                        "limit": self.batch_size,
                        "traced": tracing.enabled(),
                    },
                )
                rows = await cur.fetchall()
            # An event counts as forwarded only once the layer took it: a send that fails
            # (Redis gone) leaves it, and every later one, for the retry.
            fresh = [(JobNotice.from_row(row[:5]), row[5]) for row in rows if self.cursor.is_news(row[0])]
            for notice, trace_context in fresh:
                with tracing.step_span(
                    "notify.job_changed",
                    trace_context=json.loads(trace_context) if isinstance(trace_context, str) else trace_context,
                    attributes={
                        "extraction.job_id": notice.job_id,
                        "extraction.state": notice.state,
                        "extraction.state_version": notice.state_version,
                        "notify.event_id": notice.event_id,
                    },
                ):
                    await self._send(notice)
                self.cursor.admit(notice.event_id, time.monotonic())
                forwarded += 1
            if len(rows) < self.batch_size:
                break
        self.cursor.forget_old_gaps(time.monotonic())
        return forwarded

    async def push_revocations(self) -> int:
        """NTF-2, the push: tell the sockets of credentials revoked since the last look to close."""
        conn = await self._connection()
        async with conn.cursor() as cur:
            await cur.execute(SQL["database_now"])
            (db_now,) = await _one_row(cur)
            if self._revocations_since is None:
                self._revocations_since = db_now
            since = self._revocations_since - timedelta(seconds=REVOCATION_CLOCK_MARGIN_SECONDS)
            await cur.execute(SQL["revocations"], {"since": since})
            rows = await cur.fetchall()
        self._revocations_since = db_now
        now = time.monotonic()
        pushed = 0
        for kind, ident, _revoked_at in rows:
            if (kind, ident) in self._pushed:
                continue
            self._pushed[(kind, ident)] = now
            await push_revocation(
                self.layer, token_id=ident if kind == "token" else None, user_id=ident if kind == "user" else None
            )
            pushed += 1
        for key in [k for k, at in self._pushed.items() if now - at > 4 * REVOCATION_CLOCK_MARGIN_SECONDS]:
            del self._pushed[key]
        return pushed

    async def run(self, stop: asyncio.Event, *, once: bool = False) -> None:
        """Forward until ``stop`` is set. A database or layer failure is logged and retried
        with jittered backoff; nothing is lost meanwhile, the position stays where it was."""
        failures = 0
        while not stop.is_set():
            probes.beat("notifier", bound_seconds=probes.LOOP_BOUND_SECONDS + self.poll_interval)
            try:
                self._ensure_listening()
                self._wake.clear()
                await self.forward_new_events()
                if time.monotonic() >= self._next_revocation_check:
                    await self.push_revocations()
                    self._next_revocation_check = time.monotonic() + settings.NOTIFY_REVOCATION_POLL_SECONDS
                failures = 0
                if once:
                    break
                await _wait_any(self._wake, stop, timeout=self.poll_interval * random.uniform(0.9, 1.1))
            # redis-py's ConnectionError is not the builtin one: a Redis outage is a RedisError.
            except (psycopg.Error, OSError, ConnectionError, redis.RedisError) as exc:
                failures += 1
                delay = full_jitter(failures + 1, base=0.5, cap=30.0)
                logger.warning("notifier step failed; retrying", extra={"error": repr(exc), "delay": delay})
                await self.close()
                await _wait_any(stop, timeout=delay)
        probes.forget("notifier")
        await self.close()

    async def close(self) -> None:
        if self._listener_task is not None:
            self._listener_task.cancel()
            await asyncio.gather(self._listener_task, return_exceptions=True)
            self._listener_task = None
        if self._query is not None:
            await self._query.close()
            self._query = None

    async def _connection(self) -> psycopg.AsyncConnection:
        if self._query is None or self._query.closed:
            self._query = await psycopg.AsyncConnection.connect(
                database_conninfo(application_name="notifier"), autocommit=True
            )
            if self.cursor is None:
                async with self._query.cursor() as cur:
                    await cur.execute(SQL["start_position"], {"seconds": STARTUP_REPLAY_SECONDS})
                    (position,) = await _one_row(cur)
                self.cursor = EventCursor(position=int(position))
        return self._query

    def _ensure_listening(self) -> None:
        if self._listener_task is None or self._listener_task.done():
            if self._listener_task is not None and not self._listener_task.cancelled():
                error = self._listener_task.exception()
                if error is not None:
                    logger.warning("LISTEN connection lost; reconnecting", extra={"error": repr(error)})
            self._listener_task = asyncio.create_task(self._listen())

    async def _listen(self) -> None:
        async with await psycopg.AsyncConnection.connect(
            database_conninfo(application_name="notifier-listen"), autocommit=True
        ) as conn:
            await conn.execute(SQL["listen_job_events"])
            self._wake.set()  # events committed before LISTEN took effect are read now
            async for _ in conn.notifies():
                self._wake.set()

    async def _send(self, notice: JobNotice) -> None:
        message = notice.layer_message()
        await asyncio.gather(
            self.layer.group_send(tenant_group(notice.tenant_id), message),
            self.layer.group_send(job_group(notice.job_id), message),
        )


async def push_revocation(layer: Any, *, token_id: int | None = None, user_id: int | None = None) -> None:
    """Close every socket opened with this token or by this user (they re-check on receipt
    anyway: a push can only make a socket close sooner, never keep one open)."""
    if token_id is not None:
        await layer.group_send(token_group(token_id), {"type": AUTH_REVOKED})
    if user_id is not None:
        await layer.group_send(user_group(user_id), {"type": AUTH_REVOKED})


async def _wait_any(*events: asyncio.Event, timeout: float) -> None:
    waiters = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


async def _one_row(cursor: psycopg.AsyncCursor[Any]) -> Any:
    """The row of a statement that always returns exactly one (an aggregate, ``now()``)."""
    row = await cursor.fetchone()
    if row is None:
        raise psycopg.ProgrammingError("the statement returned no row")
    return row
