"""A Kafka consumer whose committed offset is never ahead of PostgreSQL (BRK-6).

One thread owns the librdkafka consumer and only polls, commits, pauses and resumes; the
records go to a pool of take-in threads, each running the handler's durable step. So:

- auto-commit and the automatic offset store are off; an offset is committed only as
  ``offset + 1`` of the last record of the partition's contiguous durable prefix
  (offsets.PartitionProgress), after the handler's transaction committed;
- the poll loop never waits on a take-in: with ``max_in_flight`` records unfinished it pauses
  its partitions and keeps polling (heartbeats and ``max.poll.interval.ms`` stay satisfied),
  and resumes when half of them are done;
- on revocation it stops taking that partition's records, waits a bounded time for the
  unfinished ones, commits the durable prefix and lets go; whatever finishes later is durable
  anyway and its re-read by the new owner is a duplicate the inbox takes once;
- a record that can never succeed (``Poison``) is quarantined with its coordinates, and the
  prefix moves past it only once the quarantine row is committed; a transient database error
  is retried with backoff, holding the prefix where it is.
"""

from __future__ import annotations

import hashlib
import json
import logging
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from opentelemetry.trace import SpanKind

from config import kafka, probes, tracing
from config.backoff import full_jitter
from config.db import prepared_cursor
from config.sql import load_statements
from extraction.eventlog.offsets import PartitionProgress

logger = logging.getLogger(__name__)

SQL = load_statements(Path(__file__).with_suffix(".sql"))


@dataclass(frozen=True)
class EventRecord:
    """One record as the handlers see it: its coordinates and its decoded envelope."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: dict[str, str]
    timestamp_ms: int | None

    @property
    def coordinates(self) -> str:
        return f"{self.topic}/{self.partition}@{self.offset}"

    def envelope(self) -> Any:
        """The record's JSON value; Poison if it is not JSON."""
        try:
            return json.loads(self.value or b"")
        except (ValueError, UnicodeDecodeError) as exc:
            raise Poison(f"value is not JSON: {exc}") from exc

    @classmethod
    def from_message(cls, message: Message) -> EventRecord:
        kind, timestamp = message.timestamp()
        raw_headers: Any = message.headers() or ()  # a list of (name, value) pairs
        headers = {name: _bytes(value).decode("utf-8", "replace") for name, value in raw_headers}
        return cls(
            topic=message.topic() or "",
            partition=message.partition() or 0,
            offset=message.offset() or 0,
            key=_bytes(message.key()) if message.key() is not None else None,
            value=_bytes(message.value()) if message.value() is not None else None,
            headers=headers,
            timestamp_ms=timestamp if kind != 0 else None,  # 0: TIMESTAMP_NOT_AVAILABLE
        )


def _bytes(value: str | bytes | None) -> bytes:
    return value.encode() if isinstance(value, str) else (value or b"")


class Poison(Exception):
    """A record that can never succeed: quarantined, then passed."""


Handler = Callable[[EventRecord], str]

# Attempts at a record that fails other than by the database being away, before it is quarantined.
TAKE_IN_ATTEMPTS = 10
# The consumer's recent commits, for tests and debugging (a long-running process keeps no more).
RECENT_COMMITS = 1000


def quarantine_record(record: EventRecord, reason: str) -> bool:
    """Keep a poison record with its coordinates (one row per coordinates, however often it is
    re-read); committed when this returns. True if this call stored it."""
    value = record.value or b""
    try:
        payload: Any = json.loads(value)
        if not isinstance(payload, dict):
            payload = {"value": payload}
    except (ValueError, UnicodeDecodeError):
        payload = {"raw": value.decode("utf-8", "replace")[:10_000]}
    event_id = uuid_or_none(record.headers.get("event_id"))
    job_id = uuid_or_none(
        payload.get("payload", {}).get("job_id") if isinstance(payload.get("payload"), dict) else None
    )
    with prepared_cursor() as cursor:
        cursor.execute(
            SQL["quarantine_record"],
            {
                "event": event_id,
                "job": job_id,
                "digest": hashlib.sha256(value).hexdigest(),
                "payload": json.dumps(payload),
                "reason": reason[:64],
                "topic": record.topic,
                "partition": record.partition,
                "offset": record.offset,
            },
        )
        stored = cursor.rowcount == 1
    logger.error(
        "kafka record quarantined",
        extra={"coordinates": record.coordinates, "reason": reason, "event_id": str(event_id or "")},
    )
    return stored


def uuid_or_none(value: Any) -> uuid.UUID | None:
    """A header or payload field as a UUID; None when it is missing or not one."""
    try:
        return uuid.UUID(str(value)) if value else None
    except ValueError:
        return None


