"""Supplier master data: the normal forms extracted values are compared in, and the CSV import.

A supplier row stores its VAT id and IBAN normalized (upper case, no spaces or separators), so
the validator can look a supplier up with one indexed equality and the import can upsert on
``(tenant, vat_id)`` whatever spacing the source file used.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.functions import Now
from stdnum import iban as stdnum_iban
from stdnum.exceptions import ValidationError as StdnumValidationError

from accounts.models import Tenant
from extraction.models import Supplier

CSV_COLUMNS = ("name", "vat_id", "iban")
# Separators people print inside identifiers ("DE 232 446 240", "NL8200.98.395.B.01").
_IDENTIFIER_NOISE = re.compile(r"[\s.\-/]+")
_VAT_ID_SHAPE = re.compile(r"[A-Z]{2}[A-Z0-9+*]{2,13}")


def normalize_vat_id(raw: str) -> str:
    return _IDENTIFIER_NOISE.sub("", raw).upper()


def normalize_iban(raw: str) -> str:
    return re.sub(r"\s+", "", raw).upper()


def comparable_name(raw: str) -> str:
    """A supplier name reduced to what identifies it: case, accents' compatibility forms,
    punctuation and spacing do not (``"ACME  Supplies, GmbH"`` == ``"Acme Supplies GmbH"``)."""
    text = unicodedata.normalize("NFKC", raw).casefold()
    text = re.sub(r"[^\w&]+", " ", text)
    return " ".join(text.split())


@dataclass(frozen=True)
class SupplierRow:
    line: int
    name: str
    vat_id: str
    iban: str


@dataclass(frozen=True)
class ImportReport:
    created: int
    updated: int
    unchanged: int


class SupplierImportError(Exception):
    """The file has bad rows; nothing was imported. ``problems`` are "line N: ..." strings."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"{len(problems)} bad row(s); nothing imported")
        self.problems = problems


def parse_supplier_csv(text: str) -> list[SupplierRow]:
    """Rows of a ``name,vat_id,iban`` CSV (header required, column order free, extra columns
    ignored), normalized. Raises SupplierImportError listing every bad row by its line number."""
    reader = csv.DictReader(io.StringIO(text))
    header = [(column or "").strip().lower() for column in (reader.fieldnames or [])]
    missing = [column for column in CSV_COLUMNS if column not in header]
    if missing:
        raise SupplierImportError([f"line 1: missing column(s) {', '.join(missing)} (need {', '.join(CSV_COLUMNS)})"])
    reader.fieldnames = header
    rows: list[SupplierRow] = []
    problems: list[str] = []
    first_line_of: dict[str, int] = {}
    for record in reader:
        line = reader.line_num  # physical line of the record's end: what an editor shows
        if None in record:
            problems.append(f"line {line}: more fields than header columns")
            continue
        supplier = Supplier(
            name=record.get("name") or "", vat_id=record.get("vat_id") or "", iban=record.get("iban") or ""
        )
        row_problems: list[str] = []
        try:
            supplier.clean()  # the admin's rule; it normalizes the fields even when it refuses them
        except ValidationError as error:
            row_problems += error.messages
        vat_id = supplier.vat_id
        if vat_id and vat_id in first_line_of:
            row_problems.append(f"vat_id {vat_id} repeats line {first_line_of[vat_id]}")
        first_line_of.setdefault(vat_id, line)
        if row_problems:
            problems.append(f"line {line}: " + "; ".join(row_problems))
            continue
        rows.append(SupplierRow(line=line, name=supplier.name, vat_id=vat_id, iban=supplier.iban))
    if problems:
        raise SupplierImportError(problems)
    return rows


def supplier_problems(*, name: str, vat_id: str, iban: str) -> dict[str, list[str]]:
    """The supplier rule behind :meth:`Supplier.clean` (admin form and CSV import alike): what is
    wrong with already normalized values, by field; empty when nothing is."""
    problems: dict[str, list[str]] = {}
    max_name = Supplier._meta.get_field("name").max_length
    if not name:
        problems["name"] = ["name is empty"]
    elif max_name is not None and len(name) > max_name:
        problems["name"] = [f"name is longer than {max_name} characters"]
    if not vat_id:
        problems["vat_id"] = ["vat_id is empty"]
    elif not _VAT_ID_SHAPE.fullmatch(vat_id):
        # Shape only: master data may hold ids of countries python-stdnum does not know.
        problems["vat_id"] = [f"vat_id {vat_id!r} is not a country prefix and 2-13 letters/digits"]
    if iban:
        try:
            stdnum_iban.validate(iban)
        except StdnumValidationError as error:
            problems["iban"] = [f"iban {iban!r} is not a valid IBAN ({error})"]
    return problems


def import_suppliers(*, tenant: Tenant, rows: Iterable[SupplierRow]) -> ImportReport:
    """Upsert the rows into the tenant's master data by ``(tenant, vat_id)``, all in one
    transaction: an error part-way leaves the master data as it was."""
    created = updated = unchanged = 0
    with transaction.atomic():
        for row in rows:
            # Row lock: two imports of the same tenant serialize per supplier instead of racing.
            existing = Supplier.objects.select_for_update().filter(tenant=tenant, vat_id=row.vat_id).first()
            if existing is None:
                Supplier.objects.create(tenant=tenant, name=row.name, vat_id=row.vat_id, iban=row.iban)
                created += 1
            elif (existing.name, existing.iban) == (row.name, row.iban):
                unchanged += 1
            else:
                Supplier.objects.filter(pk=existing.pk).update(name=row.name, iban=row.iban, updated_at=Now())
                updated += 1
    return ImportReport(created=created, updated=updated, unchanged=unchanged)
