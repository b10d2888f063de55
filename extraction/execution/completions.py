"""The completion batcher: the slots of one llm-worker process complete their jobs together, many
in one statement (``lifecycle.complete_jobs``), instead of one transaction each.

At a backlog the bound is the number of commits, not the work in them: every completion took the
NOTIFY queue's commit lock and updated its tenant's usage row, and the slots queued on both. So
the completions that arrive while one batch is being written go out together in the next: group
commit, with no timer. A slot alone (low load) writes its own completion at once, in one
autocommit statement, as before; under load a batch is as large as what queued meanwhile.

There is no thread of its own. A slot that completes appends its completion and, if no batch is
being written, writes the queue (it leads); otherwise it waits, and either its verdict comes or
it leads the next batch. So the slot that asked always has its own row's verdict before it logs,
counts or ends its span, and a test on one thread writes on its own connection.

What cannot go wrong in a batch:
- each row keeps its own guard (fence and live lease) and its own verdict (stale or won);
- a failed batch is never dropped: a lost connection or a deadlock is retried whole; a batch one
  of whose rows the database refuses is split until the refused row is alone, and only its slot
  sees the error;
- a crash before the write leaves the jobs RUNNING under their leases: the reaper retries them
  (the model calls stay within the attempts: the paid call is in the ledger as running);
- a graceful stop drains: the slots wait for their verdicts, and Celery waits for the slots.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError

from extraction.execution import lifecycle
from extraction.execution.faults import fault_point
from extraction.execution.lifecycle import Completion
from extraction.execution.runtime import db_step

logger = logging.getLogger("extraction.worker")

# Lost connections and deadlocks are retried whole after these pauses; then each slot gets the
# error (the slot logs it and the lease runs out: the reaper retries the job).
RETRY_PAUSES_SECONDS = (0.05, 0.25, 1.0)


@dataclass
class _Pending:
    completion: Completion
    settled: bool = False
    won: bool = False
    error: BaseException | None = None


@dataclass
class CompletionBatcher:
    """One per process (:func:`batcher`). ``max_batch``: the most completions in one statement."""

    max_batch: int
    _queue: list[_Pending] = field(default_factory=list)
    _writing: bool = False
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def complete(self, completion: Completion) -> bool:
        """Complete one job with whatever else is waiting; True if it won, False if stale.
        Raises the database's error if its row could not be written."""
        pending = _Pending(completion)
        with self._changed:
            self._queue.append(pending)
            while not pending.settled:
                if self._writing:
                    self._changed.wait()
                    continue
                self._writing = True
                batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
                self._changed.release()
                try:
                    write_batch(batch)
                finally:
                    self._changed.acquire()
                    self._writing = False
                    self._changed.notify_all()
        if pending.error is not None:
            raise pending.error
        return pending.won

    def waiting(self) -> int:
        with self._changed:
            return len(self._queue)


def write_batch(batch: list[_Pending]) -> None:
    """Write ``batch`` and settle every completion in it, each with its verdict or an error."""
    fault_point("completions_before_write")
    try:
        verdicts = _write_retrying(batch)
    except (OperationalError, InterfaceError) as exc:
        _settle_with_error(batch, exc)
    except DatabaseError as exc:
        if len(batch) == 1:
            _settle_with_error(batch, exc)
            return
        # A row the database refuses (bad data): split, so only that row's slot gets the error.
        logger.warning(
            "a batch of completions was refused: writing it in halves",
            extra={"batch": len(batch), "error": str(exc)[:500]},
        )
        middle = len(batch) // 2
        write_batch(batch[:middle])
        write_batch(batch[middle:])
    except BaseException as exc:  # noqa: BLE001 - a bug: every slot of the batch hears of it, none waits forever
        _settle_with_error(batch, exc)
    else:
        for pending, won in zip(batch, verdicts, strict=True):
            pending.won, pending.settled = won, True


def _write_retrying(batch: list[_Pending]) -> list[bool]:
    completions = [pending.completion for pending in batch]
    for pause in (*RETRY_PAUSES_SECONDS, None):
        try:
            with db_step():
                return lifecycle.complete_jobs(completions)
        except (OperationalError, InterfaceError) as exc:
            # A lost connection or a deadlock: the transaction rolled back, nothing is written.
            if pause is None:
                raise
            logger.warning(
                "a batch of completions failed: retrying it",
                extra={"batch": len(batch), "error": str(exc)[:500], "retry_in_seconds": pause},
            )
            time.sleep(pause)
    raise AssertionError("unreachable")


def _settle_with_error(batch: list[_Pending], error: BaseException) -> None:
    for pending in batch:
        pending.error, pending.settled = error, True


_batcher: CompletionBatcher | None = None
_batcher_lock = threading.Lock()


def batcher() -> CompletionBatcher:
    """This process's batcher."""
    global _batcher
    with _batcher_lock:
        if _batcher is None:
            _batcher = CompletionBatcher(max_batch=settings.WORKER_COMPLETION_BATCH)
        return _batcher
