"""Operators: send deliveries again by filter (same webhook-ids), or replay a window of
events to an endpoint that never had them.

    manage.py redeliver_webhooks --tenant acme --state failed --since 2026-11-01T00:00Z
    manage.py redeliver_webhooks --endpoint <uuid> --replay-missing --since 2026-11-01T00:00Z
"""

from __future__ import annotations

import getpass
import uuid
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.dateparse import parse_datetime

from accounts.models import Tenant
from delivery import redelivery, replay, scheduling
from delivery.models import SUBSCRIBABLE_TYPES, DeliveryState
from extraction.bulk import actions as bulk


def _moment(value: str | None) -> datetime | None:
    if value is None:
        return None
    parsed = parse_datetime(value)
    if parsed is None or parsed.tzinfo is None:
        raise CommandError(f"{value!r} is not an ISO 8601 date-time with a time zone")
    return parsed


class Command(BaseCommand):
    help = "Redeliver webhook deliveries matching a filter, or replay missing events to an endpoint."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="tenant slug")
        parser.add_argument("--endpoint", type=uuid.UUID)
        parser.add_argument(
            "--state",
            action="append",
            choices=[DeliveryState.FAILED, DeliveryState.DELIVERED],
            help="states to redeliver (repeatable; default: failed)",
        )
        parser.add_argument("--event-type", choices=SUBSCRIBABLE_TYPES)
        parser.add_argument("--job", type=uuid.UUID)
        parser.add_argument("--since", help="deliveries (or events) created at or after this ISO 8601 time")
        parser.add_argument("--until", help="... and before this one")
        parser.add_argument(
            "--replay-missing", action="store_true", help="create deliveries the endpoint never had (needs --endpoint)"
        )
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args: Any, **o: Any) -> None:
        since, until = _moment(o["since"]), _moment(o["until"])
        if o["replay_missing"]:
            if o["endpoint"] is None:
                raise CommandError("--replay-missing needs --endpoint")
            ids = replay.replay_events(
                endpoint_id=o["endpoint"], since=since, until=until, event_type=o["event_type"], dry_run=o["dry_run"]
            )
        else:
            tenant_id = None
            if o["tenant"]:
                tenant = Tenant.objects.filter(slug=o["tenant"]).first()
                if tenant is None:
                    raise CommandError(f"no tenant {o['tenant']!r}")
                tenant_id = tenant.pk
            if not (tenant_id or o["endpoint"] or o["job"] or since):
                raise CommandError("give at least one of --tenant, --endpoint, --job, --since")
            report = redelivery.redeliver_webhooks(
                replay.DeliveryFilter(
                    tenant_id=tenant_id,
                    endpoint_id=o["endpoint"],
                    states=tuple(o["state"] or [DeliveryState.FAILED]),
                    event_type=o["event_type"],
                    job_id=o["job"],
                    since=since,
                    until=until,
                ),
                tenant_id=tenant_id,
                actor=bulk.Actor(name=f"cli:{getpass.getuser()}", channel="cli"),
                dry_run=o["dry_run"],
            )
            ids = bulk.action_object_ids(report.action_id, outcome=bulk.WOULD_CHANGE if o["dry_run"] else bulk.CHANGED)
        if o["replay_missing"] and not o["dry_run"]:
            scheduling.publish_dispatch_hints(ids)
        verb = "would send" if o["dry_run"] else "sending"
        self.stdout.write(f"{verb} {len(ids)} deliveries")
        for delivery_id in ids:
            self.stdout.write(str(delivery_id))
