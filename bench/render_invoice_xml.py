"""Render a structured invoice (UBL 2.1 ``Invoice``/``CreditNote`` or UN/CEFACT CII) as the plain
text of a printed invoice, for the XML-only cases of the test data (no PDF to read).

The rendering is what a simple invoice template prints: letterhead, buyer, header fields, a
line table, allowances and charges, the VAT breakdown, totals and payment details. Values are
printed exactly as written in the XML (amounts with a dot, dates as YYYY-MM-DD), and the
renderer records where it printed each one, so :func:`render_invoice_xml` also returns the
XML's ground truth as an ``invoice.v1`` answer whose every evidence span is exact: the
"correct output" the corruption test starts from.

Run as a script to see a rendering: ``python bench/render_invoice_xml.py FILE.xml``.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

CREDIT_NOTE_CODES = {"381", "81", "83", "261", "262", "296", "308", "396", "420", "458", "532"}
_IBAN_SHAPE = re.compile(r"[A-Z]{2}\d{2}[A-Z0-9]{10,30}")


@dataclass(frozen=True)
class Party:
    name: str | None
    vat_id: str | None
    street: str | None
    city: str | None
    postcode: str | None
    country: str | None


@dataclass(frozen=True)
class Line:
    line_id: str | None
    name: str | None
    quantity: str | None
    unit: str | None
    unit_price: str | None
    base_quantity: str | None
    net_amount: str | None
    tax_category: str | None
    tax_rate: str | None


@dataclass(frozen=True)
class AllowanceCharge:
    is_charge: bool
    amount: str
    reason: str | None


@dataclass(frozen=True)
class TaxGroup:
    category: str | None
    rate: str | None
    taxable: str | None
    tax: str | None


@dataclass(frozen=True)
class StructuredInvoice:
    syntax: str
    type_code: str | None
    number: str | None
    issue_date: str | None
    due_date: str | None
    currency: str | None
    seller: Party
    buyer: Party
    account: str | None
    bic: str | None
    lines: list[Line]
    allowances_charges: list[AllowanceCharge]
    tax_groups: list[TaxGroup]
    line_total: str | None
    net_total: str | None
    tax_total: str | None
    gross_total: str | None
    prepaid: str | None
    rounding: str | None
    amount_due: str | None

    @property
    def is_credit_note(self) -> bool:
        return self.syntax == "UBL-CreditNote" or self.type_code in CREDIT_NOTE_CODES


# --- namespace-agnostic XML access -----------------------------------------------------------------


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(element: ET.Element | None, name: str) -> list[ET.Element]:
    return [] if element is None else [child for child in element if _local(child.tag) == name]


def _find(element: ET.Element | None, *path: str) -> ET.Element | None:
    for name in path:
        found = _children(element, name)
        element = found[0] if found else None
    return element


def _text(element: ET.Element | None, *path: str) -> str | None:
    found = _find(element, *path)
    if found is None or found.text is None:
        return None
    return " ".join(found.text.split()) or None


def _iso(date: str | None) -> str | None:
    if date and re.fullmatch(r"\d{8}", date):
        return f"{date[:4]}-{date[4:6]}-{date[6:]}"
    return date


def _amount_in(elements: list[ET.Element], currency: str | None) -> str | None:
    """The amount whose currencyID is the invoice currency (BT-110 vs BT-111), else the first."""
    for element in elements:
        if currency and element.get("currencyID") == currency and element.text:
            return element.text.strip()
    return elements[0].text.strip() if elements and elements[0].text else None


# --- UBL -------------------------------------------------------------------------------------------


def _ubl_party(party: ET.Element | None) -> Party:
    vat_id = None
    for scheme in _children(party, "PartyTaxScheme"):
        if _text(scheme, "TaxScheme", "ID") == "VAT":
            vat_id = _text(scheme, "CompanyID")
    address = _find(party, "PostalAddress")
    return Party(
        name=_text(party, "PartyLegalEntity", "RegistrationName") or _text(party, "PartyName", "Name"),
        vat_id=vat_id,
        street=_text(address, "StreetName"),
        city=_text(address, "CityName"),
        postcode=_text(address, "PostalZone"),
        country=_text(address, "Country", "IdentificationCode"),
    )


def _parse_ubl(root: ET.Element) -> StructuredInvoice:
    credit = _local(root.tag) == "CreditNote"
    currency = _text(root, "DocumentCurrencyCode")
    means = _children(root, "PaymentMeans")
    account = next((_text(m, "PayeeFinancialAccount", "ID") for m in means if _find(m, "PayeeFinancialAccount")), None)
    bic = next(
        (
            _text(m, "PayeeFinancialAccount", "FinancialInstitutionBranch", "ID")
            for m in means
            if _find(m, "PayeeFinancialAccount", "FinancialInstitutionBranch")
        ),
        None,
    )
    lines = []
    for line in _children(root, "CreditNoteLine" if credit else "InvoiceLine"):
        quantity = _find(line, "CreditedQuantity" if credit else "InvoicedQuantity")
        lines.append(
            Line(
                line_id=_text(line, "ID"),
                name=_text(line, "Item", "Name"),
                quantity=_text(line, "CreditedQuantity" if credit else "InvoicedQuantity"),
                unit=quantity.get("unitCode") if quantity is not None else None,
                unit_price=_text(line, "Price", "PriceAmount"),
                base_quantity=_text(line, "Price", "BaseQuantity"),
                net_amount=_text(line, "LineExtensionAmount"),
                tax_category=_text(line, "Item", "ClassifiedTaxCategory", "ID"),
                tax_rate=_text(line, "Item", "ClassifiedTaxCategory", "Percent"),
            )
        )
    tax_totals = _children(root, "TaxTotal")
    main_tax = next(
        (
            t
            for t in tax_totals
            if _find(t, "TaxAmount") is not None and _find(t, "TaxAmount").get("currencyID") == currency
        ),
        tax_totals[0] if tax_totals else None,
    )
    groups = [
        TaxGroup(
            category=_text(s, "TaxCategory", "ID"),
            rate=_text(s, "TaxCategory", "Percent"),
            taxable=_text(s, "TaxableAmount"),
            tax=_text(s, "TaxAmount"),
        )
        for s in _children(main_tax, "TaxSubtotal")
    ]
    totals = _find(root, "LegalMonetaryTotal")
    return StructuredInvoice(
        syntax="UBL-CreditNote" if credit else "UBL-Invoice",
        type_code=_text(root, "CreditNoteTypeCode" if credit else "InvoiceTypeCode"),
        number=_text(root, "ID"),
        issue_date=_text(root, "IssueDate"),
        due_date=_text(root, "DueDate")
        or next((_text(m, "PaymentDueDate") for m in means if _text(m, "PaymentDueDate")), None),
        currency=currency,
        seller=_ubl_party(_find(root, "AccountingSupplierParty", "Party")),
        buyer=_ubl_party(_find(root, "AccountingCustomerParty", "Party")),
        account=account,
        bic=bic,
        lines=lines,
        allowances_charges=[
            AllowanceCharge(
                is_charge=_text(a, "ChargeIndicator") == "true",
                amount=_text(a, "Amount") or "0",
                reason=_text(a, "AllowanceChargeReason"),
            )
            for a in _children(root, "AllowanceCharge")
        ],
        tax_groups=groups,
        line_total=_text(totals, "LineExtensionAmount"),
        net_total=_text(totals, "TaxExclusiveAmount"),
        tax_total=_amount_in([t for tt in tax_totals for t in _children(tt, "TaxAmount")], currency),
        gross_total=_text(totals, "TaxInclusiveAmount"),
        prepaid=_text(totals, "PrepaidAmount"),
        rounding=_text(totals, "PayableRoundingAmount"),
        amount_due=_text(totals, "PayableAmount"),
    )


# --- CII -------------------------------------------------------------------------------------------


def _cii_party(party: ET.Element | None) -> Party:
    vat_id = next(
        (
            r.text.strip()
            for r in (_find(reg, "ID") for reg in _children(party, "SpecifiedTaxRegistration"))
            if r is not None and r.get("schemeID") == "VA" and r.text
        ),
        None,
    )
    address = _find(party, "PostalTradeAddress")
    return Party(
        name=_text(party, "Name"),
        vat_id=vat_id,
        street=_text(address, "LineOne"),
        city=_text(address, "CityName"),
        postcode=_text(address, "PostcodeCode"),
        country=_text(address, "CountryID"),
    )


def _parse_cii(root: ET.Element) -> StructuredInvoice:
    document = _find(root, "ExchangedDocument")
    transaction = _find(root, "SupplyChainTradeTransaction")
    agreement = _find(transaction, "ApplicableHeaderTradeAgreement")
    settlement = _find(transaction, "ApplicableHeaderTradeSettlement")
    currency = _text(settlement, "InvoiceCurrencyCode")
    means = _children(settlement, "SpecifiedTradeSettlementPaymentMeans")
    account = next(
        (
            _text(m, "PayeePartyCreditorFinancialAccount", "IBANID")
            or _text(m, "PayeePartyCreditorFinancialAccount", "ProprietaryID")
            for m in means
            if _find(m, "PayeePartyCreditorFinancialAccount") is not None
        ),
        None,
    )
    bic = next(
        (
            _text(m, "PayeeSpecifiedCreditorFinancialInstitution", "BICID")
            for m in means
            if _find(m, "PayeeSpecifiedCreditorFinancialInstitution") is not None
        ),
        None,
    )
    lines = []
    for item in _children(transaction, "IncludedSupplyChainTradeLineItem"):
        price = _find(item, "SpecifiedLineTradeAgreement", "NetPriceProductTradePrice")
        quantity = _find(item, "SpecifiedLineTradeDelivery", "BilledQuantity")
        tax = _find(item, "SpecifiedLineTradeSettlement", "ApplicableTradeTax")
        lines.append(
            Line(
                line_id=_text(item, "AssociatedDocumentLineDocument", "LineID"),
                name=_text(item, "SpecifiedTradeProduct", "Name"),
                quantity=_text(quantity),
                unit=quantity.get("unitCode") if quantity is not None else None,
                unit_price=_text(price, "ChargeAmount"),
                base_quantity=_text(price, "BasisQuantity"),
                net_amount=_text(
                    item,
                    "SpecifiedLineTradeSettlement",
                    "SpecifiedTradeSettlementLineMonetarySummation",
                    "LineTotalAmount",
                ),
                tax_category=_text(tax, "CategoryCode"),
                tax_rate=_text(tax, "RateApplicablePercent"),
            )
        )
    totals = _find(settlement, "SpecifiedTradeSettlementHeaderMonetarySummation")
    return StructuredInvoice(
        syntax="CII",
        type_code=_text(document, "TypeCode"),
        number=_text(document, "ID"),
        issue_date=_iso(_text(document, "IssueDateTime", "DateTimeString")),
        due_date=_iso(_text(settlement, "SpecifiedTradePaymentTerms", "DueDateDateTime", "DateTimeString")),
        currency=currency,
        seller=_cii_party(_find(agreement, "SellerTradeParty")),
        buyer=_cii_party(_find(agreement, "BuyerTradeParty")),
        account=account,
        bic=bic,
        lines=lines,
        allowances_charges=[
            AllowanceCharge(
                is_charge=_text(a, "ChargeIndicator", "Indicator") == "true",
                amount=_text(a, "ActualAmount") or "0",
                reason=_text(a, "Reason"),
            )
            for a in _children(settlement, "SpecifiedTradeAllowanceCharge")
        ],
        tax_groups=[
            TaxGroup(
                category=_text(t, "CategoryCode"),
                rate=_text(t, "RateApplicablePercent"),
                taxable=_text(t, "BasisAmount"),
                tax=_text(t, "CalculatedAmount"),
            )
            for t in _children(settlement, "ApplicableTradeTax")
        ],
        line_total=_text(totals, "LineTotalAmount"),
        net_total=_text(totals, "TaxBasisTotalAmount"),
        tax_total=_amount_in(_children(totals, "TaxTotalAmount"), currency),
        gross_total=_text(totals, "GrandTotalAmount"),
        prepaid=_text(totals, "TotalPrepaidAmount"),
        rounding=_text(totals, "RoundingAmount"),
        amount_due=_text(totals, "DuePayableAmount"),
    )


def parse_invoice_xml(data: bytes) -> StructuredInvoice:
    root = ET.fromstring(data)
    name = _local(root.tag)
    if name in ("Invoice", "CreditNote"):
        return _parse_ubl(root)
    if name == "CrossIndustryInvoice":
        return _parse_cii(root)
    raise ValueError(f"not a UBL or CII invoice: root element {name!r}")


# --- rendering -------------------------------------------------------------------------------------


class _Page:
    """Text being written, and where each field's value landed in it."""

    def __init__(self) -> None:
        self.text = ""
        self.spans: dict[str, tuple[int, int]] = {}

    def line(self, *parts: str | tuple[str, str | None], width: list[int] | None = None) -> None:
        """Append one line. A part is literal text or ``(field path, value)``; with ``width``,
        each part is padded to its column."""
        for index, part in enumerate(parts):
            literal, path = (part, None) if isinstance(part, str) else (part[1] or "", part[0])
            if path and literal:
                self.spans[path] = (len(self.text), len(self.text) + len(literal))
            self.text += literal
            if width and index < len(parts) - 1:
                self.text += " " * max(1, width[index] - len(literal))
        self.text += "\n"

    def blank(self) -> None:
        self.text += "\n"


