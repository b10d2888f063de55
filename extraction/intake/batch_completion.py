"""A batch's completion: ``extraction.batch_completed.v1`` once every job of it is finished.

A periodic sweep of the scheduler (ACC-6, every ``BATCH_COMPLETION_SWEEP_SECONDS``), not a counter
kept by every transition: no terminal transition of the job state machine learns of batches,
and the event comes at most one sweep interval after the batch's last job finished.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

from config.sql import load_statements
from extraction.events import EventType

SQL = load_statements(Path(__file__).with_suffix(".sql"))

# Batches completed by one sweep pass; the rest wait for the next pass.
SWEEP_LIMIT = 100


def complete_finished_batches(*, limit: int = SWEEP_LIMIT) -> list[uuid.UUID]:
    """Complete the open batches whose every job (and every part of a split one) is finished,
    in one transaction; the ids of the batches completed now.

    1. Lock up to ``limit`` open batches with no unfinished job (FOR UPDATE SKIP LOCKED): a
       batch whose items were all refused is among them at once.
    2. For each, the guarded UPDATE of ``completed_at`` (only while null) and, in the same
       statement, its outbox event with the counts by state: no row, no event.
    3. COMMIT: the completions and their events together; the relay publishes them after.
    """
    completed: list[uuid.UUID] = []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(SQL["lock_finished_batches"], {"limit": limit})
        for (batch_id,) in cursor.fetchall():
            cursor.execute(
                SQL["complete_batch"],
                {"batch": batch_id, "event": uuid.uuid4(), "event_type": EventType.BATCH_COMPLETED.value},
            )
            if cursor.fetchone() is not None:
                completed.append(batch_id)
    return completed


class PeriodicBatchCompletion:
    """The scheduler's batch completion sweep: :func:`complete_finished_batches` at most every
    BATCH_COMPLETION_SWEEP_SECONDS in this process, so the scheduler's every-second tick does
    not scan the open batches each time. Two schedulers sweep twice as often; the guarded
    completion makes that harmless."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_run: float | None = None

    def __call__(self) -> list[uuid.UUID] | None:
        """The batches completed, or None when the last sweep was less than the interval ago."""
        with self._lock:
            now = time.monotonic()
            if self._last_run is not None and now - self._last_run < settings.BATCH_COMPLETION_SWEEP_SECONDS:
                return None
            self._last_run = now
        return complete_finished_batches()


batch_completion_sweep = PeriodicBatchCompletion()
