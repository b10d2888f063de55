"""``manage.py slo_report --since ISO --until ISO [--tenant SLUG] [--format text|json]``: the SLO
report (OPS-4) over the jobs accepted in the window; its definitions are in
:mod:`extraction.operations.slo`.

    manage.py slo_report --since 2026-11-01T00:00Z --until 2026-11-02T00:00Z --tenant acme
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.dateparse import parse_datetime

from accounts.models import Tenant
from extraction.operations.slo import SloWindow, render_text, slo_report


def _moment(flag: str, value: str) -> datetime:
    parsed = parse_datetime(value)
    if parsed is None or parsed.tzinfo is None:
        raise CommandError(f"{flag} {value!r} is not an ISO 8601 date-time with a time zone (e.g. 2026-11-01T00:00Z)")
    return parsed


class Command(BaseCommand):
    help = (
        "Report the completion SLI, failures, late jobs, review SLO, latencies and cost for jobs accepted in a window."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", required=True, help="jobs accepted at or after this ISO 8601 time")
        parser.add_argument("--until", required=True, help="... and before this one")
        parser.add_argument("--tenant", help="only this tenant (slug)")
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args: Any, **options: Any) -> None:
        since, until = _moment("--since", options["since"]), _moment("--until", options["until"])
        if since >= until:
            raise CommandError(f"--since ({options['since']}) must be before --until ({options['until']})")
        tenant = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"no tenant {options['tenant']!r}")
        report = slo_report(
            SloWindow(
                since=since,
                until=until,
                tenant_id=tenant.pk if tenant else None,
                tenant_slug=tenant.slug if tenant else None,
            )
        )
        if options["format"] == "json":
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
        else:
            self.stdout.write(render_text(report), ending="")