class DurablePrefixConsumer:
    """Consumes ``topics`` in group ``group_id`` with ``handler`` as the durable step.

    ``handler(record)`` returns an outcome word once the record's effect is committed in
    PostgreSQL; raises Poison for a record that can never succeed; any database error that is
    not a refusal (connection lost, server restarting) is retried."""

    def __init__(
        self,
        *,
        group_id: str,
        topics: Sequence[str],
        handler: Handler,
        threads: int = 8,
        max_in_flight: int = 64,
        revoke_wait_seconds: float = 10.0,
        take_in_attempts: int = TAKE_IN_ATTEMPTS,
        retry_base_seconds: float = 0.5,
        config: dict[str, Any] | None = None,
        name: str = "kafka-consumer",
    ) -> None:
        self.group_id = group_id
        self.topics = list(topics)
        self.handler = handler
        self.max_in_flight = max_in_flight
        self.revoke_wait_seconds = revoke_wait_seconds
        self.take_in_attempts = take_in_attempts
        self.retry_base_seconds = retry_base_seconds
        self.name = name
        self._config = kafka.consumer_config(group_id, **(config or {}))
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"{name}-take-in")
        self._finished: queue.SimpleQueue[tuple[PartitionProgress, tuple[str, int], int]] = queue.SimpleQueue()
        self._progress: dict[tuple[str, int], PartitionProgress] = {}
        self._stopping = threading.Event()
        self._consumer: Consumer | None = None
        self.paused = False
        self.assigned = threading.Event()  # set once the first assignment arrived
        self.outcomes: dict[str, int] = {}  # records finished, by the handler's outcome
        self._outcomes_lock = threading.Lock()
        self.assignments = 0  # rebalances seen: partitions assigned, and revoked
        self.revocations = 0
        # (topic, partition, committed offset), the latest last
        self.commits: deque[tuple[str, int, int]] = deque(maxlen=RECENT_COMMITS)

    # -- the poll loop ----------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Poll until ``stop``; survive a broker that goes away (librdkafka reconnects)."""
        failures = 0
        while not stop.is_set():
            try:
                self._consume(stop)
            except KafkaException as exc:
                # The broker away at start-up (topics cannot be ensured) or a fatal client
                # error: a new client after a growing pause; the outage needs no traceback.
                failures += 1
                logger.warning(
                    "kafka consumer failed; starting again",
                    extra={"group": self.group_id, "error": str(exc)[:200], "failures": failures},
                )
                self._close_consumer()
                stop.wait(full_jitter(failures, base=1.0, cap=30.0))
        probes.forget(self.name)
        self._stopping.set()
        self._pool.shutdown(wait=True, cancel_futures=False)
        self._drain_finished()
        self._commit_prefixes()
        self._close_consumer()

    def _consume(self, stop: threading.Event) -> None:
        if self._consumer is None:
            kafka.ensure_topics(self.topics)
            consumer = Consumer(self._config, logger=logger)
            consumer.subscribe(self.topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost)
            self._consumer = consumer
        consumer = self._consumer
        while not stop.is_set():
            probes.beat(self.name)
            self._drain_finished()
            self._commit_prefixes()
            self._pause_or_resume()
            message = consumer.poll(0.2)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    logger.warning("kafka poll error", extra={"group": self.group_id, "error": error.str()})
                    if error.fatal():
                        raise KafkaException(error)
                continue
            key = (message.topic() or "", message.partition() or 0)
            progress = self._progress.get(key)
            if progress is None:  # a record of a partition revoked since it was fetched
                continue
            record = EventRecord.from_message(message)
            progress.take(record.offset)
            self._pool.submit(self._take_in, progress, key, record)

    def in_flight(self) -> int:
        return sum(progress.unfinished for progress in self._progress.values())

    def _pause_or_resume(self) -> None:
        assert self._consumer is not None
        unfinished = self.in_flight()
        if not self.paused and unfinished >= self.max_in_flight:
            self._consumer.pause(self._consumer.assignment())
            self.paused = True
            logger.info("dispatcher full: partitions paused", extra={"group": self.group_id, "in_flight": unfinished})
        elif self.paused and unfinished <= self.max_in_flight // 2:
            self._consumer.resume(self._consumer.assignment())
            self.paused = False
            logger.info("partitions resumed", extra={"group": self.group_id, "in_flight": unfinished})

    # -- take-in threads ----------------------------------------------------------------------
    def _take_in(self, progress: PartitionProgress, key: tuple[str, int], record: EventRecord) -> None:
        attempt = 0
        while True:
            attempt += 1
            try:
                try:
                    outcome = self._handle(record)
                except Poison as exc:
                    quarantine_record(record, str(exc))
                    outcome = "quarantined"
                except (OperationalError, InterfaceError):
                    raise
                except DatabaseError as exc:
                    # The database refused the record's step for good: keep it aside.
                    quarantine_record(record, f"refused: {type(exc).__name__}")
                    outcome = "quarantined"
                break
            except (OperationalError, InterfaceError) as exc:
                # PostgreSQL away: the record stays unfinished, so the prefix holds before it.
                logger.warning(
                    "take-in waiting for the database",
                    extra={"coordinates": record.coordinates, "error": str(exc)[:200], "attempt": attempt},
                )
                connection.close()
                if self._stopping.wait(full_jitter(attempt, base=self.retry_base_seconds, cap=10.0)):
                    return  # stopping: not finished, re-read by whoever reads next
            except Exception as exc:
                # Not the database being away: a record this code cannot take in. Retried a
                # bounded number of times (as a RabbitMQ queue's delivery limit does), then kept aside.
                logger.exception("take-in failed", extra={"coordinates": record.coordinates, "attempt": attempt})
                connection.close()
                if attempt >= self.take_in_attempts:
                    try:
                        quarantine_record(record, f"failed: {type(exc).__name__}")
                    except DatabaseError:
                        connection.close()
                    else:
                        outcome = "quarantined"
                        break
                if self._stopping.wait(full_jitter(attempt, base=self.retry_base_seconds, cap=10.0)):
                    return
            finally:
                connection.close()
        with self._outcomes_lock:
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        self._finished.put((progress, key, record.offset))

    def _handle(self, record: EventRecord) -> str:
        """The handler in a consumer span, a child of the producer's (its context is in the
        record's headers): the job's trace goes on through the log."""
        with tracing.step_span(
            f"{self.name}.take_in",
            trace_context={k: v for k, v in record.headers.items() if k in ("traceparent", "tracestate")},
            kind=SpanKind.CONSUMER,
            attributes={
                "messaging.system": "kafka",
                "messaging.operation.type": "process",
                "messaging.destination.name": record.topic,
                "messaging.kafka.offset": record.offset,
                "messaging.destination.partition.id": str(record.partition),
                "messaging.consumer.group.name": self.group_id,
                **({"messaging.message.id": record.headers["event_id"]} if "event_id" in record.headers else {}),
            },
        ):
            return self.handler(record)

    # -- offsets --------------------------------------------------------------------------------
    def _drain_finished(self) -> None:
        while True:
            try:
                progress, key, offset = self._finished.get_nowait()
            except queue.Empty:
                return
            if self._progress.get(key) is progress:  # not from an earlier assignment
                progress.finish(offset)

    def _commit_prefixes(self, only: Sequence[tuple[str, int]] | None = None) -> None:
        if self._consumer is None:
            return
        offsets = []
        for key, progress in self._progress.items():
            if only is not None and key not in only:
                continue
            if progress.committable is not None:
                offsets.append(TopicPartition(key[0], key[1], progress.committable))
        if not offsets:
            return
        try:
            self._consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            # Kept: the next commit carries the same or a later offset.
            logger.warning("offset commit failed", extra={"group": self.group_id, "error": str(exc)[:200]})
            return
        for tp in offsets:
            self.commits.append((tp.topic, tp.partition, tp.offset))
            committed = self._progress.get((tp.topic, tp.partition))
            if committed is not None and committed.committable == tp.offset:
                committed.committable = None

    # -- rebalances (called from inside poll(), on the loop's thread) ----------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._progress[(tp.topic, tp.partition)] = PartitionProgress()
        logger.info(
            "partitions assigned",
            extra={"group": self.group_id, "partitions": [f"{tp.topic}/{tp.partition}" for tp in partitions]},
        )
        self.assignments += 1
        self.assigned.set()
        if self.paused:
            consumer.assign(partitions)
            consumer.pause(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.revocations += 1
        keys = [(tp.topic, tp.partition) for tp in partitions]
        deadline = time.monotonic() + self.revoke_wait_seconds
        while time.monotonic() < deadline:
            self._drain_finished()
            if not any(self._progress[key].unfinished for key in keys if key in self._progress):
                break
            time.sleep(0.05)
        self._drain_finished()
        self._commit_prefixes(only=keys)
        for key in keys:
            left = self._progress.pop(key, None)
            if left is not None and left.unfinished:
                logger.warning(
                    "partition revoked with records unfinished; the next owner re-reads them",
                    extra={"group": self.group_id, "partition": f"{key[0]}/{key[1]}", "from": left.first_unfinished},
                )
        logger.info("partitions revoked", extra={"group": self.group_id, "partitions": [f"{t}/{p}" for t, p in keys]})

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # No longer ours: committing now would be refused; the next owner re-reads.
        for tp in partitions:
            self._progress.pop((tp.topic, tp.partition), None)
        logger.warning("partitions lost", extra={"group": self.group_id})

    def _close_consumer(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            try:
                consumer.close()
            except (KafkaException, RuntimeError):
                logger.warning("closing the kafka consumer failed", exc_info=True)
        self._progress.clear()
        self.paused = False
