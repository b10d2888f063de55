from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.invoice_v2_tax_breakdown_item_category import (
        InvoiceV2TaxBreakdownItemCategory,
    )
    from ..models.invoice_v2_tax_breakdown_item_exemption_reason import (
        InvoiceV2TaxBreakdownItemExemptionReason,
    )
    from ..models.invoice_v2_tax_breakdown_item_exemption_reason_code import (
        InvoiceV2TaxBreakdownItemExemptionReasonCode,
    )
    from ..models.invoice_v2_tax_breakdown_item_rate import InvoiceV2TaxBreakdownItemRate
    from ..models.invoice_v2_tax_breakdown_item_tax_amount import (
        InvoiceV2TaxBreakdownItemTaxAmount,
    )
    from ..models.invoice_v2_tax_breakdown_item_taxable_amount import (
        InvoiceV2TaxBreakdownItemTaxableAmount,
    )


T = TypeVar("T", bound="InvoiceV2TaxBreakdownItem")


@_attrs_define
class InvoiceV2TaxBreakdownItem:
    """One VAT category and rate (EN 16931 BG-23).

    Attributes:
        category (InvoiceV2TaxBreakdownItemCategory): A value and the exact text it was read from; both null if the
            document does not show it.
        rate (InvoiceV2TaxBreakdownItemRate): A value and the exact text it was read from; both null if the document
            does not show it.
        taxable_amount (InvoiceV2TaxBreakdownItemTaxableAmount): A value and the exact text it was read from; both null
            if the document does not show it.
        tax_amount (InvoiceV2TaxBreakdownItemTaxAmount): A value and the exact text it was read from; both null if the
            document does not show it.
        exemption_reason (InvoiceV2TaxBreakdownItemExemptionReason): A value and the exact text it was read from; both
            null if the document does not show it.
        exemption_reason_code (InvoiceV2TaxBreakdownItemExemptionReasonCode): A value and the exact text it was read
            from; both null if the document does not show it.
    """

    category: InvoiceV2TaxBreakdownItemCategory
    rate: InvoiceV2TaxBreakdownItemRate
    taxable_amount: InvoiceV2TaxBreakdownItemTaxableAmount
    tax_amount: InvoiceV2TaxBreakdownItemTaxAmount
    exemption_reason: InvoiceV2TaxBreakdownItemExemptionReason
    exemption_reason_code: InvoiceV2TaxBreakdownItemExemptionReasonCode

    def to_dict(self) -> dict[str, Any]:
        category = self.category.to_dict()

        rate = self.rate.to_dict()

        taxable_amount = self.taxable_amount.to_dict()

        tax_amount = self.tax_amount.to_dict()

        exemption_reason = self.exemption_reason.to_dict()

        exemption_reason_code = self.exemption_reason_code.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "category": category,
                "rate": rate,
                "taxable_amount": taxable_amount,
                "tax_amount": tax_amount,
                "exemption_reason": exemption_reason,
                "exemption_reason_code": exemption_reason_code,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.invoice_v2_tax_breakdown_item_category import (
            InvoiceV2TaxBreakdownItemCategory,
        )
        from ..models.invoice_v2_tax_breakdown_item_exemption_reason import (
            InvoiceV2TaxBreakdownItemExemptionReason,
        )
        from ..models.invoice_v2_tax_breakdown_item_exemption_reason_code import (
            InvoiceV2TaxBreakdownItemExemptionReasonCode,
        )
        from ..models.invoice_v2_tax_breakdown_item_rate import (
            InvoiceV2TaxBreakdownItemRate,
        )
        from ..models.invoice_v2_tax_breakdown_item_tax_amount import (
            InvoiceV2TaxBreakdownItemTaxAmount,
        )
        from ..models.invoice_v2_tax_breakdown_item_taxable_amount import (
            InvoiceV2TaxBreakdownItemTaxableAmount,
        )

        d = dict(src_dict)
        category = InvoiceV2TaxBreakdownItemCategory.from_dict(d.pop("category"))

        rate = InvoiceV2TaxBreakdownItemRate.from_dict(d.pop("rate"))

        taxable_amount = InvoiceV2TaxBreakdownItemTaxableAmount.from_dict(d.pop("taxable_amount"))

        tax_amount = InvoiceV2TaxBreakdownItemTaxAmount.from_dict(d.pop("tax_amount"))

        exemption_reason = InvoiceV2TaxBreakdownItemExemptionReason.from_dict(d.pop("exemption_reason"))

        exemption_reason_code = InvoiceV2TaxBreakdownItemExemptionReasonCode.from_dict(d.pop("exemption_reason_code"))

        invoice_v2_tax_breakdown_item = cls(
            category=category,
            rate=rate,
            taxable_amount=taxable_amount,
            tax_amount=tax_amount,
            exemption_reason=exemption_reason,
            exemption_reason_code=exemption_reason_code,
        )

        return invoice_v2_tax_breakdown_item
