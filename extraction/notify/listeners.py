"""Live "job changed" notices (NTF-1, NTF-2): who may listen and what a reconnecting client is
owed. The notifier process that turns committed ``job_events`` rows into notices is
:mod:`extraction.notify.notifier`.

A notice is a hint, never the record: it tells a client to re-read the job's status URL. The
channel layer is at-most-once, so the event log is the authority (``job_events.id`` is the
client's reconnect cursor) and notices may repeat: clients keep the highest ``state_version``.
Authorization is re-checked while a listener stays connected (:func:`still_authorized`), pushed
on revocation, and checked for every notice sent (:meth:`Listener.may_see`).
"""

from __future__ import annotations

import logging
import secrets
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.base import SessionBase
from django.core.cache import cache
from django.db.models import OuterRef, Subquery

from accounts.models import ApiToken, Membership, hash_token
from extraction.models import ExtractionJob, JobEvent

logger = logging.getLogger("extraction.notify")

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

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> JobNotice:
        """From a ``job_events`` row read as (id, job_id, tenant_id, state_version, to_state)."""
        event_id, job_id, tenant_id, state_version, state = row
        return cls(
            event_id=event_id, job_id=str(job_id), tenant_id=str(tenant_id), state_version=state_version, state=state
        )

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
    cache.set(TICKET_PREFIX + hash_token(raw), asdict(listener), timeout=settings.NOTIFY_TICKET_SECONDS)
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


@dataclass
class MissedNoticeSweep:
    """What a stream has sent, for its periodic re-read of the event log (the backstop for
    notices the channel layer lost). Only the database moves where a re-read starts, never a
    live notice: a Redis failover can drop a notice while a later, higher one gets through.
    Each re-read starts one round back, so an event whose id was taken before a round's read
    but committed after it is still found; ``sent`` keeps those rounds from repeating frames."""

    start: int
    next_start: int
    sent: set[int] = field(default_factory=set)

    @classmethod
    def after(cls, caught_up: CatchUp) -> MissedNoticeSweep:
        return cls(start=caught_up.cursor, next_start=caught_up.cursor, sent={n.event_id for n in caught_up.notices})

    def unsent(self, notices: list[JobNotice]) -> list[JobNotice]:
        return [n for n in notices if n.event_id not in self.sent]

    def mark_sent(self, event_id: int) -> None:
        if event_id > self.start:
            self.sent.add(event_id)

    def advance(self, read_up_to: int) -> None:
        self.start, self.next_start = self.next_start, max(self.next_start, read_up_to)
        self.sent = {event_id for event_id in self.sent if event_id > self.start}


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
    notices = [JobNotice.from_row(row) for row in rows]
    return CatchUp(mode="replay", notices=notices, cursor=max([cursor, *(n.event_id for n in notices)]))


def _snapshot(subscription: Subscription, newest: int) -> CatchUp:
    """The current state of the subscription's most recent jobs (NOTIFY_SNAPSHOT_LIMIT), each
    with the id of the event that put it there. ``newest`` was read before the jobs: the
    cursor errs low."""
    limit = settings.NOTIFY_SNAPSHOT_LIMIT
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
