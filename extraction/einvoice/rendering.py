"""An e-invoice printed as the plain text of an invoice, and where each value landed.

The text is what a reviewer reads and what a language model would read if a tenant asks for
one; it is also the page every e-invoice field's evidence points into. Values are printed
exactly as the XML writes them (amounts with a dot, dates as YYYY-MM-DD), so each evidence
quote is the value itself and re-finding it needs no reading conventions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from extraction.einvoice.model import EInvoice, Party, Read

_IBAN_SHAPE = re.compile(r"[A-Z]{2}\d{2}[A-Z0-9]{10,30}")
_LINE_COLUMNS = [5, 42, 12, 14, 8]


def iban_of(account: Read) -> str | None:
    """The account id as an IBAN without spaces, if it is shaped like one (BT-84 may be proprietary)."""
    compact = re.sub(r"\s", "", account.text)
    return compact if _IBAN_SHAPE.fullmatch(compact) else None


@dataclass
class Rendering:
    text: str = ""
    # Field path ("totals.gross", "lines[0].quantity") -> (start, end) of its value in text.
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Field path -> the XML element it was read from.
    elements: dict[str, str] = field(default_factory=dict)

    def line(self, *parts: str | tuple[str, Read | None], widths: list[int] | None = None) -> None:
        """Append one line. A part is literal text or ``(field path, value)``; with ``widths``,
        the first parts are padded to their columns."""
        for index, part in enumerate(parts):
            if isinstance(part, str):
                literal = part
            else:
                path, read = part
                literal = read.text if read is not None else ""
                if read is not None and literal:
                    self.spans[path] = (len(self.text), len(self.text) + len(literal))
                    self.elements[path] = read.path
            self.text += literal
            if widths and index < min(len(widths), len(parts) - 1):
                self.text += " " * max(1, widths[index] - len(literal))
        self.text += "\n"

    def blank(self) -> None:
        self.text += "\n"


def _address(party: Party) -> list[str]:
    town = " ".join(read.text for read in (party.postcode, party.city) if read)
    rows = [party.street.text if party.street else "", town, party.country.text if party.country else ""]
    return [row for row in rows if row]


def _text(read: Read | None) -> str:
    return read.text if read is not None else ""


def render(invoice: EInvoice) -> Rendering:
    page = Rendering()
    title = Read(text="CREDIT NOTE" if invoice.is_credit_note else "INVOICE", path=_type_path(invoice))
    page.line(("document_type", title), f" (type {invoice.type_code.text})" if invoice.type_code else "")
    page.line(f"Electronic invoice: {invoice.profile}")
    page.blank()
    page.line("Seller: ", ("supplier.name", invoice.seller.name))
    for row in _address(invoice.seller):
        page.line(row)
    if invoice.seller.vat_id:
        page.line(_tax_id_label(invoice.seller.vat_id), ("supplier.vat_id", invoice.seller.vat_id))
    if invoice.seller.tax_registration_id:
        page.line("Tax number: ", ("supplier.tax_registration_id", invoice.seller.tax_registration_id))
    page.blank()
    page.line("Bill to: ", ("buyer.name", invoice.buyer.name))
    for row in _address(invoice.buyer):
        page.line(row)
    if invoice.buyer.vat_id:
        page.line("Customer " + _tax_id_label(invoice.buyer.vat_id), ("buyer.vat_id", invoice.buyer.vat_id))
    page.blank()
    page.line("Invoice number: ", ("invoice_number", invoice.number))
    page.line("Invoice date: ", ("issue_date", invoice.issue_date))
    if invoice.due_date:
        page.line("Due date: ", ("due_date", invoice.due_date))
    page.line("Currency: ", ("currency", invoice.currency))
    if invoice.buyer_reference:
        page.line("Buyer reference: ", ("buyer_reference", invoice.buyer_reference))
    if invoice.order_reference:
        page.line("Order reference: ", ("order_reference", invoice.order_reference))
    page.blank()
    _render_lines(page, invoice)
    _render_totals(page, invoice)
    if invoice.payment_terms:
        page.line("Payment terms: ", ("payment_terms", invoice.payment_terms))
    for account in invoice.accounts:
        if iban_of(account.account_id) is not None and "supplier.iban" not in page.spans:
            page.line("Payment by transfer to ", "IBAN: ", ("supplier.iban", account.account_id))
        else:
            page.line("Payment by transfer to ", "Account: ", account.account_id.text)
        if account.bic:
            page.line("BIC: ", account.bic.text)
    return page


def _tax_id_label(tax_id: Read) -> str:
    # UBL-TR states a VKN or TCKN as a party identification: a tax id, not a VAT id.
    return "Tax ID: " if "/cac:PartyIdentification" in tax_id.path else "VAT ID: "


def _type_path(invoice: EInvoice) -> str:
    if invoice.type_code is not None:
        return invoice.type_code.path
    return f"/{invoice.root}"


def _render_lines(page: Rendering, invoice: EInvoice) -> None:
    if not invoice.lines:
        return
    page.line("Pos", "Description", "Quantity", "Unit price", "VAT %", "Net amount", widths=_LINE_COLUMNS)
    for index, line in enumerate(invoice.lines):
        prefix = f"lines[{index}]"
        page.line(
            _text(line.line_id) or str(index + 1),
            (f"{prefix}.description", line.name),
            (f"{prefix}.quantity", line.quantity),
            (f"{prefix}.unit_price", line.unit_price),
            (f"{prefix}.tax_rate", line.tax_rate),
            (f"{prefix}.net_amount", line.net_amount),
            widths=_LINE_COLUMNS,
        )
        base = _text(line.base_quantity)
        if base and base not in ("1", "1.0", "1.00", "1.0000"):
            page.line("", f"(unit price per {base} {line.unit or 'units'})", widths=[5])
        for number, entry in enumerate(line.allowances_charges):
            label = "line charge" if entry.is_charge else "line allowance"
            page.line(
                "",
                f"({label}{': ' + entry.reason.text if entry.reason else ''} ",
                (f"{prefix}.allowances_charges[{number}].amount", entry.amount),
                ")",
                widths=[5],
            )
    page.blank()


def _render_totals(page: Rendering, invoice: EInvoice) -> None:
    totals = invoice.totals
    if totals.line_total:
        page.line("Sum of lines: ", ("totals.line_total", totals.line_total))
    for number, entry in enumerate(invoice.allowances_charges):
        label = "Charge" if entry.is_charge else "Allowance"
        sign = "" if entry.is_charge else "-"
        rate = f" (VAT {_text(entry.tax_category)} {entry.tax_rate.text} %)" if entry.tax_rate else ""
        page.line(
            f"{label}{': ' + entry.reason.text if entry.reason else ''}  {sign}",
            (f"allowances_charges[{number}].amount", entry.amount),
            rate,
        )
    if totals.allowance_total:
        page.line("Total allowances: ", ("totals.allowance_total", totals.allowance_total))
    if totals.charge_total:
        page.line("Total charges: ", ("totals.charge_total", totals.charge_total))
    page.line("Net total: ", ("totals.net", totals.net_total))
    for number, group in enumerate(invoice.tax_breakdown):
        prefix = f"tax_breakdown[{number}]"
        page.line(
            f"VAT {_text(group.category)} {_text(group.rate) or '0'} % on ",
            (f"{prefix}.taxable_amount", group.taxable_amount),
            ": ",
            (f"{prefix}.tax_amount", group.tax_amount),
        )
        if group.exemption_reason or group.exemption_reason_code:
            page.line(
                "  exempt: ", " ".join(_text(r) for r in (group.exemption_reason_code, group.exemption_reason) if r)
            )
    if totals.tax_total is not None:
        page.line("Total VAT: ", ("totals.tax", totals.tax_total))
    page.line("Total: ", ("totals.gross", totals.gross_total))
    if totals.prepaid:
        page.line("Prepaid: ", ("totals.prepaid", totals.prepaid))
    if totals.rounding:
        page.line("Rounding: ", ("totals.rounding", totals.rounding))
    page.line("Amount due: ", ("totals.amount_due", totals.amount_due))
    page.blank()
