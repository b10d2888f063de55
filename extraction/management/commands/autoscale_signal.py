"""``manage.py autoscale_signal [--format text|json]``: the autoscaling signal /metrics exports as
``extraction_autoscale_replicas``, with the figures it comes from (config/autoscaling.py)."""

from __future__ import annotations

import json
import math
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import connection, transaction

from config.autoscaling import demands


class Command(BaseCommand):
    help = "Print the replicas of each worker process worth running per provider pool, and why."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args: Any, format: str, **options: Any) -> None:  # noqa: A002 - the flag's name
        with transaction.atomic(), connection.cursor() as cursor:
            rows = demands(cursor)
        if format == "json":
            self.stdout.write(
                json.dumps(
                    [
                        {
                            "process": d.process,
                            "pool": d.pool,
                            "replicas": d.replicas,
                            "slots": round(d.slots, 3),
                            "slot_cap": None if math.isinf(d.slot_cap) else round(d.slot_cap, 3),
                            "running": d.running,
                            "eligible": d.eligible,
                            "arrival_slots": round(d.arrival_slots, 3),
                            "slots_per_replica": d.slots_per_replica,
                        }
                        for d in rows
                    ],
                    indent=2,
                )
            )
            return
        self.stdout.write(f"{'process':<10} {'pool':<16} {'replicas':>8} {'slots':>8} {'cap':>8}  why")
        for d in rows:
            cap = "none" if math.isinf(d.slot_cap) else f"{d.slot_cap:.1f}"
            why = (
                f"{d.running} running + {d.eligible} eligible, arrivals keep {d.arrival_slots:.1f} busy; "
                f"{d.slots_per_replica} slots per replica"
            )
            self.stdout.write(f"{d.process:<10} {d.pool or '-':<16} {d.replicas:>8} {d.slots:>8.1f} {cap:>8}  {why}")
