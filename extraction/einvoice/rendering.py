"""An e-invoice printed as the plain text of an invoice, and where each value landed.

The text is what a reviewer reads and what a language model would read if a tenant asks for
one; it is also the page every e-invoice field's evidence points into. Values are printed
exactly as the XML writes them (amounts with a dot, dates as YYYY-MM-DD), so each evidence
quote is the value itself and re-finding it needs no reading conventions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from extraction.einvoice.model import AllowanceCharge, EInvoice, Party, Read

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
        if line.tax_category:
            page.line("", "(VAT category ", (f"{prefix}.tax_category", line.tax_category), ")", widths=[5])
        base = _text(line.base_quantity)
        if base and base not in ("1", "1.0", "1.00", "1.0000"):
            page.line(
                "",
                "(unit price per ",
                (f"{prefix}.price_base_quantity", line.base_quantity),
                f" {line.unit or 'units'})",
                widths=[5],
            )
        _render_adjustments(
            page,
            f"{prefix}.",
            line.allowances_charges,
            labels=("     (line allowance:", "     (line charge:"),
            closing=")",
        )
    page.blank()


def _render_adjustments(
    page: Rendering,
    prefix: str,
    entries: tuple[AllowanceCharge, ...],
    *,
    labels: tuple[str, str] = ("Allowance", "Charge"),
    closing: str = "",
) -> None:
    """Allowances and charges, numbered apart as invoice.v2 lists them (BG-20/BG-21, BG-27/BG-28).
    A line's are notes in parentheses under it, as a printed invoice shows them, not more lines."""
    counts = {"allowances": 0, "charges": 0}
    for entry in entries:
        kind = "charges" if entry.is_charge else "allowances"
        path = f"{prefix}{kind}[{counts[kind]}]"
        counts[kind] += 1
        label = labels[1] if entry.is_charge else labels[0]
        parts: list[str | tuple[str, Read | None]] = [label]
        if entry.reason:
            parts += [" " if label.endswith(":") else ": ", (f"{path}.reason", entry.reason)]
        if entry.reason_code:
            parts += [" [code ", (f"{path}.reason_code", entry.reason_code), "]"]
        parts += ["  " + ("" if entry.is_charge else "-"), (f"{path}.amount", entry.amount)]
        if entry.percentage or entry.base_amount:
            parts += [" ("]
            if entry.percentage:
                parts += [(f"{path}.percentage", entry.percentage), " %"]
            if entry.base_amount:
                parts += [" of " if entry.percentage else "base ", (f"{path}.base_amount", entry.base_amount)]
            parts += [")"]
        if entry.tax_category or entry.tax_rate:
            parts += [" VAT "]
            if entry.tax_category:
                parts += [(f"{path}.tax_category", entry.tax_category), " "]
            if entry.tax_rate:
                parts += [(f"{path}.tax_rate", entry.tax_rate), " %"]
        page.line(*parts, closing)


def _render_totals(page: Rendering, invoice: EInvoice) -> None:
    totals = invoice.totals
    if totals.line_total:
        page.line("Sum of lines: ", ("totals.line_total", totals.line_total))
    _render_adjustments(page, "", invoice.allowances_charges)
    if totals.allowance_total:
        page.line("Total allowances: ", ("totals.allowance_total", totals.allowance_total))
    if totals.charge_total:
        page.line("Total charges: ", ("totals.charge_total", totals.charge_total))
    page.line("Net total: ", ("totals.net", totals.net_total))
    for number, group in enumerate(invoice.tax_breakdown):
        prefix = f"tax_breakdown[{number}]"
        page.line(
            "VAT ",
            (f"{prefix}.category", group.category),
            " " if group.category else "",
            (f"{prefix}.rate", group.rate),
            " % on " if group.rate else "% on ",
            (f"{prefix}.taxable_amount", group.taxable_amount),
            ": ",
            (f"{prefix}.tax_amount", group.tax_amount),
        )
        if group.exemption_reason or group.exemption_reason_code:
            parts: list[str | tuple[str, Read | None]] = ["  exempt:"]
            if group.exemption_reason_code:
                parts += [" ", (f"{prefix}.exemption_reason_code", group.exemption_reason_code)]
            if group.exemption_reason:
                parts += [" ", (f"{prefix}.exemption_reason", group.exemption_reason)]
            page.line(*parts)
    if totals.tax_total is not None:
        page.line("Total VAT: ", ("totals.tax", totals.tax_total))
    page.line("Total: ", ("totals.gross", totals.gross_total))
    if totals.prepaid:
        page.line("Prepaid: ", ("totals.prepaid", totals.prepaid))
    if totals.rounding:
        page.line("Rounding: ", ("totals.rounding", totals.rounding))
    page.line("Amount due: ", ("totals.amount_due", totals.amount_due))
    page.blank()
