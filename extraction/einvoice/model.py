"""An e-invoice as its XML states it: EN 16931's semantic model, each value with its element.

Values are the XML's own text (whitespace collapsed; CII's ``102`` dates as YYYY-MM-DD), never
converted to numbers here: :mod:`extraction.einvoice.answer` decides how a value becomes an
``invoice.v1`` field, and the reviewer sees what the supplier sent. Business terms (BT-n,
BG-n) are EN 16931-1's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

# UNTDID 1001 document type codes that credit the buyer (EN 16931 lists 381, 396, 81, 83,
# 532 and kin); UBL-TR's IADE (a return invoice) does the same.
CREDIT_NOTE_CODES = frozenset({"381", "81", "83", "261", "262", "296", "308", "396", "420", "458", "532", "IADE"})


@dataclass(frozen=True)
class Read:
    """One value and the element it was read from (an XPath with the standard prefixes)."""

    text: str
    path: str


@dataclass(frozen=True)
class Party:
    name: Read | None
    vat_id: Read | None  # BT-31 / BT-48; UBL-TR: the VKN or TCKN
    tax_registration_id: Read | None  # BT-32 (the national tax number, not a VAT id)
    street: Read | None
    city: Read | None
    postcode: Read | None
    country: Read | None


@dataclass(frozen=True)
class AllowanceCharge:
    """BG-20 (allowance) or BG-21 (charge) on the document, or BG-27/BG-28 on a line."""

    is_charge: bool
    amount: Read | None
    base_amount: Read | None
    percentage: Read | None
    reason: Read | None
    reason_code: Read | None
    tax_category: Read | None
    tax_rate: Read | None


@dataclass(frozen=True)
class Line:
    """BG-25."""

    line_id: Read | None
    name: Read | None
    quantity: Read | None
    unit: str | None
    unit_price: Read | None  # BT-146, the net price
    base_quantity: Read | None  # BT-149
    net_amount: Read | None  # BT-131
    tax_category: Read | None
    tax_rate: Read | None
    allowances_charges: tuple[AllowanceCharge, ...]


@dataclass(frozen=True)
class TaxSubtotal:
    """BG-23: one VAT category and rate."""

    category: Read | None
    rate: Read | None
    taxable_amount: Read | None
    tax_amount: Read | None
    exemption_reason: Read | None
    exemption_reason_code: Read | None


@dataclass(frozen=True)
class PaymentAccount:
    """BG-17: an account to pay to (an IBAN, or a proprietary id) and its bank."""

    account_id: Read
    bic: Read | None


@dataclass(frozen=True)
class Totals:
    """BG-22."""

    line_total: Read | None  # BT-106
    allowance_total: Read | None  # BT-107
    charge_total: Read | None  # BT-108
    net_total: Read | None  # BT-109
    tax_total: Read | None  # BT-110, in the invoice currency
    gross_total: Read | None  # BT-112
    prepaid: Read | None  # BT-113
    rounding: Read | None  # BT-114
    amount_due: Read | None  # BT-115


@dataclass(frozen=True)
class EInvoice:
    syntax: str  # "UBL" or "CII"
    root: str  # Invoice, CreditNote, CrossIndustryInvoice
    specification: str | None  # BT-24: the customization/guideline id (XRechnung, Peppol, a Factur-X profile, TR1.2)
    profile: str  # what BT-24 names, as people say it: "XRechnung", "Factur-X BASIC WL", "UBL-TR", ...
    type_code: Read | None  # BT-3
    number: Read | None  # BT-1
    issue_date: Read | None  # BT-2
    due_date: Read | None  # BT-9
    currency: Read | None  # BT-5
    tax_currency: Read | None  # BT-6
    buyer_reference: Read | None  # BT-10
    order_reference: Read | None  # BT-13
    payment_terms: Read | None  # BT-20
    seller: Party
    buyer: Party
    accounts: tuple[PaymentAccount, ...]
    lines: tuple[Line, ...]  # the items (see items_and_layout)
    allowances_charges: tuple[AllowanceCharge, ...]
    tax_breakdown: tuple[TaxSubtotal, ...]
    totals: Totals
    # Invoice lines that bill nothing: a section heading or a note written as a line.
    layout_lines: tuple[Line, ...] = ()
    # XRechnung's extension BG-DEX-09: what the buyer pays third parties through this invoice
    # (BT-DEX-002), part of the amount due: BT-115 = BT-112 − BT-113 + BT-114 + their sum.
    third_party_payments: tuple[Read, ...] = ()
    # False where the profile has no element for a prepaid amount (Factur-X and ZUGFeRD
    # MINIMUM): an amount due below the gross total is then a prepayment it cannot state.
    states_prepaid: bool = True

    @property
    def is_credit_note(self) -> bool:
        return self.root == "CreditNote" or (self.type_code is not None and self.type_code.text in CREDIT_NOTE_CODES)


def items_and_layout(lines: Iterable[Line]) -> tuple[tuple[Line, ...], tuple[Line, ...]]:
    """The XML's invoice lines split into items and layout. Some ERPs (Odoo among them) write a
    section heading ("--- Food Products ---") or a note as an invoice line with no quantity, no
    amount and no VAT category. EN 16931 gives every line a VAT category (BR-CO-04), so such a
    line is the printout's layout, not an item: posting it would put empty lines in the ERP and
    shift every item after it. It changes no total (its amount is zero) and is kept apart."""
    items: list[Line] = []
    layout: list[Line] = []
    for line in lines:
        bills_nothing = line.tax_category is None and _zero(line.quantity) and _zero(line.net_amount)
        (layout if bills_nothing else items).append(line)
    return tuple(items), tuple(layout)


def _zero(read: Read | None) -> bool:
    if read is None:
        return True
    try:
        return Decimal(read.text) == 0
    except InvalidOperation:
        return False  # written wrongly, so something was meant: an item for validation to judge
