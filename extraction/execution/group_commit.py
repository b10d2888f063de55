"""Group commit among the slots (threads) of one process: what many slots ask of PostgreSQL at the
same moment goes out as one statement, written by one of them.

At a backlog the bound is the number of commits, not the work in them: each took the NOTIFY
queue's commit lock, and the completions their tenant's usage row, and the slots queued on both.
So the requests that arrive while one batch is being written go out together in the next, with
no timer: a slot alone (low load) writes its own at once; under load a batch is as large as what
queued meanwhile (up to ``max_batch``).

There is no thread of its own. A slot appends its request and, if no batch is being written,
writes the queue (it leads); otherwise it waits, and either its answer comes or it leads the next
batch. So the slot that asked has its own answer before it goes on, and a test on one thread
writes on its own connection. A crash loses only what was never written.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError

Request = TypeVar("Request")
Answer = TypeVar("Answer")


@dataclass
class Pending(Generic[Request, Answer]):
    """One slot's request in a batch, settled by the batch's writer with an answer or an error."""

    request: Request
    settled: bool = False
    answer: Answer | None = None
    error: BaseException | None = None

    def settle(self, answer: Answer) -> None:
        self.answer, self.settled = answer, True

    def fail(self, error: BaseException) -> None:
        self.error, self.settled = error, True


class GroupCommit(Generic[Request, Answer]):
    """``write(batch)`` must settle every pending request of ``batch``, and never raise."""

    def __init__(self, write: Callable[[list[Pending[Request, Answer]]], None], *, max_batch: int) -> None:
        self.max_batch = max_batch
        self._write = write
        self._queue: list[Pending[Request, Answer]] = []
        self._writing = False
        self._changed = threading.Condition()

    def submit(self, request: Request) -> Answer:
        """``request``'s answer, written with whatever else is waiting; raises its error."""
        pending: Pending[Request, Answer] = Pending(request)
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
                    self._write(batch)
                except BaseException as exc:  # noqa: BLE001 - a bug in write: no slot of the batch waits forever
                    for unsettled in batch:
                        if not unsettled.settled:
                            unsettled.fail(exc)
                finally:
                    self._changed.acquire()
                    self._writing = False
                    self._changed.notify_all()
        if pending.error is not None:
            raise pending.error
        return pending.answer  # type: ignore[return-value]

    def waiting(self) -> int:
        """Requests queued and not yet being written."""
        with self._changed:
            return len(self._queue)


class ProcessBatcher(Generic[Request, Answer]):
    """A process's one GroupCommit for ``write``, built at its first use with the batch size the
    setting ``size_setting`` has then (tests change it; an import-time read would miss that).
    ``batcher().submit(request)`` is the request's answer; ``reset()`` forgets the instance."""

    def __init__(self, write: Callable[[list[Pending[Request, Answer]]], None], *, size_setting: str) -> None:
        self._write = write
        self._size_setting = size_setting
        self._lock = threading.Lock()
        self._group: GroupCommit[Request, Answer] | None = None

    def __call__(self) -> GroupCommit[Request, Answer]:
        with self._lock:
            if self._group is None:
                self._group = GroupCommit(self._write, max_batch=int(getattr(settings, self._size_setting)))
            return self._group

    def reset(self) -> None:
        with self._lock:
            self._group = None


def settle_splitting(
    batch: list[Pending[Request, Answer]],
    write: Callable[[list[Request]], Sequence[Answer]],
    *,
    logger: logging.Logger,
    what: str,
) -> None:
    """Settle ``batch`` with ``write``'s answers (one per request, in order).

    A lost connection or a deadlock (the transaction rolled back, nothing written) reaches every
    request of the batch: each caller retries as it would a statement of its own. A batch the
    database refuses (one request's bad data) is written again in halves until the refused
    request is alone, so only its caller sees the error and no other request is lost."""
    try:
        answers = write([pending.request for pending in batch])
    except (OperationalError, InterfaceError) as exc:
        for pending in batch:
            pending.fail(exc)
    except DatabaseError as exc:
        if len(batch) == 1:
            batch[0].fail(exc)
            return
        logger.warning(
            "a batch of %s was refused: writing it in halves",
            what,
            extra={"batch": len(batch), "error": str(exc)[:500]},
        )
        middle = len(batch) // 2
        settle_splitting(batch[:middle], write, logger=logger, what=what)
        settle_splitting(batch[middle:], write, logger=logger, what=what)
    else:
        for pending, answer in zip(batch, answers, strict=True):
            pending.settle(answer)
