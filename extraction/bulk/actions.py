"""Operators' bulk actions: re-run extraction, or cancel jobs, for every job of a tenant that a
filter matches — and the audit of every such action, also for the webhook redelivery that
delivery runs (:func:`record_action`).

An action is recorded before it touches anything (``operator_actions``, status ``running``),
then works through its matches in short batches: each batch locks its jobs in id order, makes
each one's guarded move (the state machine's ``cancel_job`` / ``rerun_job``), records what
became of each job (``operator_action_targets``) and commits. A crash between batches leaves
an action that says what it set out to do and which jobs it had reached. Wake-ups for re-run
jobs go out after the last COMMIT: they are hints, the scheduler covers a lost one.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import Count

from config.sql import load_statements
from extraction.execution import lifecycle
from extraction.models import OperatorAction, OperatorActionKind, OperatorActionTarget

logger = logging.getLogger(__name__)

SQL = load_statements(Path(__file__).with_suffix(".sql"))

CHANGED = "changed"
WOULD_CHANGE = "would_change"  # a dry run's verdict
STATE_MOVED = "state_moved"  # another actor moved the job between the match and the lock
OVER_ADMISSION_BUDGET = "over_admission_budget"  # a re-run the tenant's limits have no room for

# Jobs locked per transaction: long enough to amortise the round trips, short enough that a
# worker's completion waiting on a locked row waits milliseconds.
BATCH_SIZE = 100


class TooManyMatches(Exception):
    """The filter matches more objects than one action may touch."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"The filter matches more than {limit} objects; narrow it (a time range, a state, a reason).")
        self.limit = limit


@dataclass(frozen=True)
class Actor:
    """Who ran an action and through which door (``api``, ``admin`` or ``cli``)."""

    name: str
    channel: str


@dataclass(frozen=True)
class JobFilter:
    """Which of a tenant's jobs an action is for. Empty members match anything; ``states``
    is narrowed to the states the action applies to."""

    states: tuple[str, ...] = ()
    created_since: datetime | None = None
    created_until: datetime | None = None
    reason: str | None = None
    policy_version: str | None = None
    job_ids: tuple[uuid.UUID, ...] = field(default=())

    def given(self) -> dict[str, Any]:
        """The members the operator gave (the audit's record of the filter)."""
        return {key: value for key, value in asdict(self).items() if value not in (None, ())}


@dataclass(frozen=True)
class ActionReport:
    action_id: uuid.UUID
    kind: str
    dry_run: bool
    matched: int
    outcomes: dict[str, int]


def max_objects() -> int:
    return int(settings.OPERATOR_ACTION_MAX_OBJECTS)


def matching_job_ids(*, tenant_id: uuid.UUID, job_filter: JobFilter, states: Sequence[str]) -> list[uuid.UUID]:
    """The tenant's jobs in ``states`` (narrowed by the filter's own) that the filter matches.
    Raises :class:`TooManyMatches` past ``OPERATOR_ACTION_MAX_OBJECTS``."""
    wanted = [s for s in states if not job_filter.states or s in job_filter.states]
    if not wanted:
        return []
    limit = max_objects()
    params: dict[str, Any] = {
        "tenant": tenant_id,
        "states": wanted,
        "since": job_filter.created_since,
        "until": job_filter.created_until,
        "reason": job_filter.reason,
        "policy_version": job_filter.policy_version,
        "ids": list(job_filter.job_ids) or None,
        "limit": limit + 1,
    }
    with connection.cursor() as cursor:
        cursor.execute(SQL["matching_jobs"], params)
        ids = [row[0] for row in cursor.fetchall()]
    if len(ids) > limit:
        raise TooManyMatches(limit)
    return ids


def cancel_jobs(*, tenant_id: uuid.UUID, job_filter: JobFilter, actor: Actor, dry_run: bool = False) -> ActionReport:
    """Cancel the tenant's waiting and RUNNING jobs the filter matches (FAILED_TERMINAL,
    error_class ``cancelled``, a dead-letter event each)."""
    return _run_job_action(
        kind=OperatorActionKind.CANCEL_JOBS,
        states=lifecycle.CANCELLABLE_STATES,
        move=lifecycle.cancel_locked_job,
        refused=STATE_MOVED,
        tenant_id=tenant_id,
        job_filter=job_filter,
        actor=actor,
        dry_run=dry_run,
    )


def rerun_jobs(*, tenant_id: uuid.UUID, job_filter: JobFilter, actor: Actor, dry_run: bool = False) -> ActionReport:
    """Run extraction again for the tenant's failed and review-waiting jobs the filter
    matches: new attempts, claimed under the shared capacity budget like any other job, and
    charged to the tenant's admission limits (a job they have no room for stays as it was)."""
    report = _run_job_action(
        kind=OperatorActionKind.RERUN_EXTRACTION,
        states=lifecycle.RERUNNABLE_STATES,
        move=lifecycle.rerun_locked_job,
        refused=OVER_ADMISSION_BUDGET,
        tenant_id=tenant_id,
        job_filter=job_filter,
        actor=actor,
        dry_run=dry_run,
    )
    if report.outcomes.get(CHANGED):
        from extraction.execution.tasks import wake_workers

        wake_workers(report.outcomes[CHANGED])
    return report