def _address(party: Party) -> list[str]:
    rows = [party.street or "", " ".join(p for p in (party.postcode, party.city) if p)]
    if party.country:
        rows.append(party.country)
    return [row for row in rows if row]


def render_text(invoice: StructuredInvoice) -> tuple[str, dict[str, tuple[int, int]]]:
    """The invoice as printed text, and the span of every field value printed in it."""
    page = _Page()
    title = "CREDIT NOTE" if invoice.is_credit_note else "INVOICE"
    page.line(("document_type", title), f" (type {invoice.type_code})" if invoice.type_code else "")
    page.blank()
    page.line("Seller: ", ("supplier.name", invoice.seller.name))
    for row in _address(invoice.seller):
        page.line(row)
    if invoice.seller.vat_id:
        page.line("VAT ID: ", ("supplier.vat_id", invoice.seller.vat_id))
    page.blank()
    page.line("Bill to: ", invoice.buyer.name or "")
    for row in _address(invoice.buyer):
        page.line(row)
    if invoice.buyer.vat_id:
        page.line("Customer VAT ID: ", invoice.buyer.vat_id)
    page.blank()
    page.line("Invoice number: ", ("invoice_number", invoice.number))
    page.line("Invoice date: ", ("issue_date", invoice.issue_date))
    if invoice.due_date:
        page.line("Due date: ", ("due_date", invoice.due_date))
    page.line("Currency: ", ("currency", invoice.currency))
    page.blank()

    if invoice.lines:
        widths = [5, 42, 12, 14, 8]
        page.line("Pos", "Description", "Quantity", "Unit price", "VAT %", "Net amount", width=widths)
        for index, line in enumerate(invoice.lines):
            prefix = f"lines[{index}]"
            price = line.unit_price or ""
            page.line(
                line.line_id or str(index + 1),
                (f"{prefix}.description", (line.name or "")[:40]),
                (f"{prefix}.quantity", line.quantity),
                (f"{prefix}.unit_price", price),
                (f"{prefix}.tax_rate", line.tax_rate),
                (f"{prefix}.net_amount", line.net_amount),
                width=widths,
            )
            if line.base_quantity and line.base_quantity not in ("1", "1.0", "1.00", "1.0000"):
                page.line("", f"(unit price per {line.base_quantity} {line.unit or 'units'})", width=[5])
        page.blank()
        if invoice.line_total:
            page.line("Sum of lines: ", invoice.line_total)
    for entry in invoice.allowances_charges:
        label = "Charge" if entry.is_charge else "Allowance"
        sign = "" if entry.is_charge else "-"
        page.line(f"{label}{': ' + entry.reason if entry.reason else ''}  {sign}{entry.amount}")
    page.line("Net total: ", ("totals.net", invoice.net_total))
    for group in invoice.tax_groups:
        page.line(f"VAT {group.category or ''} {group.rate or '0'} % on {group.taxable or ''}: {group.tax or ''}")
    if invoice.tax_total is not None:
        page.line("Total VAT: ", ("totals.tax", invoice.tax_total))
    page.line("Total: ", ("totals.gross", invoice.gross_total))
    if invoice.prepaid:
        page.line("Prepaid: ", ("totals.prepaid", invoice.prepaid))
    if invoice.rounding:
        page.line("Rounding: ", invoice.rounding)
    page.line("Amount due: ", ("totals.amount_due", invoice.amount_due))
    page.blank()
    if invoice.account:
        label = "IBAN: " if _IBAN_SHAPE.fullmatch(re.sub(r"\s", "", invoice.account)) else "Account: "
        page.line(
            "Payment by transfer to ",
            label,
            ("supplier.iban", invoice.account) if label == "IBAN: " else invoice.account,
        )
        if invoice.bic:
            page.line("BIC: ", invoice.bic)
    return page.text, page.spans


