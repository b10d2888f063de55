"""The completion batcher: the slots of one llm-worker process complete their jobs together, many
in one statement (``lifecycle.complete_jobs``), by group commit (:mod:`.group_commit`): the
completions that queue while one batch is written go out in the next. The slot that asked has
its own row's verdict before it logs, counts or ends its span.

What cannot go wrong in a batch:
- each row keeps its own guard (fence, live lease, the policy revision it was judged with) and its
  own verdict (won, stale, or judged with an outdated policy);
- a failed batch is never dropped: a lost connection or a deadlock is retried whole; a batch one
  of whose rows the database refuses is split until the refused row is alone, and only its slot
  sees the error;
- a crash before the write leaves the jobs RUNNING under their leases: the reaper retries them
  (the model calls stay within the attempts: the paid call is in the ledger as running);
- a graceful stop drains: the slots wait for their verdicts, and Celery waits for the slots.
"""

from __future__ import annotations

import logging
import time

from django.db import InterfaceError, OperationalError

from extraction.execution import lifecycle
from extraction.execution.faults import fault_point
from extraction.execution.group_commit import Pending, ProcessBatcher, settle_splitting
from extraction.execution.lifecycle import Completion
from extraction.execution.outcomes import CompletionVerdict
from extraction.execution.runtime import db_step

logger = logging.getLogger("extraction.worker")

# Lost connections and deadlocks are retried whole after these pauses; then each slot gets the
# error (the slot logs it and the lease runs out: the reaper retries the job).
RETRY_PAUSES_SECONDS = (0.05, 0.25, 1.0)

PendingCompletion = Pending[Completion, CompletionVerdict]


def write_batch(batch: list[PendingCompletion]) -> None:
    """Write ``batch`` and settle every completion in it, each with its verdict or an error."""
    fault_point("completions_before_write")
    settle_splitting(batch, _write_retrying, logger=logger, what="completions")


def _write_retrying(completions: list[Completion]) -> list[CompletionVerdict]:
    """``complete_jobs``, retried whole after a lost connection or a deadlock (a slot does not
    retry a completion itself: after these, its lease runs out and the reaper retries the job)."""
    for pause in (*RETRY_PAUSES_SECONDS, None):
        try:
            with db_step():
                return lifecycle.complete_jobs(completions)
        except (OperationalError, InterfaceError) as exc:
            # The transaction rolled back: nothing is written.
            if pause is None:
                raise
            logger.warning(
                "a batch of completions failed: retrying it",
                extra={"batch": len(completions), "error": str(exc)[:500], "retry_in_seconds": pause},
            )
            time.sleep(pause)
    raise AssertionError("unreachable")


# This process's completion batcher: ``batcher().submit(completion)`` is the verdict.
batcher: ProcessBatcher[Completion, CompletionVerdict] = ProcessBatcher(
    write_batch, size_setting="WORKER_COMPLETION_BATCH"
)