def _run_job_action(
    *,
    kind: str,
    states: Sequence[str],
    move: Callable[..., lifecycle.Moved | None],
    refused: str,
    tenant_id: uuid.UUID,
    job_filter: JobFilter,
    actor: Actor,
    dry_run: bool,
) -> ActionReport:
    ids = matching_job_ids(tenant_id=tenant_id, job_filter=job_filter, states=states)
    action_id = start_action(
        tenant_id=tenant_id, kind=kind, actor=actor, given_filter=job_filter.given(), dry_run=dry_run, matched=len(ids)
    )
    for start in range(0, len(ids), BATCH_SIZE):
        batch = ids[start : start + BATCH_SIZE]
        with transaction.atomic(), connection.cursor() as cursor:
            verdicts: list[tuple[uuid.UUID, str, str]] = []
            locked = lifecycle.lock_jobs_for_operator(cursor, tenant_id=tenant_id, job_ids=batch)
            for job in locked:
                if job.state not in states:
                    verdicts.append((job.job_id, STATE_MOVED, job.state))
                elif dry_run:
                    verdicts.append((job.job_id, WOULD_CHANGE, job.state))
                else:
                    moved = move(cursor, job, action_id=action_id)
                    verdicts.append((job.job_id, CHANGED if moved is not None else refused, job.state))
            _record_targets(cursor, action_id, verdicts)
    report = finish_action(action_id)
    logger.info(
        "operator action",
        extra={
            "operator_action": str(action_id),
            "kind": kind,
            "actor": actor.name,
            "channel": actor.channel,
            "dry_run": dry_run,
            "matched": report.matched,
            "outcomes": report.outcomes,
        },
    )
    return report


def start_action(
    *, tenant_id: uuid.UUID | None, kind: str, actor: Actor, given_filter: dict[str, Any], dry_run: bool, matched: int
) -> uuid.UUID:
    """The audit row of an action about to run (committed at once, before anything moves)."""
    action_id = uuid.uuid4()
    with connection.cursor() as cursor:
        cursor.execute(
            SQL["start_action"],
            {
                "id": action_id,
                "tenant": tenant_id,
                "kind": kind,
                "actor": actor.name[:200],
                "channel": actor.channel,
                "filter": json.dumps(given_filter, default=str),
                "dry_run": dry_run,
                "matched": matched,
            },
        )
    return action_id


def _record_targets(
    cursor: CursorWrapper, action_id: uuid.UUID, verdicts: Iterable[tuple[uuid.UUID, str, str]]
) -> None:
    rows = list(verdicts)
    if rows:
        cursor.execute(
            SQL["record_targets"],
            {
                "action": action_id,
                "objects": [row[0] for row in rows],
                "outcomes": [row[1] for row in rows],
                "from_states": [row[2] for row in rows],
            },
        )


def finish_action(action_id: uuid.UUID) -> ActionReport:
    """Close the action (its ``changed`` total counted from its targets) and report it."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(SQL["finish_action"], {"action": action_id})
    outcomes = action_outcomes(action_id)
    action = OperatorAction.objects.get(pk=action_id)
    return ActionReport(
        action_id=action_id, kind=action.kind, dry_run=action.dry_run, matched=action.matched, outcomes=outcomes
    )


def action_outcomes(action_id: uuid.UUID) -> dict[str, int]:
    """How many of an action's targets came to each outcome."""
    counts = OperatorActionTarget.objects.filter(action_id=action_id).values("outcome").annotate(count=Count("id"))
    return {row["outcome"]: row["count"] for row in counts.order_by("outcome")}


def action_object_ids(action_id: uuid.UUID, *, outcome: str = CHANGED) -> list[uuid.UUID]:
    """The objects that came to ``outcome`` in an action (a redelivery's deliveries, to hint
    the workers about)."""
    targets = OperatorActionTarget.objects.filter(action_id=action_id, outcome=outcome)
    return list(targets.order_by("object_id").values_list("object_id", flat=True))


def record_action(
    *,
    tenant_id: uuid.UUID | None,
    kind: str,
    actor: Actor,
    action_filter: dict[str, Any],
    dry_run: bool,
    run: Callable[[], Sequence[uuid.UUID]],
) -> ActionReport:
    """Audit an action another app runs in one statement of its own (delivery's redelivery):
    the action row first, then ``run()``, whose returned ids are the objects it changed (or,
    in a dry run, would change)."""
    action_id = start_action(
        tenant_id=tenant_id, kind=kind, actor=actor, given_filter=action_filter, dry_run=dry_run, matched=0
    )
    ids = list(run())
    outcome = WOULD_CHANGE if dry_run else CHANGED
    with transaction.atomic(), connection.cursor() as cursor:
        _record_targets(cursor, action_id, [(object_id, outcome, "") for object_id in ids])
        OperatorAction.objects.filter(pk=action_id).update(matched=len(ids))
    return finish_action(action_id)
