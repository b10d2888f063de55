"""The llm worker's dispatcher: one thread per process claims for the process's free slots in one
fair statement and hands each claimed job to a slot thread (``WORKER_WAKE_UPS=notify``, the
default).

Before it, every job cost a broker wake-up: the ingress published one, RabbitMQ routed and
delivered it, Celery decoded it and ran a slot that claimed one job, and Celery acked it. Now what
makes a job runnable notifies PostgreSQL's ``runnable_jobs`` channel in its own transaction (the
take-in statement; ``tasks.wake_workers`` for the scheduler and operator actions), and the
dispatcher claims ``min(free slots, the pools' headroom, WORKER_CLAIM_BATCH)`` jobs when

- a notification comes (delivered at COMMIT, so the claim sees the job),
- a slot frees while the last claim was full (more may be waiting: a backlog is served as fast as
  slots free, each freed slot's job claimed with the others that freed meanwhile),
- the poll comes round (``WORKER_DISPATCH_POLL_SECONDS``): a retry coming due, a job handed back
  or reaped, a notification lost while the LISTEN connection was down, a pool that had no room.

RabbitMQ (or Kafka) still carries every event; the llm queue and its Celery slots stay for
``WORKER_WAKE_UPS=broker`` (the scheduler's and the ingress's wake-ups, a fleet switched over one
process at a time: a notify-mode worker still runs a wake-up that reaches it).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery import bootsteps
from django.conf import settings

from config import probes
from config.backoff import full_jitter
from config.db import Notifications
from config.topology import LLM
from extraction.execution import lifecycle
from extraction.execution.lifecycle import Claim
from extraction.execution.outcomes import AttemptResult
from extraction.execution.runtime import DATABASE, WorkerRuntime, db_step, runtime
from extraction.execution.worker import policies_with_headroom, run_claimed

logger = logging.getLogger("extraction.worker")

# PostgreSQL's channel: the take-in statement (lifecycle.sql) and wake_workers notify on it.
RUNNABLE_JOBS_CHANNEL = "runnable_jobs"


class Dispatcher:
    """Claims for ``slots`` slot threads of one process; :meth:`start`, then :meth:`stop`."""

    def __init__(self, slots: int, rt: WorkerRuntime | None = None, *, poll_seconds: float | None = None) -> None:
        self.slots = slots
        self.rt = rt or runtime()
        self.poll_seconds = settings.WORKER_DISPATCH_POLL_SECONDS if poll_seconds is None else poll_seconds
        self._lock = threading.Lock()
        self._all_free = threading.Condition(self._lock)
        self._busy = 0
        # The last claim took all it asked for, or found no pool with room: more may be waiting,
        # so a slot that frees claims again at once instead of waiting for the poll.
        self._more_waiting = False
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._slots = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="llm-slot")
        self._threads: list[threading.Thread] = []

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        for target, name in ((self._dispatch_forever, "dispatcher"), (self._listen_forever, "dispatcher-listen")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        logger.info("dispatcher started", extra={"slots": self.slots, "worker_id": self.rt.worker_id})

    def stop(self, timeout: float) -> bool:
        """Claim nothing more and wait up to ``timeout`` for the slots' attempts to end (the
        runtime's shutdown hands back the model calls that would outlast its grace). True if
        every slot is free."""
        self._stopped.set()
        self._wake.set()
        deadline = time.monotonic() + timeout
        # The dispatcher thread first: a claim it has under way hands its jobs to slots before
        # the count of busy slots is read, and nothing is submitted after the pool shuts down.
        for thread in self._threads:
            thread.join(timeout=max(0.0, min(2.0, deadline - time.monotonic())))
        with self._all_free:
            while self._busy and (remaining := deadline - time.monotonic()) > 0:
                self._all_free.wait(remaining)
            drained = self._busy == 0
        self._slots.shutdown(wait=False)
        return drained

    def busy(self) -> int:
        with self._lock:
            return self._busy

    # -- claiming ------------------------------------------------------------------------------
    def dispatch_once(self, *, room_taken: int = 0) -> tuple[int, int]:
        """Claim for the free slots (at most the pools' headroom and ``WORKER_CLAIM_BATCH``) and
        start the jobs' attempts; returns (jobs claimed, jobs asked for). ``room_taken``: jobs
        claimed just before, whose permits the pools may not count yet."""
        with self._lock:
            free = self.slots - self._busy
        if free <= 0 or self._closing():
            return 0, 0
        policies, room = policies_with_headroom()
        if not policies:
            with self._lock:
                self._more_waiting = True  # a permit freed by one of our slots makes room
            return 0, 0
        # Never more than the pools could start now: a job claimed beyond that is handed back.
        count = min(free, settings.WORKER_CLAIM_BATCH, room - room_taken)
        if count <= 0:
            return 0, 0
        with db_step():
            claims = lifecycle.claim_next_jobs(worker_id=self.rt.worker_id, policies=policies, count=count)
        with self._lock:
            self._busy += len(claims)
            self._more_waiting = len(claims) == count and claims[-1].more_eligible
        for claim in claims:
            self._slots.submit(self._run, claim)
        return len(claims), count

    def _run(self, claim: Claim) -> None:
        outcome = None
        try:
            outcome = run_claimed(claim, self.rt)
        finally:
            with self._lock:
                self._busy -= 1
                if self._busy == 0:
                    self._all_free.notify_all()
                # A deferral means the pool is full: claiming again at once would defer again.
                claim_again = self._more_waiting and outcome != AttemptResult.DEFERRED
            if claim_again:
                self._wake.set()

    def _closing(self) -> bool:
        return self._stopped.is_set() or self.rt.stopping.is_set()

    def _dispatch_forever(self) -> None:
        failures = 0
        room_taken = 0  # claimed by the batches just before, claiming on at once
        while not self._closing():
            probes.beat("dispatcher", bound_seconds=4 * self.poll_seconds + 30)
            self._wake.clear()
            try:
                claimed, asked = self.dispatch_once(room_taken=room_taken)
            except Exception as exc:  # noqa: BLE001 - PostgreSQL or Redis away: back off, never exit
                failures += 1
                DATABASE.failed(exc, consequence="jobs wait in PostgreSQL; the dispatcher claims again after a pause")
                room_taken = 0
                self._stopped.wait(full_jitter(failures, base=0.5, cap=min(30.0, 4 * self.poll_seconds)))
                continue
            if failures:
                DATABASE.succeeded()
                failures = 0
            if claimed and claimed == asked and self.busy() < self.slots:
                # A full batch and slots still free (the cap bound it, or the headroom): claim on
                # at once, counting these jobs against the headroom until the next wait.
                room_taken += claimed
                continue
            room_taken = 0
            self._wake.wait(self.poll_seconds * random.uniform(0.9, 1.1))
        probes.forget("dispatcher")

    def _listen_forever(self) -> None:
        notifications = Notifications(RUNNABLE_JOBS_CHANNEL, application_name="dispatcher-listen")
        try:
            while not self._closing():
                if notifications.wait(1.0):
                    self._wake.set()
        finally:
            notifications.close()


class DispatcherStep(bootsteps.StartStopStep):
    """The dispatcher in a Celery worker that consumes the llm queue (``WORKER_WAKE_UPS=notify``),
    with as many slots as the worker's concurrency. Its stop, in Celery's warm shutdown (after
    ``worker_shutting_down`` began the runtime's), waits for the slots within the grace."""

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.dispatcher: Dispatcher | None = None

    def include_if(self, parent: Any) -> bool:
        return settings.WORKER_WAKE_UPS == "notify" and LLM in parent.app.amqp.queues.consume_from

    def start(self, parent: Any) -> None:
        if self.dispatcher is None:
            self.dispatcher = Dispatcher(int(parent.concurrency))
            self.dispatcher.start()

    def stop(self, parent: Any) -> None:
        if self.dispatcher is not None:
            rt = runtime()
            if not rt.stopping.is_set():
                rt.begin_shutdown(settings.WORKER_SHUTDOWN_GRACE_SECONDS)
            if not self.dispatcher.stop(timeout=settings.WORKER_SHUTDOWN_GRACE_SECONDS):
                logger.warning("slots still running at the end of the grace", extra={"busy": self.dispatcher.busy()})
