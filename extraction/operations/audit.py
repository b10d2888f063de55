"""The self-audit (OPS-6): the service checks its own invariants, repairs what a guarded
statement can repair, and raises an alarm for the rest. ``manage.py audit [--repair]`` runs it
by hand; the scheduler runs it with repairs at most every ``AUDIT_INTERVAL_SECONDS``
(``audit_sweep`` in SCHEDULER_APP_SWEEPS).

The checks are ``settings.AUDIT_CHECKS``, each a callable ``check(*, repair, broker) ->
Finding`` (delivery registers its own there):

- ``outbox_unpublished``: outbox events unpublished past ``AUDIT_OUTBOX_LAG_SECONDS``, the
  accepted jobs' requested events among them (OUT-2). Repair: a relay claim still holding them
  is released and the relay woken, so the relay takes them again; events nobody holds and the
  relay still has not published are an alarm (the relay is down, or failing: ``last_error``).
- ``running_without_live_lease``: RUNNING jobs whose lease has passed (EXE-5). Repair: the
  reaper's own guarded transition (``lifecycle.reap_expired_leases``).
- ``leaked_limiter_permits``: in-flight permits of the shared limiter held for attempts that
  are no longer running (BP-2): their holder's job is not RUNNING under that fence with a live
  lease. Repair: ``limiter.release_held_permits``; a permit that names no holder is left to its
  TTL.
- ``deliveries_overdue`` (delivery): sendable deliveries past their due time. Alarm, and the
  delivery sweep woken.
- ``reviews_past_slo``: REVIEW_REQUIRED jobs waiting longer than
  ``REVIEW_TURNAROUND_TARGET_SECONDS`` (OPS-4's review SLO). Alarm only: a person decides.

Each check counts at most ``AUDIT_LIMIT`` rows and names at most ``AUDIT_EXAMPLES`` ids. Every
finding (a check that found something) is one JSON log line on the ``extraction.audit`` logger
(``finding``, ``count``, ``examples``, ``action``, ``acted_on``, ``detail``): ERROR for an
alarm, WARNING otherwise.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings
from django.db import connection
from django.db.models.functions import Now
from django.utils.module_loading import import_string
from kombu import Connection

from config.sql import load_statements
from extraction.capacity import limiter
from extraction.execution import lifecycle
from extraction.models import OutboxEvent

SQL = load_statements(Path(__file__).with_suffix(".sql"))
logger = logging.getLogger("extraction.audit")


class Action(str, Enum):
    """What the audit did about a finding."""

    NONE = "none"  # nothing found
    REPORTED = "reported"  # found; repairs were not asked for
    REPAIRED = "repaired"  # every row found was repaired
    ALARMED = "alarmed"  # left for a person (an alarm-only check, or rows the repair could not reach)
    UNCHECKED = "unchecked"  # the check could not look (Redis unreachable)


@dataclass(frozen=True)
class Finding:
    kind: str
    count: int  # rows in the condition (at most AUDIT_LIMIT)
    examples: tuple[str, ...]  # ids, at most AUDIT_EXAMPLES
    action: Action
    acted_on: int = 0  # rows the repair's guarded statement moved (or woke)
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "count": self.count,
            "examples": list(self.examples),
            "action": self.action.value,
            "acted_on": self.acted_on,
            "detail": self.detail,
        }


class AuditCheck(Protocol):
    def __call__(self, *, repair: bool, broker: Connection | None = None) -> Finding: ...


def audit_checks() -> tuple[AuditCheck, ...]:
    return tuple(import_string(path) for path in settings.AUDIT_CHECKS)


def run_audit(*, repair: bool, broker: Connection | None = None) -> list[Finding]:
    """Run every check of AUDIT_CHECKS in order, repairing if ``repair``; log each finding."""
    findings = [check(repair=repair, broker=broker) for check in audit_checks()]
    for finding in findings:
        if finding.action is Action.NONE:
            continue
        level = logging.ERROR if finding.action is Action.ALARMED else logging.WARNING
        entry = finding.as_dict()
        logger.log(level, "audit finding", extra={"finding": entry.pop("kind"), **entry})
    return findings


def _examples(ids: list[Any]) -> tuple[str, ...]:
    return tuple(str(i) for i in ids[: settings.AUDIT_EXAMPLES])


def _settled(kind: str, ids: list[Any], repaired: int, detail: str) -> Finding:
    """A repairable finding after its repair: repaired if the guarded statement reached every row."""
    action = Action.REPAIRED if repaired >= len(ids) else Action.ALARMED
    return Finding(kind, len(ids), _examples(ids), action, acted_on=repaired, detail=detail)


# --- the checks ----------------------------------------------------------------------------------


def unpublished_outbox_events(*, repair: bool, broker: Connection | None = None) -> Finding:  # noqa: ARG001 - AuditCheck's signature
    """Outbox events the relay has not published within the lag bound.

    1. Find them, oldest first (outbox_unpublished_idx).
    2. With ``repair``: release the claims still held on them (guarded: unpublished and still
       claimed; the row count is what was released) and NOTIFY the relay.
    3. Those no claim held are claimable already and still unpublished: an alarm, with the
       relay's last error.
    """
    kind = "outbox_unpublished"
    lag = settings.AUDIT_OUTBOX_LAG_SECONDS
    with connection.cursor() as cursor:
        cursor.execute(SQL["unpublished_outbox_events"], {"lag": lag, "limit": settings.AUDIT_LIMIT})
        rows = cursor.fetchall()
    if not rows:
        return Finding(kind, 0, (), Action.NONE)
    ids = [event_id for event_id, _, _ in rows]
    claimed = [event_id for event_id, held, _ in rows if held]
    errors = sorted({error[:200] for _, _, error in rows if error})
    detail = f"unpublished more than {lag:g} s after commit; {len(claimed)} held by a relay's claim"
    if errors:
        detail += f"; last errors: {' | '.join(errors[:3])}"
    if not repair:
        return Finding(kind, len(ids), _examples(ids), Action.REPORTED, detail=detail)
    with connection.cursor() as cursor:
        released = 0
        if claimed:
            still_claimed = OutboxEvent.objects.filter(
                pk__in=claimed, published_at__isnull=True, claimed_until__gt=Now()
            )
            released = still_claimed.update(claimed_until=None)
        cursor.execute(SQL["wake_outbox_relay"])
    return _settled(kind, ids, released, f"{detail}; released {released} claims and woke the relay")


def running_without_live_lease(*, repair: bool, broker: Connection | None = None) -> Finding:  # noqa: ARG001 - AuditCheck's signature
    """RUNNING jobs whose lease has passed. Repair: the reaper's guarded transition (fence+1,
    retry or terminal); its count is what it reaped, this one or any other expired lease."""
    kind = "running_without_live_lease"
    with connection.cursor() as cursor:
        cursor.execute(SQL["running_without_live_lease"], {"limit": settings.AUDIT_LIMIT})
        ids = [row[0] for row in cursor.fetchall()]
    if not ids:
        return Finding(kind, 0, (), Action.NONE)
    detail = "RUNNING with an expired lease: the worker is gone or cut off"
    if not repair:
        return Finding(kind, len(ids), _examples(ids), Action.REPORTED, detail=detail)
    reaped = lifecycle.reap_expired_leases(limit=settings.AUDIT_LIMIT)
    return _settled(kind, ids, reaped, f"{detail}; the reaper moved {reaped}")


def _holder_key(holder: str) -> tuple[uuid.UUID, int] | None:
    job, _, fence = holder.rpartition(":")
    try:
        return uuid.UUID(job), int(fence)
    except ValueError:
        return None


def leaked_limiter_permits(*, repair: bool, broker: Connection | None = None) -> Finding:  # noqa: ARG001 - AuditCheck's signature
    """In-flight permits whose attempt is no longer running, pool by pool.

    1. Read each counted pool's unexpired permits with their holders (job:fence).
    2. Ask PostgreSQL which holders are still RUNNING under that fence with a live lease.
    3. The rest are leaked; with ``repair`` the limiter gives them back (the count is what the
       pool really had). Permits naming no holder are left to their TTL.
    """
    kind = "leaked_limiter_permits"
    pools = sorted({policy["provider_pool"] for policy in settings.MODEL_POLICIES.values()})
    leaked: list[tuple[str, limiter.HeldPermit]] = []
    unreachable: list[str] = []
    unattributed = 0
    for pool in pools:
        if limiter.pool_limits(pool).budget == limiter.UNLIMITED:
            continue  # nothing is counted, nothing can leak
        held = limiter.held_permits(pool)
        if held is None:
            unreachable.append(pool)
            continue
        holders = {p.member: key for p in held if (key := _holder_key(p.holder)) is not None}
        unattributed += len(held) - len(holders)
        with connection.cursor() as cursor:
            cursor.execute(
                SQL["live_permit_holders"],
                {"jobs": [job for job, _ in holders.values()], "fences": [fence for _, fence in holders.values()]},
            )
            live = {(job, int(fence)) for job, fence in cursor.fetchall()}
        leaked += [(pool, p) for p in held if p.member in holders and holders[p.member] not in live]
    leaked = leaked[: settings.AUDIT_LIMIT]
    notes = []
    if unattributed:
        notes.append(f"{unattributed} permits name no holder (their TTL returns them)")
    if unreachable:
        notes.append(f"Redis unreachable for pool {', '.join(unreachable)}: not checked")
    if not leaked:
        action = Action.UNCHECKED if unreachable else Action.NONE
        return Finding(kind, 0, (), action, detail="; ".join(notes))
    detail = "; ".join(["held for attempts no longer running", *notes])
    holders_found = [permit.holder for _, permit in leaked]
    if not repair:
        return Finding(kind, len(leaked), _examples(holders_found), Action.REPORTED, detail=detail)
    released = sum(
        limiter.release_held_permits(pool, [permit.member for p, permit in leaked if p == pool])
        for pool in sorted({pool for pool, _ in leaked})
    )
    return _settled(kind, holders_found, released, f"{detail}; released {released}")


def reviews_past_their_slo(*, repair: bool, broker: Connection | None = None) -> Finding:  # noqa: ARG001 - AuditCheck's signature
    """REVIEW_REQUIRED jobs older than the review turnaround target: an alarm, whatever
    ``repair`` says; only a reviewer can move them."""
    kind = "reviews_past_slo"
    target = settings.REVIEW_TURNAROUND_TARGET_SECONDS
    with connection.cursor() as cursor:
        cursor.execute(SQL["reviews_past_their_slo"], {"target": target, "limit": settings.AUDIT_LIMIT})
        ids = [row[0] for row in cursor.fetchall()]
    if not ids:
        return Finding(kind, 0, (), Action.NONE)
    return Finding(
        kind, len(ids), _examples(ids), Action.ALARMED, detail=f"waiting for a reviewer longer than {target:g} s"
    )


# --- the scheduler's sweep ---------------------------------------------------------------------------


class PeriodicAudit:
    """The scheduler's audit sweep: :func:`run_audit` with repairs, at most every
    AUDIT_INTERVAL_SECONDS in this process, so the scheduler's every-second tick stays cheap
    (each check is bounded by AUDIT_LIMIT). Two schedulers audit twice as often; every repair
    is guarded, so that is harmless."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_run: float | None = None

    def __call__(self, broker: Connection) -> list[Finding] | None:
        """The findings, or None when the last audit was less than the interval ago."""
        with self._lock:
            now = time.monotonic()
            if self._last_run is not None and now - self._last_run < settings.AUDIT_INTERVAL_SECONDS:
                return None
            self._last_run = now
        return run_audit(repair=True, broker=broker)


audit_sweep = PeriodicAudit()
