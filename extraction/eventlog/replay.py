"""Re-reading the event log independently of the ingress (BRK-6): ``manage.py replay_events``.

A replay reads the chosen topics from a point in time in its own consumer group, by explicit
assignment: it never joins or commits for the ingress's group, so the ingress's offsets are
untouched however often the log is read. Each record is printed or kept in
``event_log_records`` (one row per group and coordinates, so a replay run twice adds nothing).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
from django.db import connection

from config import kafka
from config.sql import load_statements
from extraction.eventlog.consumer import EventRecord, uuid_or_none

logger = logging.getLogger(__name__)

SQL = load_statements(Path(__file__).with_suffix(".sql"))


@dataclass(frozen=True)
class LoggedEvent:
    topic: str
    partition: int
    offset: int
    timestamp: datetime | None
    event_id: str | None
    event_type: str | None
    job_id: str | None
    state_version: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "timestamp": self.timestamp.isoformat() if self.timestamp else None,
            "event_id": self.event_id,
            "event_type": self.event_type,
            "job_id": self.job_id,
            "state_version": self.state_version,
        }


def logged_event(record: EventRecord) -> LoggedEvent:
    """What a record says, read leniently: a replay shows poison records too."""
    try:
        envelope = json.loads(record.value or b"")
    except (ValueError, UnicodeDecodeError):
        envelope = {}
    if not isinstance(envelope, dict):
        envelope = {}
    payload: dict[str, Any] = envelope["payload"] if isinstance(envelope.get("payload"), dict) else {}
    version = payload.get("state_version")
    return LoggedEvent(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        timestamp=datetime.fromtimestamp(record.timestamp_ms / 1000, UTC) if record.timestamp_ms is not None else None,
        event_id=record.headers.get("event_id") or envelope.get("event_id"),
        event_type=record.headers.get("event_type") or envelope.get("event_type"),
        job_id=payload.get("job_id"),
        state_version=version if isinstance(version, int) else None,
    )


def read_log(
    topics: Sequence[str],
    *,
    since: datetime,
    group_id: str,
    idle_seconds: float = 3.0,
    max_records: int | None = None,
) -> Iterator[LoggedEvent]:
    """Every record of ``topics`` with a timestamp at or after ``since``, partition by partition
    in offset order, until no record came for ``idle_seconds`` (the end of the log as it was)."""
    consumer = Consumer(kafka.consumer_config(group_id, **{"enable.partition.eof": False}), logger=logger)
    try:
        consumer.assign(_start_offsets(consumer, topics, since))
        since_ms = int(since.timestamp() * 1000)
        seen = 0
        last_record = time.monotonic()
        while time.monotonic() - last_record < idle_seconds:
            message = consumer.poll(0.2)
            if message is None or message.error() is not None:
                continue
            last_record = time.monotonic()
            record = EventRecord.from_message(message)
            if record.timestamp_ms is not None and record.timestamp_ms < since_ms:
                continue
            yield logged_event(record)
            seen += 1
            if max_records is not None and seen >= max_records:
                return
    finally:
        consumer.close()


def _start_offsets(consumer: Consumer, topics: Sequence[str], since: datetime) -> list[TopicPartition]:
    """Each partition's first offset at ``since`` (ListOffsets by time); from the beginning where
    the broker cannot say — the timestamp filter then drops what is older."""
    metadata = consumer.list_topics(timeout=10)
    partitions = []
    for topic in topics:
        if topic not in metadata.topics:
            raise ValueError(f"no such topic: {topic}")
        for partition in sorted(metadata.topics[topic].partitions):
            partitions.append(TopicPartition(topic, partition, int(since.timestamp() * 1000)))
    try:
        found = consumer.offsets_for_times(partitions, timeout=10)
    except KafkaException:
        found = []
    by_key = {(tp.topic, tp.partition): tp.offset for tp in found if tp.error is None and tp.offset >= 0}
    return [
        TopicPartition(tp.topic, tp.partition, by_key.get((tp.topic, tp.partition), OFFSET_BEGINNING))
        for tp in partitions
    ]


def keep_in_audit(events: Sequence[LoggedEvent], *, group_id: str) -> int:
    """Store replayed events in ``event_log_records``; returns how many were new."""
    stored = 0
    with connection.cursor() as cursor:
        for event in events:
            cursor.execute(
                SQL["keep_logged_event"],
                {
                    "group": group_id,
                    "topic": event.topic,
                    "partition": event.partition,
                    "offset": event.offset,
                    "event_id": uuid_or_none(event.event_id),
                    "event_type": (event.event_type or "")[:100],
                    "job_id": uuid_or_none(event.job_id),
                    "state_version": event.state_version,
                    "timestamp": event.timestamp,
                },
            )
            stored += cursor.rowcount
    return stored
