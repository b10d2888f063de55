"""UBL 2.1 ``Invoice`` and ``CreditNote``: XRechnung, Peppol BIS Billing 3.0, EN 16931, UBL-TR.

Paths follow EN 16931-3-2 (the UBL syntax binding). UBL-TR, Turkey's e-Fatura (GİB's
customization ``TR1.2``), differs where this module says so: the seller's tax id is a
``PartyIdentification`` with scheme VKN (companies) or TCKN (people), a VAT rate sits on
``TaxSubtotal/Percent`` and a line's on its own ``TaxTotal``, and KDV has no category code.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from extraction.einvoice.elements import Elements
from extraction.einvoice.model import (
    AllowanceCharge,
    EInvoice,
    Line,
    Party,
    PaymentAccount,
    Read,
    TaxSubtotal,
    Totals,
    items_and_layout,
)

UBL_INVOICE = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
UBL_CREDIT_NOTE = "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"
# UBL-TR ids a person by TCKN and a company by VKN; both are the party's tax id.
_TURKISH_TAX_ID_SCHEMES = ("VKN", "TCKN")


def _profile(specification: str | None, profile_id: str | None) -> str:
    spec = (specification or "").lower()
    if "xrechnung" in spec:
        return "XRechnung (UBL)"
    if "peppol" in spec:
        return "Peppol BIS Billing 3.0"
    if spec.startswith("tr1"):
        return "UBL-TR e-Arşiv" if (profile_id or "").upper() == "EARSIVFATURA" else "UBL-TR e-Fatura"
    if spec.startswith("urn:cen.eu:en16931"):
        return "EN 16931 (UBL)"
    return "UBL 2.1"


def _party(doc: Elements, party: ET.Element | None) -> Party:
    vat_id = tax_registration_id = None
    for scheme in doc.children(party, "PartyTaxScheme"):
        company_id = doc.read(scheme, "CompanyID")
        if (doc.read(scheme, "TaxScheme", "ID") or Read("", "")).text.upper() == "VAT":
            vat_id = vat_id or company_id
        else:
            tax_registration_id = tax_registration_id or company_id
    for identification in doc.children(party, "PartyIdentification"):
        element = doc.find(identification, "ID")
        if element is not None and (element.get("schemeID") or "").upper() in _TURKISH_TAX_ID_SCHEMES:
            vat_id = vat_id or doc.read_element(element)
    address = doc.find(party, "PostalAddress")
    return Party(
        name=doc.first(
            doc.read(party, "PartyLegalEntity", "RegistrationName"),
            doc.read(party, "PartyName", "Name"),
            _person_name(doc, doc.find(party, "Person")),
        ),
        vat_id=vat_id,
        tax_registration_id=tax_registration_id,
        street=doc.read(address, "StreetName"),
        city=doc.read(address, "CityName"),
        postcode=doc.read(address, "PostalZone"),
        country=doc.first(doc.read(address, "Country", "IdentificationCode"), doc.read(address, "Country", "Name")),
    )


def _person_name(doc: Elements, person: ET.Element | None) -> Read | None:
    parts = [read.text for read in (doc.read(person, "FirstName"), doc.read(person, "FamilyName")) if read]
    return Read(text=" ".join(parts), path=doc.path(person)) if person is not None and parts else None


def _allowance_charge(doc: Elements, entry: ET.Element) -> AllowanceCharge:
    return AllowanceCharge(
        is_charge=(doc.read(entry, "ChargeIndicator") or Read("", "")).text.lower() == "true",
        amount=doc.read(entry, "Amount"),
        base_amount=doc.read(entry, "BaseAmount"),
        percentage=doc.read(entry, "MultiplierFactorNumeric"),
        reason=doc.read(entry, "AllowanceChargeReason"),
        reason_code=doc.read(entry, "AllowanceChargeReasonCode"),
        tax_category=doc.read(entry, "TaxCategory", "ID"),
        tax_rate=doc.read(entry, "TaxCategory", "Percent"),
    )


def _line(doc: Elements, line: ET.Element, credit: bool) -> Line:
    quantity = doc.find(line, "CreditedQuantity" if credit else "InvoicedQuantity")
    category = doc.find(line, "Item", "ClassifiedTaxCategory")
    turkish_tax = doc.find(line, "TaxTotal", "TaxSubtotal")
    return Line(
        line_id=doc.read(line, "ID"),
        name=doc.read(line, "Item", "Name"),
        quantity=doc.read_element(quantity),
        unit=quantity.get("unitCode") if quantity is not None else None,
        unit_price=doc.read(line, "Price", "PriceAmount"),
        base_quantity=doc.read(line, "Price", "BaseQuantity"),
        net_amount=doc.read(line, "LineExtensionAmount"),
        tax_category=doc.read(category, "ID"),
        tax_rate=doc.first(doc.read(category, "Percent"), doc.read(turkish_tax, "Percent")),
        allowances_charges=tuple(_allowance_charge(doc, entry) for entry in doc.children(line, "AllowanceCharge")),
    )


def _in_currency(elements: list[ET.Element], currency: Read | None) -> ET.Element | None:
    """The element whose currencyID is the invoice currency (BT-110, not BT-111), else the first."""
    for element in elements:
        if currency is not None and element.get("currencyID") == currency.text:
            return element
    return elements[0] if elements else None


def read_ubl(doc: Elements) -> EInvoice:
    root = doc.root
    credit = root.tag == f"{{{UBL_CREDIT_NOTE}}}CreditNote"
    items, layout = items_and_layout(
        _line(doc, line, credit) for line in doc.children(root, "CreditNoteLine" if credit else "InvoiceLine")
    )
    currency = doc.read(root, "DocumentCurrencyCode")
    specification = doc.read(root, "CustomizationID")
    means = doc.children(root, "PaymentMeans")
    tax_totals = doc.children(root, "TaxTotal")
    tax_total = _in_currency([amount for t in tax_totals for amount in doc.children(t, "TaxAmount")], currency)
    main_tax_total = next((t for t in tax_totals if tax_total in list(t)), None)
    totals = doc.find(root, "LegalMonetaryTotal")
    return EInvoice(
        syntax="UBL",
        root="CreditNote" if credit else "Invoice",
        specification=specification.text if specification else None,
        profile=_profile(specification.text if specification else None, _text(doc.read(root, "ProfileID"))),
        type_code=doc.read(root, "CreditNoteTypeCode" if credit else "InvoiceTypeCode"),
        number=doc.read(root, "ID"),
        issue_date=doc.read(root, "IssueDate"),
        due_date=doc.first(doc.read(root, "DueDate"), *(doc.read(m, "PaymentDueDate") for m in means)),
        currency=currency,
        tax_currency=doc.read(root, "TaxCurrencyCode"),
        buyer_reference=doc.read(root, "BuyerReference"),
        order_reference=doc.read(root, "OrderReference", "ID"),
        payment_terms=doc.read(root, "PaymentTerms", "Note"),
        seller=_party(doc, doc.find(root, "AccountingSupplierParty", "Party")),
        buyer=_party(doc, doc.find(root, "AccountingCustomerParty", "Party")),
        accounts=tuple(
            PaymentAccount(
                account_id=account_id, bic=doc.read(m, "PayeeFinancialAccount", "FinancialInstitutionBranch", "ID")
            )
            for m in means
            if (account_id := doc.read(m, "PayeeFinancialAccount", "ID")) is not None
        ),
        lines=items,
        layout_lines=layout,
        third_party_payments=tuple(
            paid
            for entry in doc.children(root, "PrepaidPayment")
            if (paid := doc.read(entry, "PaidAmount")) is not None
        ),
        allowances_charges=tuple(_allowance_charge(doc, entry) for entry in doc.children(root, "AllowanceCharge")),
        tax_breakdown=tuple(
            TaxSubtotal(
                category=doc.read(subtotal, "TaxCategory", "ID"),
                rate=doc.first(doc.read(subtotal, "TaxCategory", "Percent"), doc.read(subtotal, "Percent")),
                taxable_amount=doc.read(subtotal, "TaxableAmount"),
                tax_amount=doc.read(subtotal, "TaxAmount"),
                exemption_reason=doc.read(subtotal, "TaxCategory", "TaxExemptionReason"),
                exemption_reason_code=doc.read(subtotal, "TaxCategory", "TaxExemptionReasonCode"),
            )
            for subtotal in doc.children(main_tax_total, "TaxSubtotal")
        ),
        totals=Totals(
            line_total=doc.read(totals, "LineExtensionAmount"),
            allowance_total=doc.read(totals, "AllowanceTotalAmount"),
            charge_total=doc.read(totals, "ChargeTotalAmount"),
            net_total=doc.read(totals, "TaxExclusiveAmount"),
            tax_total=doc.read_element(tax_total),
            gross_total=doc.read(totals, "TaxInclusiveAmount"),
            prepaid=doc.read(totals, "PrepaidAmount"),
            rounding=doc.read(totals, "PayableRoundingAmount"),
            amount_due=doc.read(totals, "PayableAmount"),
        ),
    )


def _text(read: Read | None) -> str | None:
    return read.text if read is not None else None
