from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..models.invoice_v2_schema import InvoiceV2Schema

if TYPE_CHECKING:
    from ..models.allowance_or_charge import AllowanceOrCharge
    from ..models.invoice_v2_buyer import InvoiceV2Buyer
    from ..models.invoice_v2_buyer_reference import InvoiceV2BuyerReference
    from ..models.invoice_v2_currency import InvoiceV2Currency
    from ..models.invoice_v2_document_type import InvoiceV2DocumentType
    from ..models.invoice_v2_due_date import InvoiceV2DueDate
    from ..models.invoice_v2_invoice_number import InvoiceV2InvoiceNumber
    from ..models.invoice_v2_issue_date import InvoiceV2IssueDate
    from ..models.invoice_v2_lines_item import InvoiceV2LinesItem
    from ..models.invoice_v2_order_reference import InvoiceV2OrderReference
    from ..models.invoice_v2_payment_terms import InvoiceV2PaymentTerms
    from ..models.invoice_v2_supplier import InvoiceV2Supplier
    from ..models.invoice_v2_tax_breakdown_item import InvoiceV2TaxBreakdownItem
    from ..models.invoice_v2_totals import InvoiceV2Totals


T = TypeVar("T", bound="InvoiceV2")


@_attrs_define
class InvoiceV2:
    """
    Attributes:
        schema (InvoiceV2Schema):
        document_type (InvoiceV2DocumentType): A value and the exact text it was read from; both null if the document
            does not show it.
        supplier (InvoiceV2Supplier):
        invoice_number (InvoiceV2InvoiceNumber): A value and the exact text it was read from; both null if the document
            does not show it.
        issue_date (InvoiceV2IssueDate): A value and the exact text it was read from; both null if the document does not
            show it.
        due_date (InvoiceV2DueDate): A value and the exact text it was read from; both null if the document does not
            show it.
        currency (InvoiceV2Currency): A value and the exact text it was read from; both null if the document does not
            show it.
        lines (list[InvoiceV2LinesItem]):
        totals (InvoiceV2Totals):
        buyer (InvoiceV2Buyer):
        buyer_reference (InvoiceV2BuyerReference): A value and the exact text it was read from; both null if the
            document does not show it.
        order_reference (InvoiceV2OrderReference): A value and the exact text it was read from; both null if the
            document does not show it.
        payment_terms (InvoiceV2PaymentTerms): A value and the exact text it was read from; both null if the document
            does not show it.
        allowances (list[AllowanceOrCharge]):
        charges (list[AllowanceOrCharge]):
        tax_breakdown (list[InvoiceV2TaxBreakdownItem]):
    """

    schema: InvoiceV2Schema
    document_type: InvoiceV2DocumentType
    supplier: InvoiceV2Supplier
    invoice_number: InvoiceV2InvoiceNumber
    issue_date: InvoiceV2IssueDate
    due_date: InvoiceV2DueDate
    currency: InvoiceV2Currency
    lines: list[InvoiceV2LinesItem]
    totals: InvoiceV2Totals
    buyer: InvoiceV2Buyer
    buyer_reference: InvoiceV2BuyerReference
    order_reference: InvoiceV2OrderReference
    payment_terms: InvoiceV2PaymentTerms
    allowances: list[AllowanceOrCharge]
    charges: list[AllowanceOrCharge]
    tax_breakdown: list[InvoiceV2TaxBreakdownItem]

    def to_dict(self) -> dict[str, Any]:
        schema = self.schema.value

        document_type = self.document_type.to_dict()

        supplier = self.supplier.to_dict()

        invoice_number = self.invoice_number.to_dict()

        issue_date = self.issue_date.to_dict()

        due_date = self.due_date.to_dict()

        currency = self.currency.to_dict()

        lines = []
        for lines_item_data in self.lines:
            lines_item = lines_item_data.to_dict()
            lines.append(lines_item)

        totals = self.totals.to_dict()

        buyer = self.buyer.to_dict()

        buyer_reference = self.buyer_reference.to_dict()

        order_reference = self.order_reference.to_dict()

        payment_terms = self.payment_terms.to_dict()

        allowances = []
        for allowances_item_data in self.allowances:
            allowances_item = allowances_item_data.to_dict()
            allowances.append(allowances_item)

        charges = []
        for charges_item_data in self.charges:
            charges_item = charges_item_data.to_dict()
            charges.append(charges_item)

        tax_breakdown = []
        for tax_breakdown_item_data in self.tax_breakdown:
            tax_breakdown_item = tax_breakdown_item_data.to_dict()
            tax_breakdown.append(tax_breakdown_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "schema": schema,
                "document_type": document_type,
                "supplier": supplier,
                "invoice_number": invoice_number,
                "issue_date": issue_date,
                "due_date": due_date,
                "currency": currency,
                "lines": lines,
                "totals": totals,
                "buyer": buyer,
                "buyer_reference": buyer_reference,
                "order_reference": order_reference,
                "payment_terms": payment_terms,
                "allowances": allowances,
                "charges": charges,
                "tax_breakdown": tax_breakdown,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.allowance_or_charge import AllowanceOrCharge
        from ..models.invoice_v2_buyer import InvoiceV2Buyer
        from ..models.invoice_v2_buyer_reference import InvoiceV2BuyerReference
        from ..models.invoice_v2_currency import InvoiceV2Currency
        from ..models.invoice_v2_document_type import InvoiceV2DocumentType
        from ..models.invoice_v2_due_date import InvoiceV2DueDate
        from ..models.invoice_v2_invoice_number import InvoiceV2InvoiceNumber
        from ..models.invoice_v2_issue_date import InvoiceV2IssueDate
        from ..models.invoice_v2_lines_item import InvoiceV2LinesItem
        from ..models.invoice_v2_order_reference import InvoiceV2OrderReference
        from ..models.invoice_v2_payment_terms import InvoiceV2PaymentTerms
        from ..models.invoice_v2_supplier import InvoiceV2Supplier
        from ..models.invoice_v2_tax_breakdown_item import InvoiceV2TaxBreakdownItem
        from ..models.invoice_v2_totals import InvoiceV2Totals

        d = dict(src_dict)
        schema = InvoiceV2Schema(d.pop("schema"))

        document_type = InvoiceV2DocumentType.from_dict(d.pop("document_type"))

        supplier = InvoiceV2Supplier.from_dict(d.pop("supplier"))

        invoice_number = InvoiceV2InvoiceNumber.from_dict(d.pop("invoice_number"))

        issue_date = InvoiceV2IssueDate.from_dict(d.pop("issue_date"))

        due_date = InvoiceV2DueDate.from_dict(d.pop("due_date"))

        currency = InvoiceV2Currency.from_dict(d.pop("currency"))

        lines = []
        _lines = d.pop("lines")
        for lines_item_data in _lines:
            lines_item = InvoiceV2LinesItem.from_dict(lines_item_data)

            lines.append(lines_item)

        totals = InvoiceV2Totals.from_dict(d.pop("totals"))

        buyer = InvoiceV2Buyer.from_dict(d.pop("buyer"))

        buyer_reference = InvoiceV2BuyerReference.from_dict(d.pop("buyer_reference"))

        order_reference = InvoiceV2OrderReference.from_dict(d.pop("order_reference"))

        payment_terms = InvoiceV2PaymentTerms.from_dict(d.pop("payment_terms"))

        allowances = []
        _allowances = d.pop("allowances")
        for allowances_item_data in _allowances:
            allowances_item = AllowanceOrCharge.from_dict(allowances_item_data)

            allowances.append(allowances_item)

        charges = []
        _charges = d.pop("charges")
        for charges_item_data in _charges:
            charges_item = AllowanceOrCharge.from_dict(charges_item_data)

            charges.append(charges_item)

        tax_breakdown = []
        _tax_breakdown = d.pop("tax_breakdown")
        for tax_breakdown_item_data in _tax_breakdown:
            tax_breakdown_item = InvoiceV2TaxBreakdownItem.from_dict(tax_breakdown_item_data)

            tax_breakdown.append(tax_breakdown_item)

        invoice_v2 = cls(
            schema=schema,
            document_type=document_type,
            supplier=supplier,
            invoice_number=invoice_number,
            issue_date=issue_date,
            due_date=due_date,
            currency=currency,
            lines=lines,
            totals=totals,
            buyer=buyer,
            buyer_reference=buyer_reference,
            order_reference=order_reference,
            payment_terms=payment_terms,
            allowances=allowances,
            charges=charges,
            tax_breakdown=tax_breakdown,
        )

        return invoice_v2
