"""The llm worker process's runtime: its identity, the in-flight registry and the lease
heartbeat (EXE-2), the shutdown (hand back what cannot finish within the grace), and model calls
that the shutdown can abandon. One per process (:func:`runtime`); the slots share it."""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from config import probes
from config.outages import Outage
from extraction.execution import lifecycle
from extraction.execution.lifecycle import Claim
from extraction.providers.base import ProviderRequest, ProviderResponse

logger = logging.getLogger("extraction.worker")
# The database as the worker's slots and heartbeat see it: one warning per outage.
DATABASE = Outage(logger, "PostgreSQL (llm worker)")


@contextmanager
def db_step() -> Iterator[None]:
    """A unit of DB work that gives its connection back at the end (to the pool when one
    is configured), so no connection is held across a model call."""
    try:
        yield
    finally:
        connection.close()


T = TypeVar("T")


def read_after_model_call(read: Callable[[], T]) -> T:
    """A read-only DB step that runs after a paid model call: if its connection turns out dead
    (the server restarted or failed over within the pool's idle bound, config/pool_checks.py),
    every pooled connection is checked and the read runs once more, instead of the answer
    being thrown away and paid for again. A second failure is an outage: raised."""
    try:
        with db_step():
            return read()
    except (OperationalError, InterfaceError):
        pool = getattr(connection, "pool", None)  # PostgreSQL's wrapper; None unless pooled
        if pool is not None:
            pool.check()  # psycopg_pool: each idle connection checked, the dead replaced
        with db_step():
            return read()


class WorkerRuntime:
    """Per-process state: identity, the in-flight registry, the heartbeat, the stop flags."""

    def __init__(self, worker_id: str | None = None) -> None:
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        # Set by SIGTERM: slots claim nothing more.
        self.stopping = threading.Event()
        # Set when the shutdown grace is nearly spent: model calls still running are abandoned
        # and their jobs handed back (begin_shutdown).
        self.abandoning = threading.Event()
        # The events slots wait on for their model calls' answers; abandon() sets them all.
        self._waiting: set[threading.Event] = set()
        self._lock = threading.Lock()
        self._in_flight: dict[uuid.UUID, Claim] = {}
        self._lost: set[uuid.UUID] = set()
        self._heartbeat: threading.Thread | None = None
        # Jobs a slot took by claiming again (with no wake-up spent on them) and ran to
        # completion: their own wake-ups, still queued, have nothing left to do (run_slot).
        self._served_without_wake_up: OrderedDict[uuid.UUID, None] = OrderedDict()

    # -- in-flight registry -----------------------------------------------------------------
    def track(self, claim: Claim) -> None:
        with self._lock:
            self._in_flight[claim.job_id] = claim
        self._ensure_heartbeat()

    def untrack(self, claim: Claim) -> None:
        with self._lock:
            self._in_flight.pop(claim.job_id, None)
            self._lost.discard(claim.job_id)

    def lost(self, claim: Claim) -> bool:
        with self._lock:
            return claim.job_id in self._lost

    def in_flight(self) -> int:
        with self._lock:
            return len(self._in_flight)

    def served_without_wake_up(self, job_id: uuid.UUID) -> None:
        """A slot claimed ``job_id`` by claiming again and completed it: its own wake-up, still
        queued, will find nothing to do."""
        with self._lock:
            self._served_without_wake_up[job_id] = None
            while len(self._served_without_wake_up) > SERVED_WITHOUT_WAKE_UP_KEPT:
                self._served_without_wake_up.popitem(last=False)

    def wake_up_already_served(self, job_id: uuid.UUID | None) -> bool:
        """True (once) if a slot of this process already completed ``job_id`` without its
        wake-up: the wake-up is spent."""
        if job_id is None:
            return False
        with self._lock:
            return self._served_without_wake_up.pop(job_id, False) is None

    # -- shutdown ------------------------------------------------------------------------------
    def begin_shutdown(self, grace_seconds: float) -> float:
        """SIGTERM: stop claiming now; let model calls run until the grace is nearly spent, then
        abandon the ones still running so their jobs are handed back before the process must be
        gone. Returns the seconds calls are given.

        A call is given the whole grace rather than judged hopeless at once: it is paid for
        either way, and most answer well inside their timeout. What is left at the end is
        handed back under a new fence (``attempt.hand_back_interrupted``), so the job is claimable at
        once instead of after its lease, and a late answer in this process is refused."""
        self.stopping.set()
        drain = max(0.0, grace_seconds - hand_back_margin(grace_seconds))
        if not self.abandoning.is_set():
            timer = threading.Timer(drain, self.abandon)
            timer.daemon = True
            timer.start()
        logger.info(
            "shutting down: no more claims; model calls have %.1f s to answer",
            drain,
            extra={"in_flight": self.in_flight()},
        )
        return drain

    def abandon(self) -> None:
        """Wake every slot waiting for a model call: those calls are given up."""
        with self._lock:
            self.abandoning.set()
            waiting = list(self._waiting)
        for answered_or_abandoned in waiting:
            answered_or_abandoned.set()

    @contextmanager
    def waiting_for_call(self, woken: threading.Event) -> Iterator[None]:
        """Register ``woken`` to be set by :meth:`abandon`; Interrupted if that already happened."""
        with self._lock:
            if self.abandoning.is_set():
                raise Interrupted("the worker is shutting down")
            self._waiting.add(woken)
        try:
            yield
        finally:
            with self._lock:
                self._waiting.discard(woken)

    # -- heartbeat (EXE-2) ---------------------------------------------------------------------
    def _ensure_heartbeat(self) -> None:
        with self._lock:
            if self._heartbeat is None or not self._heartbeat.is_alive():
                self._heartbeat = threading.Thread(target=self._beat_forever, name="lease-heartbeat", daemon=True)
                self._heartbeat.start()

    def beat_once(self) -> set[uuid.UUID]:
        with self._lock:
            claims = list(self._in_flight.values())
        with db_step():
            lost = lifecycle.extend_leases(claims)
        with self._lock:
            # A job this process handed back (or retried) and another worker took since has a
            # newer fence, but it is no longer ours to stop: only the ones still in our hands.
            lost = {job_id for job_id in lost if job_id in self._in_flight}
            self._lost |= lost
        if lost:
            for job_id in lost:
                logger.warning(
                    "lease lost: the attempt's result will be discarded",
                    extra={"job_id": str(job_id), "worker_id": self.worker_id},
                )
        return lost

    def _beat_forever(self) -> None:
        while True:
            # A lease heartbeat that stops turning loses every lease of the process: liveness
            # fails after it has missed a few (a failed beat still turns: the lease has margin).
            probes.beat("lease-heartbeat", bound_seconds=4 * settings.HEARTBEAT_SECONDS + 30)
            time.sleep(settings.HEARTBEAT_SECONDS)
            try:
                self.beat_once()
            except Exception as exc:  # noqa: BLE001 - a failed beat is retried; the lease has margin
                DATABASE.failed(exc, consequence="leases are extended at the next heartbeat")
            else:
                DATABASE.succeeded()


