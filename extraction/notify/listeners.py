"""Live "job changed" notices (NTF-1, NTF-2): who may listen, what a reconnecting client is
owed, and the notifier process that turns committed ``job_events`` rows into notices.

A notice is a hint, never the record: it tells a client to re-read the job's status URL. The
channel layer is at-most-once, so the event log is the authority (``job_events.id`` is the
client's reconnect cursor) and notices may repeat: clients keep the highest ``state_version``.
Authorization is re-checked while a listener stays connected (:func:`still_authorized`), pushed
on revocation, and checked for every notice sent (:meth:`Listener.may_see`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import secrets
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import psycopg
import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.base import SessionBase
from django.core.cache import cache
from django.db.models import OuterRef, Subquery

from accounts.models import ApiToken, Membership, hash_token
from config import probes, tracing
from config.backoff import full_jitter
from config.db import database_conninfo
from config.sql import load_statements
from extraction.models import ExtractionJob, JobEvent

logger = logging.getLogger("extraction.notify")

SQL = load_statements(Path(__file__).with_suffix(".sql"))

# Settings of this module with their defaults (config/settings.py may override each).
_DEFAULTS: dict[str, Any] = {
    "NOTIFY_TICKET_SECONDS": 30,  # a WebSocket ticket's life: minted just before connecting
    "NOTIFY_REVOCATION_POLL_SECONDS": 1.0,  # how often the notifier looks for revocations to push
    "NOTIFY_POLL_SECONDS": 1.0,  # the notifier's fallback poll when no NOTIFY wakes it
    "NOTIFY_WS_URL": "",  # the socket browsers open; "" = ws(s)://<page host>:NOTIFY_WS_PORT/ws/jobs/
    "NOTIFY_WS_PORT": 8001,
    "NOTIFY_SNAPSHOT_LIMIT": 500,  # most jobs in one snapshot (the newest ones)
}


def notify_setting(name: str) -> Any:
    return getattr(settings, name, _DEFAULTS[name])


JOB_CHANGED = "job.changed"
JOB_SNAPSHOT = "job.snapshot"
AUTH_REVOKED = "auth.revoked"


# --- notices and the groups they go to --------------------------------------------------------


def tenant_group(tenant_id: uuid.UUID | str) -> str:
    return f"tenant.{tenant_id}"


def job_group(job_id: uuid.UUID | str) -> str:
    return f"job.{job_id}"


def token_group(token_id: int) -> str:
    return f"auth.token.{token_id}"


def user_group(user_id: int) -> str:
    return f"auth.user.{user_id}"


@dataclass(frozen=True)
class JobNotice:
    """One job transition as a notice. ``tenant_id`` travels on the channel layer for the
    send-time check but never goes to a client."""

    event_id: int
    job_id: str
    tenant_id: str
    state_version: int
    state: str
    type: str = JOB_CHANGED

    def frame(self) -> dict[str, Any]:
        """What a client receives."""
        return {
            "event_id": self.event_id,
            "type": self.type,
            "job_id": self.job_id,
            "state_version": self.state_version,
            "state": self.state,
        }

    def layer_message(self) -> dict[str, Any]:
        # "type" names the consumers' handler (job.changed → job_changed).
        return asdict(self)

    @classmethod
    def from_layer_message(cls, message: dict[str, Any]) -> JobNotice:
        return cls(
            event_id=int(message["event_id"]),
            job_id=str(message["job_id"]),
            tenant_id=str(message["tenant_id"]),
            state_version=int(message["state_version"]),
            state=str(message["state"]),
            type=str(message.get("type", JOB_CHANGED)),
        )


# --- who is listening ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Listener:
    """A connected client: its tenant and the credential that proved it (a token, or a user
    with a session). Checked again and again while the connection lives (NTF-2)."""

    tenant_id: str
    role: str
    token_id: int | None = None
    user_id: int | None = None
    session_key: str | None = None

    def may_see(self, notice: JobNotice) -> bool:
        """Send-time check: never another tenant's notice, whatever group it came through."""
        return notice.tenant_id == self.tenant_id

    @property
    def auth_groups(self) -> list[str]:
        """Groups a revocation is pushed to."""
        groups = []
        if self.token_id is not None:
            groups.append(token_group(self.token_id))
        if self.user_id is not None:
            groups.append(user_group(self.user_id))
        return groups


