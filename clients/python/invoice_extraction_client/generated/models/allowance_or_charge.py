from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.allowance_or_charge_amount import AllowanceOrChargeAmount
    from ..models.allowance_or_charge_base_amount import AllowanceOrChargeBaseAmount
    from ..models.allowance_or_charge_percentage import AllowanceOrChargePercentage
    from ..models.allowance_or_charge_reason import AllowanceOrChargeReason
    from ..models.allowance_or_charge_reason_code import AllowanceOrChargeReasonCode
    from ..models.allowance_or_charge_tax_category import AllowanceOrChargeTaxCategory
    from ..models.allowance_or_charge_tax_rate import AllowanceOrChargeTaxRate


T = TypeVar("T", bound="AllowanceOrCharge")


@_attrs_define
class AllowanceOrCharge:
    """An allowance (EN 16931 BG-20/BG-27) or a charge (BG-21/BG-28).

    Attributes:
        amount (AllowanceOrChargeAmount): A value and the exact text it was read from; both null if the document does
            not show it.
        base_amount (AllowanceOrChargeBaseAmount): A value and the exact text it was read from; both null if the
            document does not show it.
        percentage (AllowanceOrChargePercentage): A value and the exact text it was read from; both null if the document
            does not show it.
        reason (AllowanceOrChargeReason): A value and the exact text it was read from; both null if the document does
            not show it.
        reason_code (AllowanceOrChargeReasonCode): A value and the exact text it was read from; both null if the
            document does not show it.
        tax_category (AllowanceOrChargeTaxCategory): A value and the exact text it was read from; both null if the
            document does not show it.
        tax_rate (AllowanceOrChargeTaxRate): A value and the exact text it was read from; both null if the document does
            not show it.
    """

    amount: AllowanceOrChargeAmount
    base_amount: AllowanceOrChargeBaseAmount
    percentage: AllowanceOrChargePercentage
    reason: AllowanceOrChargeReason
    reason_code: AllowanceOrChargeReasonCode
    tax_category: AllowanceOrChargeTaxCategory
    tax_rate: AllowanceOrChargeTaxRate

    def to_dict(self) -> dict[str, Any]:
        amount = self.amount.to_dict()

        base_amount = self.base_amount.to_dict()

        percentage = self.percentage.to_dict()

        reason = self.reason.to_dict()

        reason_code = self.reason_code.to_dict()

        tax_category = self.tax_category.to_dict()

        tax_rate = self.tax_rate.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "amount": amount,
                "base_amount": base_amount,
                "percentage": percentage,
                "reason": reason,
                "reason_code": reason_code,
                "tax_category": tax_category,
                "tax_rate": tax_rate,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.allowance_or_charge_amount import AllowanceOrChargeAmount
        from ..models.allowance_or_charge_base_amount import AllowanceOrChargeBaseAmount
        from ..models.allowance_or_charge_percentage import AllowanceOrChargePercentage
        from ..models.allowance_or_charge_reason import AllowanceOrChargeReason
        from ..models.allowance_or_charge_reason_code import AllowanceOrChargeReasonCode
        from ..models.allowance_or_charge_tax_category import (
            AllowanceOrChargeTaxCategory,
        )
        from ..models.allowance_or_charge_tax_rate import AllowanceOrChargeTaxRate

        d = dict(src_dict)
        amount = AllowanceOrChargeAmount.from_dict(d.pop("amount"))

        base_amount = AllowanceOrChargeBaseAmount.from_dict(d.pop("base_amount"))

        percentage = AllowanceOrChargePercentage.from_dict(d.pop("percentage"))

        reason = AllowanceOrChargeReason.from_dict(d.pop("reason"))

        reason_code = AllowanceOrChargeReasonCode.from_dict(d.pop("reason_code"))

        tax_category = AllowanceOrChargeTaxCategory.from_dict(d.pop("tax_category"))

        tax_rate = AllowanceOrChargeTaxRate.from_dict(d.pop("tax_rate"))

        allowance_or_charge = cls(
            amount=amount,
            base_amount=base_amount,
            percentage=percentage,
            reason=reason,
            reason_code=reason_code,
            tax_category=tax_category,
            tax_rate=tax_rate,
        )

        return allowance_or_charge
