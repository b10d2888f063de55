"""Publishing an outbox row right after the COMMIT that wrote it, with the relay as the fallback.

The accepting process writes the job's ``extraction.requested.v1`` row claimed for
OUTBOX_AFTER_COMMIT_CLAIM_SECONDS (``extraction_append_outbox_event``'s ``p_claimed_for_seconds``;
such a row wakes no relay), and once its transaction has committed hands the row to this
process's publisher thread, which publishes what has queued in one batch with confirms
(``OutboxRelay.publish_batch``) and marks what the broker took published, in one statement. The
job no longer waits for a relay to be woken, claim the row and publish it: one hop less between
acceptance and a worker (#25).

Nothing here is needed for correctness. A row this process does not publish — the queue full,
the broker away or refusing, a crash or SIGTERM before the batch went out — stays unpublished,
and the relay takes it when its claim lapses (OUT-2). A row published here whose mark is lost
is published again by the relay; consumers deduplicate by event id (BRK-3). The request that
accepted the job never waits for the broker.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

from django.conf import settings
from django.db import connection

from extraction.outbox.relay import OutboxRelay, OutboxRow, mark_published

logger = logging.getLogger(__name__)

# Rows waiting for the publisher thread; past this many the accepts leave theirs to the relay.
QUEUE_LIMIT = 10_000
BATCH_LIMIT = 200
# After a broker error, rows are left to the relay for this long before the next connection.
OUTAGE_PAUSE_SECONDS = 5.0


def claim_seconds() -> float | None:
    """How long an accept claims its requested event for this process's publisher; None when
    the relay publishes it (publishing after commit is off, or the events go to Kafka)."""
    if not settings.OUTBOX_PUBLISH_AFTER_COMMIT or settings.EVENT_TRANSPORT != "rabbitmq":
        return None
    return float(settings.OUTBOX_AFTER_COMMIT_CLAIM_SECONDS)


class AfterCommitPublisher:
    """One per process: a daemon thread that publishes the rows handed to :meth:`submit`."""

    def __init__(self, *, broker_url: str | None = None, confirm_timeout: float = 2.0) -> None:
        self._broker_url = broker_url
        self._confirm_timeout = confirm_timeout
        self._rows: queue.Queue[OutboxRow | None] = queue.Queue(maxsize=QUEUE_LIMIT)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._paused_until = 0.0
        self.published = 0  # rows this process published and marked (for tests and logs)

    def submit(self, row: OutboxRow) -> None:
        """Publish ``row`` soon, from the publisher thread; never blocks, never raises."""
        if time.monotonic() < self._paused_until:
            return  # the broker was away a moment ago: the relay takes it when the claim lapses
        try:
            self._rows.put_nowait(row)
        except queue.Full:
            return
        self._ensure_thread()

    def stop(self, timeout: float = 10.0) -> None:
        """Publish what is queued, then end the thread (its broker and database connections)."""
        thread = self._thread
        if thread is not None and thread.is_alive():
            self._rows.put(None)
            thread.join(timeout)

    def _ensure_thread(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="outbox-after-commit", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        relay = OutboxRelay(broker_url=self._broker_url, confirm_timeout=self._confirm_timeout)
        try:
            while (first := self._rows.get()) is not None:
                batch = [first]
                while len(batch) < BATCH_LIMIT:
                    try:
                        row = self._rows.get_nowait()
                    except queue.Empty:
                        break
                    if row is None:
                        self._publish(relay, batch)
                        return
                    batch.append(row)
                self._publish(relay, batch)
        finally:
            relay.close()
            connection.close()

    def _publish(self, relay: OutboxRelay, batch: list[OutboxRow]) -> None:
        try:
            published, refused = relay.publish_batch(batch)
        except Exception as exc:  # noqa: BLE001 - any broker failure: the relay has the rows
            self._paused_until = time.monotonic() + OUTAGE_PAUSE_SECONDS
            logger.warning(
                "publishing after commit failed; the relay publishes these when their claim lapses",
                extra={"rows": len(batch), "error": f"{type(exc).__name__}: {exc}"[:300]},
            )
            return
        if refused:
            logger.info(
                "the broker refused outbox events published after commit; left to the relay",
                extra={"rows": len(refused)},
            )
        try:
            mark_published(published)
        except Exception as exc:  # noqa: BLE001 - the relay publishes them again; consumers dedupe
            logger.warning(
                "published after commit but not marked; the relay publishes them again",
                extra={"rows": len(published), "error": f"{type(exc).__name__}: {exc}"[:300]},
            )
            connection.close()
            return
        self.published += len(published)


_publisher = AfterCommitPublisher()


def publisher() -> AfterCommitPublisher:
    """This process's publisher."""
    return _publisher
