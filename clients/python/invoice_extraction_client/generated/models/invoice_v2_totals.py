from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.invoice_v2_totals_allowance_total import InvoiceV2TotalsAllowanceTotal
    from ..models.invoice_v2_totals_amount_due import InvoiceV2TotalsAmountDue
    from ..models.invoice_v2_totals_charge_total import InvoiceV2TotalsChargeTotal
    from ..models.invoice_v2_totals_gross import InvoiceV2TotalsGross
    from ..models.invoice_v2_totals_line_total import InvoiceV2TotalsLineTotal
    from ..models.invoice_v2_totals_net import InvoiceV2TotalsNet
    from ..models.invoice_v2_totals_prepaid import InvoiceV2TotalsPrepaid
    from ..models.invoice_v2_totals_rounding import InvoiceV2TotalsRounding
    from ..models.invoice_v2_totals_tax import InvoiceV2TotalsTax


T = TypeVar("T", bound="InvoiceV2Totals")


@_attrs_define
class InvoiceV2Totals:
    """
    Attributes:
        net (InvoiceV2TotalsNet): A value and the exact text it was read from; both null if the document does not show
            it.
        tax (InvoiceV2TotalsTax): A value and the exact text it was read from; both null if the document does not show
            it.
        gross (InvoiceV2TotalsGross): A value and the exact text it was read from; both null if the document does not
            show it.
        prepaid (InvoiceV2TotalsPrepaid): A value and the exact text it was read from; both null if the document does
            not show it.
        amount_due (InvoiceV2TotalsAmountDue): A value and the exact text it was read from; both null if the document
            does not show it.
        line_total (InvoiceV2TotalsLineTotal): A value and the exact text it was read from; both null if the document
            does not show it.
        allowance_total (InvoiceV2TotalsAllowanceTotal): A value and the exact text it was read from; both null if the
            document does not show it.
        charge_total (InvoiceV2TotalsChargeTotal): A value and the exact text it was read from; both null if the
            document does not show it.
        rounding (InvoiceV2TotalsRounding): A value and the exact text it was read from; both null if the document does
            not show it.
    """

    net: InvoiceV2TotalsNet
    tax: InvoiceV2TotalsTax
    gross: InvoiceV2TotalsGross
    prepaid: InvoiceV2TotalsPrepaid
    amount_due: InvoiceV2TotalsAmountDue
    line_total: InvoiceV2TotalsLineTotal
    allowance_total: InvoiceV2TotalsAllowanceTotal
    charge_total: InvoiceV2TotalsChargeTotal
    rounding: InvoiceV2TotalsRounding

    def to_dict(self) -> dict[str, Any]:
        net = self.net.to_dict()

        tax = self.tax.to_dict()

        gross = self.gross.to_dict()

        prepaid = self.prepaid.to_dict()

        amount_due = self.amount_due.to_dict()

        line_total = self.line_total.to_dict()

        allowance_total = self.allowance_total.to_dict()

        charge_total = self.charge_total.to_dict()

        rounding = self.rounding.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "net": net,
                "tax": tax,
                "gross": gross,
                "prepaid": prepaid,
                "amount_due": amount_due,
                "line_total": line_total,
                "allowance_total": allowance_total,
                "charge_total": charge_total,
                "rounding": rounding,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.invoice_v2_totals_allowance_total import (
            InvoiceV2TotalsAllowanceTotal,
        )
        from ..models.invoice_v2_totals_amount_due import InvoiceV2TotalsAmountDue
        from ..models.invoice_v2_totals_charge_total import InvoiceV2TotalsChargeTotal
        from ..models.invoice_v2_totals_gross import InvoiceV2TotalsGross
        from ..models.invoice_v2_totals_line_total import InvoiceV2TotalsLineTotal
        from ..models.invoice_v2_totals_net import InvoiceV2TotalsNet
        from ..models.invoice_v2_totals_prepaid import InvoiceV2TotalsPrepaid
        from ..models.invoice_v2_totals_rounding import InvoiceV2TotalsRounding
        from ..models.invoice_v2_totals_tax import InvoiceV2TotalsTax

        d = dict(src_dict)
        net = InvoiceV2TotalsNet.from_dict(d.pop("net"))

        tax = InvoiceV2TotalsTax.from_dict(d.pop("tax"))

        gross = InvoiceV2TotalsGross.from_dict(d.pop("gross"))

        prepaid = InvoiceV2TotalsPrepaid.from_dict(d.pop("prepaid"))

        amount_due = InvoiceV2TotalsAmountDue.from_dict(d.pop("amount_due"))

        line_total = InvoiceV2TotalsLineTotal.from_dict(d.pop("line_total"))

        allowance_total = InvoiceV2TotalsAllowanceTotal.from_dict(d.pop("allowance_total"))

        charge_total = InvoiceV2TotalsChargeTotal.from_dict(d.pop("charge_total"))

        rounding = InvoiceV2TotalsRounding.from_dict(d.pop("rounding"))

        invoice_v2_totals = cls(
            net=net,
            tax=tax,
            gross=gross,
            prepaid=prepaid,
            amount_due=amount_due,
            line_total=line_total,
            allowance_total=allowance_total,
            charge_total=charge_total,
            rounding=rounding,
        )

        return invoice_v2_totals
