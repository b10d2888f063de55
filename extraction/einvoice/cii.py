"""UN/CEFACT CII D16B ``CrossIndustryInvoice``: Factur-X/ZUGFeRD 2.x (every profile) and XRechnung.

Paths follow EN 16931-3-3 (the CII syntax binding). The profile is the guideline id, BT-24:
MINIMUM and BASIC WL carry no lines, so what is absent there is absent in the result too.
"""

from __future__ import annotations

import re
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

CII = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"

# BT-24 values of Factur-X 1.0 / ZUGFeRD 2.x (their specification, annex "guideline ids").
_PROFILES = (
    ("urn:factur-x.eu:1p0:minimum", "Factur-X MINIMUM"),
    ("urn:factur-x.eu:1p0:basicwl", "Factur-X BASIC WL"),
    ("urn:factur-x.eu:1p0:basic", "Factur-X BASIC"),
    ("urn:factur-x.eu:1p0:extended", "Factur-X EXTENDED"),
    ("urn:zugferd.de:2p0:minimum", "ZUGFeRD 2.0 MINIMUM"),
    ("urn:zugferd.de:2p0:basicwl", "ZUGFeRD 2.0 BASIC WL"),
    ("urn:zugferd.de:2p0:basic", "ZUGFeRD 2.0 BASIC"),
    ("urn:zugferd.de:2p0:extended", "ZUGFeRD 2.0 EXTENDED"),
    ("xrechnung", "XRechnung (CII)"),
)


def _profile(specification: str | None) -> str:
    spec = (specification or "").lower()
    for marker, name in _PROFILES:
        if marker in spec:
            return name
    if spec.startswith("urn:cen.eu:en16931"):
        return "Factur-X EN 16931"
    return "CII"


def _date(doc: Elements, element: ET.Element | None, *names: str) -> Read | None:
    """A ``udt:DateTimeString``; format 102 (YYYYMMDD, the only one EN 16931 allows) as YYYY-MM-DD."""
    read = doc.read(element, *names)
    if read is not None and re.fullmatch(r"\d{8}", read.text):
        return Read(text=f"{read.text[:4]}-{read.text[4:6]}-{read.text[6:]}", path=read.path)
    return read


def _party(doc: Elements, party: ET.Element | None) -> Party:
    registrations: dict[str, Read | None] = {}
    for registration in doc.children(party, "SpecifiedTaxRegistration"):
        element = doc.find(registration, "ID")
        if element is not None:
            registrations.setdefault((element.get("schemeID") or "").upper(), doc.read_element(element))
    address = doc.find(party, "PostalTradeAddress")
    return Party(
        name=doc.read(party, "Name"),
        vat_id=registrations.get("VA"),
        tax_registration_id=registrations.get("FC"),
        street=doc.read(address, "LineOne"),
        city=doc.read(address, "CityName"),
        postcode=doc.read(address, "PostcodeCode"),
        country=doc.read(address, "CountryID"),
    )


def _allowance_charge(doc: Elements, entry: ET.Element) -> AllowanceCharge:
    return AllowanceCharge(
        is_charge=(doc.read(entry, "ChargeIndicator", "Indicator") or Read("", "")).text.lower() == "true",
        amount=doc.read(entry, "ActualAmount"),
        base_amount=doc.read(entry, "BasisAmount"),
        percentage=doc.read(entry, "CalculationPercent"),
        reason=doc.read(entry, "Reason"),
        reason_code=doc.read(entry, "ReasonCode"),
        tax_category=doc.read(entry, "CategoryTradeTax", "CategoryCode"),
        tax_rate=doc.read(entry, "CategoryTradeTax", "RateApplicablePercent"),
    )


def _logistics_charge(doc: Elements, entry: ET.Element) -> AllowanceCharge:
    """A freight or packing charge as ZUGFeRD EXTENDED states it (counted in BT-108 like any charge)."""
    return AllowanceCharge(
        is_charge=True,
        amount=doc.read(entry, "AppliedAmount"),
        base_amount=None,
        percentage=None,
        reason=doc.read(entry, "Description"),
        reason_code=None,
        tax_category=doc.read(entry, "AppliedTradeTax", "CategoryCode"),
        tax_rate=doc.read(entry, "AppliedTradeTax", "RateApplicablePercent"),
    )


