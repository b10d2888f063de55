from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..models.invoice_v1_schema import InvoiceV1Schema

if TYPE_CHECKING:
    from ..models.invoice_v1_currency import InvoiceV1Currency
    from ..models.invoice_v1_document_type import InvoiceV1DocumentType
    from ..models.invoice_v1_due_date import InvoiceV1DueDate
    from ..models.invoice_v1_invoice_number import InvoiceV1InvoiceNumber
    from ..models.invoice_v1_issue_date import InvoiceV1IssueDate
    from ..models.invoice_v1_lines_item import InvoiceV1LinesItem
    from ..models.invoice_v1_supplier import InvoiceV1Supplier
    from ..models.invoice_v1_totals import InvoiceV1Totals


T = TypeVar("T", bound="InvoiceV1")


@_attrs_define
class InvoiceV1:
    """
    Attributes:
        schema (InvoiceV1Schema):
        document_type (InvoiceV1DocumentType): A value and the exact text it was read from; both null if the document
            does not show it.
        supplier (InvoiceV1Supplier):
        invoice_number (InvoiceV1InvoiceNumber): A value and the exact text it was read from; both null if the document
            does not show it.
        issue_date (InvoiceV1IssueDate): A value and the exact text it was read from; both null if the document does not
            show it.
        due_date (InvoiceV1DueDate): A value and the exact text it was read from; both null if the document does not
            show it.
        currency (InvoiceV1Currency): A value and the exact text it was read from; both null if the document does not
            show it.
        lines (list[InvoiceV1LinesItem]):
        totals (InvoiceV1Totals):
    """

    schema: InvoiceV1Schema
    document_type: InvoiceV1DocumentType
    supplier: InvoiceV1Supplier
    invoice_number: InvoiceV1InvoiceNumber
    issue_date: InvoiceV1IssueDate
    due_date: InvoiceV1DueDate
    currency: InvoiceV1Currency
    lines: list[InvoiceV1LinesItem]
    totals: InvoiceV1Totals

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
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.invoice_v1_currency import InvoiceV1Currency
        from ..models.invoice_v1_document_type import InvoiceV1DocumentType
        from ..models.invoice_v1_due_date import InvoiceV1DueDate
        from ..models.invoice_v1_invoice_number import InvoiceV1InvoiceNumber
        from ..models.invoice_v1_issue_date import InvoiceV1IssueDate
        from ..models.invoice_v1_lines_item import InvoiceV1LinesItem
        from ..models.invoice_v1_supplier import InvoiceV1Supplier
        from ..models.invoice_v1_totals import InvoiceV1Totals

        d = dict(src_dict)
        schema = InvoiceV1Schema(d.pop("schema"))

        document_type = InvoiceV1DocumentType.from_dict(d.pop("document_type"))

        supplier = InvoiceV1Supplier.from_dict(d.pop("supplier"))

        invoice_number = InvoiceV1InvoiceNumber.from_dict(d.pop("invoice_number"))

        issue_date = InvoiceV1IssueDate.from_dict(d.pop("issue_date"))

        due_date = InvoiceV1DueDate.from_dict(d.pop("due_date"))

        currency = InvoiceV1Currency.from_dict(d.pop("currency"))

        lines = []
        _lines = d.pop("lines")
        for lines_item_data in _lines:
            lines_item = InvoiceV1LinesItem.from_dict(lines_item_data)

            lines.append(lines_item)

        totals = InvoiceV1Totals.from_dict(d.pop("totals"))

        invoice_v1 = cls(
            schema=schema,
            document_type=document_type,
            supplier=supplier,
            invoice_number=invoice_number,
            issue_date=issue_date,
            due_date=due_date,
            currency=currency,
            lines=lines,
            totals=totals,
        )

        return invoice_v1
