"""What a transition or an attempt ended in, as types rather than strings.

The attempt ledger's ``AttemptOutcome`` (extraction.models) says what one model call came to;
these say what the caller should do next, so a typo is a type error and a new ending is
seen by every caller that matches on them.
"""

from __future__ import annotations

from enum import StrEnum


class AttemptResult(StrEnum):
    """How a claimed attempt ended (``execute_attempt``, ``retry_or_fail``); the attempt span's
    ``extraction.attempt.result``."""

    COMPLETED = "completed"  # SUCCEEDED or REVIEW_REQUIRED written under the fence
    RETRY = "retry"  # RETRY_SCHEDULED: another attempt later
    FAILED = "failed"  # FAILED_TERMINAL with a dead-letter event
    DEFERRED = "deferred"  # handed back unspent: the pool had no capacity for it now
    INTERRUPTED = "interrupted"  # the worker's shutdown abandoned the call; handed back at once
    STALE = "stale"  # the job was no longer ours: nothing but the ledger row was written
    SPLIT = "split"  # SPLIT with a job per part: the document held several invoices


class CompletionVerdict(StrEnum):
    """What ``complete_jobs`` made of one completion; the statement's own words."""

    WON = "won"  # SUCCEEDED or REVIEW_REQUIRED written under the fence
    STALE = "stale"  # someone else's job now: only the ledger row's stale verdict was written
    # Judged with a revision of the tenant's validation policy that is no longer current:
    # nothing written, the job is still ours, judge it again with the policy as it is now.
    POLICY_CHANGED = "policy_changed"


class TakeIn(StrEnum):
    """What the ingress made of a requested event (``take_in_requested_event``)."""

    TAKEN_IN = "taken_in"  # ACCEPTED → READY now
    ALREADY_TAKEN_IN = "already_taken_in"  # a new inbox row, but the job had moved on (recovery)
    DUPLICATE = "duplicate"  # the same event again: nothing to do
    QUARANTINED = "quarantined"  # the same event id with another payload: kept aside, an error logged
    UNKNOWN_JOB = "unknown_job"  # no such job: poison
