from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.allowance_or_charge import AllowanceOrCharge
    from ..models.invoice_v2_lines_item_description import InvoiceV2LinesItemDescription
    from ..models.invoice_v2_lines_item_net_amount import InvoiceV2LinesItemNetAmount
    from ..models.invoice_v2_lines_item_price_base_quantity import (
        InvoiceV2LinesItemPriceBaseQuantity,
    )
    from ..models.invoice_v2_lines_item_quantity import InvoiceV2LinesItemQuantity
    from ..models.invoice_v2_lines_item_tax_amount import InvoiceV2LinesItemTaxAmount
    from ..models.invoice_v2_lines_item_tax_category import InvoiceV2LinesItemTaxCategory
    from ..models.invoice_v2_lines_item_tax_rate import InvoiceV2LinesItemTaxRate
    from ..models.invoice_v2_lines_item_unit_price import InvoiceV2LinesItemUnitPrice


T = TypeVar("T", bound="InvoiceV2LinesItem")


@_attrs_define
class InvoiceV2LinesItem:
    """
    Attributes:
        description (InvoiceV2LinesItemDescription): A value and the exact text it was read from; both null if the
            document does not show it.
        quantity (InvoiceV2LinesItemQuantity): A value and the exact text it was read from; both null if the document
            does not show it.
        unit_price (InvoiceV2LinesItemUnitPrice): A value and the exact text it was read from; both null if the document
            does not show it.
        net_amount (InvoiceV2LinesItemNetAmount): A value and the exact text it was read from; both null if the document
            does not show it.
        tax_rate (InvoiceV2LinesItemTaxRate): A value and the exact text it was read from; both null if the document
            does not show it.
        tax_amount (InvoiceV2LinesItemTaxAmount): A value and the exact text it was read from; both null if the document
            does not show it.
        tax_category (InvoiceV2LinesItemTaxCategory): A value and the exact text it was read from; both null if the
            document does not show it.
        price_base_quantity (InvoiceV2LinesItemPriceBaseQuantity): A value and the exact text it was read from; both
            null if the document does not show it.
        allowances (list[AllowanceOrCharge]):
        charges (list[AllowanceOrCharge]):
    """

    description: InvoiceV2LinesItemDescription
    quantity: InvoiceV2LinesItemQuantity
    unit_price: InvoiceV2LinesItemUnitPrice
    net_amount: InvoiceV2LinesItemNetAmount
    tax_rate: InvoiceV2LinesItemTaxRate
    tax_amount: InvoiceV2LinesItemTaxAmount
    tax_category: InvoiceV2LinesItemTaxCategory
    price_base_quantity: InvoiceV2LinesItemPriceBaseQuantity
    allowances: list[AllowanceOrCharge]
    charges: list[AllowanceOrCharge]

    def to_dict(self) -> dict[str, Any]:
        description = self.description.to_dict()

        quantity = self.quantity.to_dict()

        unit_price = self.unit_price.to_dict()

        net_amount = self.net_amount.to_dict()

        tax_rate = self.tax_rate.to_dict()

        tax_amount = self.tax_amount.to_dict()

        tax_category = self.tax_category.to_dict()

        price_base_quantity = self.price_base_quantity.to_dict()

        allowances = []
        for allowances_item_data in self.allowances:
            allowances_item = allowances_item_data.to_dict()
            allowances.append(allowances_item)

        charges = []
        for charges_item_data in self.charges:
            charges_item = charges_item_data.to_dict()
            charges.append(charges_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "description": description,
                "quantity": quantity,
                "unit_price": unit_price,
                "net_amount": net_amount,
                "tax_rate": tax_rate,
                "tax_amount": tax_amount,
                "tax_category": tax_category,
                "price_base_quantity": price_base_quantity,
                "allowances": allowances,
                "charges": charges,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.allowance_or_charge import AllowanceOrCharge
        from ..models.invoice_v2_lines_item_description import (
            InvoiceV2LinesItemDescription,
        )
        from ..models.invoice_v2_lines_item_net_amount import (
            InvoiceV2LinesItemNetAmount,
        )
        from ..models.invoice_v2_lines_item_price_base_quantity import (
            InvoiceV2LinesItemPriceBaseQuantity,
        )
        from ..models.invoice_v2_lines_item_quantity import InvoiceV2LinesItemQuantity
        from ..models.invoice_v2_lines_item_tax_amount import (
            InvoiceV2LinesItemTaxAmount,
        )
        from ..models.invoice_v2_lines_item_tax_category import (
            InvoiceV2LinesItemTaxCategory,
        )
        from ..models.invoice_v2_lines_item_tax_rate import InvoiceV2LinesItemTaxRate
        from ..models.invoice_v2_lines_item_unit_price import (
            InvoiceV2LinesItemUnitPrice,
        )

        d = dict(src_dict)
        description = InvoiceV2LinesItemDescription.from_dict(d.pop("description"))

        quantity = InvoiceV2LinesItemQuantity.from_dict(d.pop("quantity"))

        unit_price = InvoiceV2LinesItemUnitPrice.from_dict(d.pop("unit_price"))

        net_amount = InvoiceV2LinesItemNetAmount.from_dict(d.pop("net_amount"))

        tax_rate = InvoiceV2LinesItemTaxRate.from_dict(d.pop("tax_rate"))

        tax_amount = InvoiceV2LinesItemTaxAmount.from_dict(d.pop("tax_amount"))

        tax_category = InvoiceV2LinesItemTaxCategory.from_dict(d.pop("tax_category"))

        price_base_quantity = InvoiceV2LinesItemPriceBaseQuantity.from_dict(d.pop("price_base_quantity"))

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

        invoice_v2_lines_item = cls(
            description=description,
            quantity=quantity,
            unit_price=unit_price,
            net_amount=net_amount,
            tax_rate=tax_rate,
            tax_amount=tax_amount,
            tax_category=tax_category,
            price_base_quantity=price_base_quantity,
            allowances=allowances,
            charges=charges,
        )

        return invoice_v2_lines_item