def _field(
    path: str, value: str | None, text: str, spans: dict[str, tuple[int, int]], normalize=lambda v: v
) -> dict[str, Any]:
    if value is None or path not in spans:
        return {"value": None, "evidence": None}
    start, end = spans[path]
    return {"value": normalize(value), "evidence": {"page": 1, "start": start, "end": end, "quote": text[start:end]}}


def truth_as_invoice_v1(invoice: StructuredInvoice, text: str, spans: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """The XML's values as a correct ``invoice.v1`` answer, every value evidenced in ``text``."""

    def f(path: str, value: str | None, normalize=lambda v: v) -> dict[str, Any]:
        return _field(path, value, text, spans, normalize)

    def compact(v: str) -> str:
        return re.sub(r"\s", "", v)

    def number(v: str) -> str:  # invoice.v1 decimal strings: "64." as written in one XML is "64".
        return format(Decimal(v), "f")

    lines = []
    for index, line in enumerate(invoice.lines):
        prefix = f"lines[{index}]"
        lines.append(
            {
                "description": f(f"{prefix}.description", (line.name or "")[:40] or None),
                "quantity": f(f"{prefix}.quantity", line.quantity, number),
                "unit_price": f(f"{prefix}.unit_price", line.unit_price, number),
                "net_amount": f(f"{prefix}.net_amount", line.net_amount, number),
                "tax_rate": f(f"{prefix}.tax_rate", line.tax_rate, number),
                "tax_amount": {"value": None, "evidence": None},  # EN 16931 has no line VAT amount
            }
        )
    return {
        "schema": "invoice.v1",
        "document_type": f("document_type", "credit_note" if invoice.is_credit_note else "invoice"),
        "supplier": {
            "name": f("supplier.name", invoice.seller.name),
            "vat_id": f("supplier.vat_id", invoice.seller.vat_id),
            "iban": f("supplier.iban", invoice.account, compact),
        },
        "invoice_number": f("invoice_number", invoice.number),
        "issue_date": f("issue_date", invoice.issue_date),
        "due_date": f("due_date", invoice.due_date),
        "currency": f("currency", invoice.currency),
        "lines": lines,
        "totals": {
            "net": f("totals.net", invoice.net_total, number),
            "tax": f("totals.tax", invoice.tax_total, number),
            "gross": f("totals.gross", invoice.gross_total, number),
            "prepaid": f("totals.prepaid", invoice.prepaid, number),
            "amount_due": f("totals.amount_due", invoice.amount_due, number),
        },
    }


@dataclass(frozen=True)
class RenderedInvoice:
    text: str
    truth: dict[str, Any]  # invoice.v1 with exact evidence
    structured: StructuredInvoice


def render_invoice_xml(data: bytes) -> RenderedInvoice:
    structured = parse_invoice_xml(data)
    text, spans = render_text(structured)
    return RenderedInvoice(text=text, truth=truth_as_invoice_v1(structured, text, spans), structured=structured)


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        print(render_invoice_xml(Path(argument).read_bytes()).text)
