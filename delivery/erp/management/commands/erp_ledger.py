"""Print the reference ERP's ledger for one connection (the demo shows invoices arriving)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from delivery.erp.models import ErpLedgerEntry


class Command(BaseCommand):
    help = "Print the reference ERP's ledger postings for a connection (default: every connection)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("connection", nargs="?", help="ERP connection slug (setup_demo_erp uses the tenant slug)")
        parser.add_argument("--limit", type=int, default=50)

    def handle(self, *args: Any, connection: str | None, limit: int, **options: Any) -> None:
        entries = ErpLedgerEntry.objects.order_by("-posted_at")
        if connection:
            entries = entries.filter(connection_id=connection)
        rows = list(entries[:limit])
        self.stdout.write(f"{len(rows)} ledger postings" + (f" for {connection}" if connection else ""))
        for e in rows:
            self.stdout.write(
                f"{e.posted_at:%Y-%m-%d %H:%M:%S}  {e.invoice_number or '-':<20} "
                f"{e.supplier_name[:30] or '-':<30} {e.total or '-':>12} {e.currency or '':<3}  job {e.job_id}"
            )