def _line(doc: Elements, item: ET.Element) -> Line:
    price = doc.find(item, "SpecifiedLineTradeAgreement", "NetPriceProductTradePrice")
    quantity = doc.find(item, "SpecifiedLineTradeDelivery", "BilledQuantity")
    settlement = doc.find(item, "SpecifiedLineTradeSettlement")
    return Line(
        line_id=doc.read(item, "AssociatedDocumentLineDocument", "LineID"),
        name=doc.read(item, "SpecifiedTradeProduct", "Name"),
        quantity=doc.read_element(quantity),
        unit=quantity.get("unitCode") if quantity is not None else None,
        unit_price=doc.read(price, "ChargeAmount"),
        base_quantity=doc.read(price, "BasisQuantity"),
        net_amount=doc.read(settlement, "SpecifiedTradeSettlementLineMonetarySummation", "LineTotalAmount"),
        tax_category=doc.read(settlement, "ApplicableTradeTax", "CategoryCode"),
        tax_rate=doc.read(settlement, "ApplicableTradeTax", "RateApplicablePercent"),
        allowances_charges=(
            *(_allowance_charge(doc, entry) for entry in doc.children(settlement, "SpecifiedTradeAllowanceCharge")),
            *(_logistics_charge(doc, entry) for entry in doc.children(settlement, "SpecifiedLogisticsServiceCharge")),
        ),
    )


def read_cii(doc: Elements) -> EInvoice:
    root = doc.root
    document = doc.find(root, "ExchangedDocument")
    transaction = doc.find(root, "SupplyChainTradeTransaction")
    items, layout = items_and_layout(
        _line(doc, item) for item in doc.children(transaction, "IncludedSupplyChainTradeLineItem")
    )
    agreement = doc.find(transaction, "ApplicableHeaderTradeAgreement")
    settlement = doc.find(transaction, "ApplicableHeaderTradeSettlement")
    currency = doc.read(settlement, "InvoiceCurrencyCode")
    specification = doc.read(root, "ExchangedDocumentContext", "GuidelineSpecifiedDocumentContextParameter", "ID")
    totals = doc.find(settlement, "SpecifiedTradeSettlementHeaderMonetarySummation")
    tax_totals = doc.children(totals, "TaxTotalAmount")
    tax_total = next(
        (t for t in tax_totals if currency is not None and t.get("currencyID") == currency.text),
        tax_totals[0] if tax_totals else None,
    )
    terms = doc.children(settlement, "SpecifiedTradePaymentTerms")
    return EInvoice(
        syntax="CII",
        root="CrossIndustryInvoice",
        specification=specification.text if specification else None,
        profile=_profile(specification.text if specification else None),
        type_code=doc.read(document, "TypeCode"),
        number=doc.read(document, "ID"),
        issue_date=_date(doc, document, "IssueDateTime", "DateTimeString"),
        due_date=doc.first(*(_date(doc, t, "DueDateDateTime", "DateTimeString") for t in terms)),
        currency=currency,
        tax_currency=doc.read(settlement, "TaxCurrencyCode"),
        buyer_reference=doc.read(agreement, "BuyerReference"),
        order_reference=doc.read(agreement, "BuyerOrderReferencedDocument", "IssuerAssignedID"),
        payment_terms=doc.first(*(doc.read(t, "Description") for t in terms)),
        seller=_party(doc, doc.find(agreement, "SellerTradeParty")),
        buyer=_party(doc, doc.find(agreement, "BuyerTradeParty")),
        accounts=tuple(
            PaymentAccount(
                account_id=account_id, bic=doc.read(m, "PayeeSpecifiedCreditorFinancialInstitution", "BICID")
            )
            for m in doc.children(settlement, "SpecifiedTradeSettlementPaymentMeans")
            if (
                account_id := doc.first(
                    doc.read(m, "PayeePartyCreditorFinancialAccount", "IBANID"),
                    doc.read(m, "PayeePartyCreditorFinancialAccount", "ProprietaryID"),
                )
            )
            is not None
        ),
        lines=items,
        layout_lines=layout,
        states_prepaid=not _profile(specification.text if specification else None).endswith(" MINIMUM"),
        allowances_charges=(
            *(_allowance_charge(doc, entry) for entry in doc.children(settlement, "SpecifiedTradeAllowanceCharge")),
            *(_logistics_charge(doc, entry) for entry in doc.children(settlement, "SpecifiedLogisticsServiceCharge")),
        ),
        tax_breakdown=tuple(
            TaxSubtotal(
                category=doc.read(tax, "CategoryCode"),
                rate=doc.read(tax, "RateApplicablePercent"),
                taxable_amount=doc.read(tax, "BasisAmount"),
                tax_amount=doc.read(tax, "CalculatedAmount"),
                exemption_reason=doc.read(tax, "ExemptionReason"),
                exemption_reason_code=doc.read(tax, "ExemptionReasonCode"),
            )
            for tax in doc.children(settlement, "ApplicableTradeTax")
        ),
        totals=Totals(
            line_total=doc.read(totals, "LineTotalAmount"),
            allowance_total=doc.read(totals, "AllowanceTotalAmount"),
            charge_total=doc.read(totals, "ChargeTotalAmount"),
            net_total=doc.read(totals, "TaxBasisTotalAmount"),
            tax_total=doc.read_element(tax_total),
            gross_total=doc.read(totals, "GrandTotalAmount"),
            prepaid=doc.read(totals, "TotalPrepaidAmount"),
            rounding=doc.read(totals, "RoundingAmount"),
            amount_due=doc.read(totals, "DuePayableAmount"),
        ),
    )
