"""``manage.py audit [--repair] [--format text|json]``: the self-audit (OPS-6), once, by hand.
Without ``--repair`` it only reports; with it, it repairs what a guarded statement can and
raises the alarms, as the scheduler's audit sweep does. The checks are listed in
:mod:`extraction.operations.audit`."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from config.broker import broker_connection
from extraction.operations.audit import Finding, run_audit


def _line(finding: Finding) -> str:
    examples = f" e.g. {', '.join(finding.examples)}" if finding.examples else ""
    acted = f" ({finding.acted_on})" if finding.acted_on else ""
    detail = f": {finding.detail}" if finding.detail else ""
    return f"  {finding.kind:<28} {finding.count:>6}  {finding.action.value}{acted}{detail}{examples}"


class Command(BaseCommand):
    help = "Check the service's invariants; with --repair, repair what can be repaired and alarm on the rest."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repair", action="store_true", help="repair what a guarded statement can repair")
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args: Any, **options: Any) -> None:
        repair = options["repair"]
        # The broker is only for the delivery sweep a repair wakes; kombu connects on first use.
        with broker_connection(connect_timeout=5) as broker:
            findings = run_audit(repair=repair, broker=broker if repair else None)
        if options["format"] == "json":
            self.stdout.write(json.dumps({"repair": repair, "findings": [f.as_dict() for f in findings]}, indent=2))
            return
        found = [f for f in findings if f.count]
        self.stdout.write(
            f"audit ({'repair' if repair else 'report only'}): {len(findings)} checks, {len(found)} with findings"
        )
        for finding in findings:
            self.stdout.write(_line(finding))
