from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.invoice_v1_lines_item_description import InvoiceV1LinesItemDescription
    from ..models.invoice_v1_lines_item_net_amount import InvoiceV1LinesItemNetAmount
    from ..models.invoice_v1_lines_item_quantity import InvoiceV1LinesItemQuantity
    from ..models.invoice_v1_lines_item_tax_amount import InvoiceV1LinesItemTaxAmount
    from ..models.invoice_v1_lines_item_tax_rate import InvoiceV1LinesItemTaxRate
    from ..models.invoice_v1_lines_item_unit_price import InvoiceV1LinesItemUnitPrice


T = TypeVar("T", bound="InvoiceV1LinesItem")


@_attrs_define
class InvoiceV1LinesItem:
    """
    Attributes:
        description (InvoiceV1LinesItemDescription): A value and the exact text it was read from; both null if the
            document does not show it.
        quantity (InvoiceV1LinesItemQuantity): A value and the exact text it was read from; both null if the document
            does not show it.
        unit_price (InvoiceV1LinesItemUnitPrice): A value and the exact text it was read from; both null if the document
            does not show it.
        net_amount (InvoiceV1LinesItemNetAmount): A value and the exact text it was read from; both null if the document
            does not show it.
        tax_rate (InvoiceV1LinesItemTaxRate): A value and the exact text it was read from; both null if the document
            does not show it.
        tax_amount (InvoiceV1LinesItemTaxAmount): A value and the exact text it was read from; both null if the document
            does not show it.
    """

    description: InvoiceV1LinesItemDescription
    quantity: InvoiceV1LinesItemQuantity
    unit_price: InvoiceV1LinesItemUnitPrice
    net_amount: InvoiceV1LinesItemNetAmount
    tax_rate: InvoiceV1LinesItemTaxRate
    tax_amount: InvoiceV1LinesItemTaxAmount

    def to_dict(self) -> dict[str, Any]:
        description = self.description.to_dict()

        quantity = self.quantity.to_dict()

        unit_price = self.unit_price.to_dict()

        net_amount = self.net_amount.to_dict()

        tax_rate = self.tax_rate.to_dict()

        tax_amount = self.tax_amount.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "description": description,
                "quantity": quantity,
                "unit_price": unit_price,
                "net_amount": net_amount,
                "tax_rate": tax_rate,
                "tax_amount": tax_amount,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.invoice_v1_lines_item_description import (
            InvoiceV1LinesItemDescription,
        )
        from ..models.invoice_v1_lines_item_net_amount import (
            InvoiceV1LinesItemNetAmount,
        )
        from ..models.invoice_v1_lines_item_quantity import InvoiceV1LinesItemQuantity
        from ..models.invoice_v1_lines_item_tax_amount import (
            InvoiceV1LinesItemTaxAmount,
        )
        from ..models.invoice_v1_lines_item_tax_rate import InvoiceV1LinesItemTaxRate
        from ..models.invoice_v1_lines_item_unit_price import (
            InvoiceV1LinesItemUnitPrice,
        )

        d = dict(src_dict)
        description = InvoiceV1LinesItemDescription.from_dict(d.pop("description"))

        quantity = InvoiceV1LinesItemQuantity.from_dict(d.pop("quantity"))

        unit_price = InvoiceV1LinesItemUnitPrice.from_dict(d.pop("unit_price"))

        net_amount = InvoiceV1LinesItemNetAmount.from_dict(d.pop("net_amount"))

        tax_rate = InvoiceV1LinesItemTaxRate.from_dict(d.pop("tax_rate"))

        tax_amount = InvoiceV1LinesItemTaxAmount.from_dict(d.pop("tax_amount"))

        invoice_v1_lines_item = cls(
            description=description,
            quantity=quantity,
            unit_price=unit_price,
            net_amount=net_amount,
            tax_rate=tax_rate,
            tax_amount=tax_amount,
        )

        return invoice_v1_lines_item