def listener_for_token(raw: str) -> Listener | None:
    token = ApiToken.objects.active().filter(token_hash=hash_token(raw)).first() if raw else None
    if token is None:
        return None
    token.touch()
    return Listener(tenant_id=str(token.tenant_id), role=token.role, token_id=token.pk)


def listener_for_user(user: Any, session_key: str | None) -> Listener | None:
    """A logged-in browser user, seen through their (unrevoked) membership."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    membership = Membership.objects.filter(user_id=user.pk, revoked_at__isnull=True).first()
    if membership is None:
        return None
    return Listener(tenant_id=str(membership.tenant_id), role=membership.role, user_id=user.pk, session_key=session_key)


def _session_belongs_to(session_key: str, user_id: int) -> bool:
    from importlib import import_module

    engine = import_module(settings.SESSION_ENGINE)
    session: SessionBase = engine.SessionStore(session_key)
    # load() of an unknown or expired key answers an empty session (logout flushed it).
    return str(session.load().get("_auth_user_id", "")) == str(user_id)


def still_authorized(listener: Listener) -> bool:
    """NTF-2, the pull backstop: is the credential this listener connected with still good,
    for the same tenant? A revoked or moved token, a revoked membership, a deactivated user or
    a logged-out session all answer False. Callers treat an exception as False too."""
    token_ok = (
        listener.token_id is None
        or ApiToken.objects.active().filter(pk=listener.token_id, tenant_id=listener.tenant_id).exists()
    )
    if not token_ok:
        return False
    if listener.user_id is not None:
        if not get_user_model().objects.filter(pk=listener.user_id, is_active=True).exists():
            return False
        if not Membership.objects.filter(
            user_id=listener.user_id, tenant_id=listener.tenant_id, revoked_at__isnull=True
        ).exists():
            return False
        if listener.session_key is not None and not _session_belongs_to(listener.session_key, listener.user_id):
            return False
    return listener.token_id is not None or listener.user_id is not None


# Tickets: a browser whose page and socket are on different origins (the page on gunicorn,
# the socket on daphne) cannot always rely on the session cookie riding along, and must never
# put a token in a URL. An authenticated REST call mints a ticket: single-use, short-lived,
# sent as a Sec-WebSocket-Protocol value. Losing Redis loses only unredeemed tickets; the
# client then asks for a new one (or polls).
TICKET_PREFIX = "notify-ticket:"


def issue_ticket(listener: Listener) -> str:
    raw = secrets.token_urlsafe(32)
    cache.set(TICKET_PREFIX + hash_token(raw), asdict(listener), timeout=notify_setting("NOTIFY_TICKET_SECONDS"))
    return raw


def redeem_ticket(raw: str) -> Listener | None:
    """The listener a ticket was minted for, once: of two redeemers only the one whose delete
    removed the key wins. The credential behind it is checked again at once."""
    key = TICKET_PREFIX + hash_token(raw)
    stored = cache.get(key)
    if stored is None or not cache.delete(key):
        return None
    listener = Listener(**stored)
    return listener if still_authorized(listener) else None


# --- what a (re)connecting client is owed -------------------------------------------------------


@dataclass(frozen=True)
class Subscription:
    """All of a tenant's jobs, or one of them."""

    tenant_id: str
    job_id: str | None = None

    @property
    def group(self) -> str:
        return job_group(self.job_id) if self.job_id else tenant_group(self.tenant_id)

    def covers(self, notice: JobNotice) -> bool:
        return notice.tenant_id == self.tenant_id and (self.job_id is None or notice.job_id == self.job_id)


@dataclass(frozen=True)
class CatchUp:
    """What a subscriber gets before live notices: the events after its cursor ("replay"), or
    the current state of its jobs ("snapshot", when the cursor is missing, too old, or
    unknown). ``cursor`` is where the client resumes from afterwards."""

    mode: Literal["replay", "snapshot"]
    notices: list[JobNotice]
    cursor: int
    truncated: bool = False


