from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.dateparse import parse_datetime

from config import kafka
from extraction.eventlog import replay


def _moment(value: str) -> datetime:
    moment = parse_datetime(value)
    if moment is None or moment.tzinfo is None:
        raise CommandError(
            f"--from-timestamp {value!r}: give an ISO 8601 time with its zone, e.g. 2026-12-01T00:00:00Z"
        )
    return moment


class Command(BaseCommand):
    help = (
        "Re-read the event log (EVENT_TRANSPORT=kafka) from a point in time in a consumer group of its own, "
        "without touching the ingress's offsets; print each record or keep it in event_log_records."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--from-timestamp", required=True, help="ISO 8601 with a zone")
        parser.add_argument(
            "--topic", action="append", help="a topic to read (repeatable; default: every event family's topic)"
        )
        parser.add_argument("--group", help="the consumer group to read as (default: a new one, replay-<uuid>)")
        parser.add_argument("--into-audit", action="store_true", help="keep the records in event_log_records")
        parser.add_argument("--format", choices=["text", "json"], default="text")
        parser.add_argument("--idle-seconds", type=float, default=3.0, help="stop after this long with no record")
        parser.add_argument("--max-records", type=int)

    def handle(
        self,
        *args: Any,
        from_timestamp: str,
        topic: list[str] | None,
        group: str | None,
        into_audit: bool,
        format: str,
        idle_seconds: float,
        max_records: int | None,
        **_: Any,
    ) -> None:
        if settings.EVENT_TRANSPORT != "kafka":
            raise CommandError("replay_events reads the Kafka event log: set EVENT_TRANSPORT=kafka")
        since = _moment(from_timestamp)
        topics = topic or list(kafka.event_topics())
        group = group or f"replay-{uuid.uuid4()}"
        try:
            events = list(
                replay.read_log(topics, since=since, group_id=group, idle_seconds=idle_seconds, max_records=max_records)
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        stored = replay.keep_in_audit(events, group_id=group) if into_audit else 0
        if format == "json":
            self.stdout.write(
                json.dumps({"group": group, "records": [e.as_dict() for e in events], "stored": stored}, indent=2)
            )
            return
        for event in events:
            self.stdout.write(
                f"{event.topic}/{event.partition}@{event.offset} {event.timestamp:%Y-%m-%dT%H:%M:%S.%fZ} "
                f"{event.event_type} job={event.job_id} v{event.state_version} event={event.event_id}"
                if event.timestamp
                else f"{event.topic}/{event.partition}@{event.offset} {event.event_type} event={event.event_id}"
            )
        self.stdout.write(
            f"{len(events)} records read as group {group}"
            + (f", {stored} new in the audit table" if into_audit else "")
        )