def hand_back_margin(grace_seconds: float) -> float:
    """How long before the grace ends the running calls are abandoned: time to hand their jobs
    back (a statement each) and for Celery to ack and stop, on a loaded host."""
    return max(1.5, min(5.0, grace_seconds / 4))


class Interrupted(Exception):
    """The worker's shutdown abandoned this attempt's model call."""


class _CallThread:
    """A daemon thread that makes one slot's model calls, one at a time, for as long as the slot
    lives: the provider's client is per thread (openai_compat), so call after call reuses its
    kept-alive connection. A thread per call built a client and opened a TCP (and TLS)
    connection for every call: getaddrinfo and connect were 7 % of a busy worker's samples."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="provider-call", daemon=True).start()

    def submit(self, call: Callable[[], None]) -> None:
        self._calls.put(call)

    def _serve(self) -> None:
        while True:
            self._calls.get()()  # the call hands its own outcome back (call_provider)


# Each slot thread's call thread.
_call_threads = threading.local()


def call_provider(provider: Any, request: ProviderRequest, rt: WorkerRuntime) -> ProviderResponse:
    """``provider.extract(request)``, abandoned (``Interrupted``) if the shutdown grace runs out
    first (:func:`call_in_slot`)."""
    return call_in_slot(functools.partial(provider.extract, request), rt)


def call_in_slot(call: Callable[[], ProviderResponse], rt: WorkerRuntime) -> ProviderResponse:
    """One provider call (``call()``), abandoned (``Interrupted``) if the shutdown grace runs
    out first.

    The call runs on a daemon thread (the slot's :class:`_CallThread`) so that this slot can give
    up waiting: an HTTP read cannot be interrupted from outside, and Celery's warm shutdown waits
    for every slot. An abandoned call's thread dies with the process; its answer, if one comes,
    is dropped, and the slot's next call gets a new thread. An answer that arrives together with
    the shutdown is kept."""
    outcome: dict[str, Any] = {}
    woken = threading.Event()
    # The call's own spans (the HTTP client's) stay children of the attempt's span.
    context = contextvars.copy_context()

    def _call() -> None:
        try:
            outcome["response"] = context.run(call)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting slot as it is
            outcome["error"] = exc
        finally:
            woken.set()

    caller = getattr(_call_threads, "caller", None)
    if caller is None:
        caller = _call_threads.caller = _CallThread()
    with rt.waiting_for_call(woken):
        caller.submit(_call)
        woken.wait()
    if "error" in outcome:
        raise outcome["error"]
    if "response" in outcome:
        return outcome["response"]
    _call_threads.caller = None  # busy with the abandoned call for as long as it takes
    raise Interrupted("the worker's shutdown grace ran out during the model call")


# Enough for the wake-ups a busy worker has queued (prefetch: one per thread); a job
# forgotten here only costs its wake-up one empty claim.
SERVED_WITHOUT_WAKE_UP_KEPT = 10_000

_runtime: WorkerRuntime | None = None
_runtime_lock = threading.Lock()


def runtime() -> WorkerRuntime:
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = WorkerRuntime()
        return _runtime
