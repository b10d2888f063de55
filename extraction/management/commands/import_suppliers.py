"""Import a tenant's supplier master data from CSV: ``manage.py import_suppliers <tenant-slug> <file.csv>``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Tenant
from extraction.validation.suppliers import (
    CSV_COLUMNS,
    SupplierImportError,
    import_suppliers,
    parse_supplier_csv,
)


class Command(BaseCommand):
    help = (
        f"Upsert a tenant's suppliers from a CSV file with the columns {', '.join(CSV_COLUMNS)} (header "
        "required; VAT ids and IBANs are normalized). Any bad row aborts the import and is reported by line "
        "number; nothing is imported then."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant_slug")
        parser.add_argument("csv_file", type=Path)

    def handle(self, *args: Any, tenant_slug: str, csv_file: Path, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=tenant_slug).first()
        if tenant is None:
            raise CommandError(f"no tenant with slug {tenant_slug!r}")
        try:
            text = csv_file.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"cannot read {csv_file}: {error}") from None
        try:
            rows = parse_supplier_csv(text)
        except SupplierImportError as error:
            for problem in error.problems:
                self.stderr.write(problem)
            raise CommandError(f"{csv_file}: {len(error.problems)} bad row(s); nothing imported") from None
        report = import_suppliers(tenant=tenant, rows=rows)
        self.stdout.write(
            f"{tenant.slug}: {report.created} created, {report.updated} updated, {report.unchanged} unchanged"
        )