def subscription_for(listener: Listener, job_id: str | None) -> Subscription | None:
    """None when ``job_id`` is not a job of the listener's tenant (as if it did not exist)."""
    if job_id is None:
        return Subscription(tenant_id=listener.tenant_id)
    try:
        uuid.UUID(str(job_id))
    except ValueError:
        return None
    if not ExtractionJob.objects.filter(pk=job_id, tenant_id=listener.tenant_id).exists():
        return None
    return Subscription(tenant_id=listener.tenant_id, job_id=str(job_id))


def catch_up(subscription: Subscription, cursor: int | None, *, limit: int | None = None) -> CatchUp:
    """NTF-1 after a reconnect: a bounded replay from ``cursor``, else a snapshot.

    1. No cursor, or one beyond the newest event (forged, or from another database): snapshot.
    2. Read up to ``limit + 1`` events after the cursor; more than ``limit``: snapshot.
    3. Otherwise replay them in id order.

    The caller joins the live group *before* this, so nothing committed in between is missed
    (the overlap only duplicates). Accepted: ids are taken at insert, not commit, so an event
    can commit after a higher one was sent; the notifier's gap tracking still delivers it live.
    """
    limit = settings.NOTIFY_REPLAY_LIMIT if limit is None else limit
    newest = JobEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    if cursor is None or cursor > newest or cursor < 0:
        return _snapshot(subscription, newest)
    events = JobEvent.objects.filter(tenant_id=subscription.tenant_id, id__gt=cursor)
    if subscription.job_id:
        events = events.filter(job_id=uuid.UUID(subscription.job_id))
    rows = list(
        events.order_by("id").values_list("id", "job_id", "tenant_id", "state_version", "to_state")[: limit + 1]
    )
    if len(rows) > limit:
        return _snapshot(subscription, newest)
    notices = [_notice(row) for row in rows]
    return CatchUp(mode="replay", notices=notices, cursor=max([cursor, *(n.event_id for n in notices)]))


def _notice(row: tuple) -> JobNotice:
    event_id, job_id, tenant_id, state_version, state = row
    return JobNotice(
        event_id=event_id, job_id=str(job_id), tenant_id=str(tenant_id), state_version=state_version, state=state
    )


def _snapshot(subscription: Subscription, newest: int) -> CatchUp:
    """The current state of the subscription's most recent jobs (NOTIFY_SNAPSHOT_LIMIT), each
    with the id of the event that put it there. ``newest`` was read before the jobs: the
    cursor errs low."""
    limit = notify_setting("NOTIFY_SNAPSHOT_LIMIT")
    jobs = ExtractionJob.objects.filter(tenant_id=subscription.tenant_id)
    if subscription.job_id:
        jobs = jobs.filter(pk=subscription.job_id)
    # One probe of job_event_unique_version per job.
    current_event = JobEvent.objects.filter(job_id=OuterRef("pk"), state_version=OuterRef("state_version"))
    rows = list(
        jobs.annotate(event_id=Subquery(current_event.values("id")[:1]))
        .order_by("-created_at", "-id")
        .values_list("event_id", "id", "tenant_id", "state_version", "state")[: limit + 1]
    )
    notices = [
        JobNotice(
            event_id=event_id or 0,
            job_id=str(job_id),
            tenant_id=str(tenant_id),
            state_version=state_version,
            state=state,
            type=JOB_SNAPSHOT,
        )
        for event_id, job_id, tenant_id, state_version, state in rows[:limit]
    ]
    return CatchUp(mode="snapshot", notices=notices, cursor=newest, truncated=len(rows) > limit)


# --- the notifier process -----------------------------------------------------------------------

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

    def admit(self, event_id: int, now: float) -> bool:
        """True when ``event_id`` is news (to forward), False when it was forwarded already."""
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
            now = time.monotonic()
            fresh = [(_notice(row[:5]), row[5]) for row in rows if self.cursor.admit(row[0], now)]
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
            forwarded += len(fresh)
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
                    self._next_revocation_check = time.monotonic() + notify_setting("NOTIFY_REVOCATION_POLL_SECONDS")
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
