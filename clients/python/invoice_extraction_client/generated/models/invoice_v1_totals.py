from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.invoice_v1_totals_amount_due import InvoiceV1TotalsAmountDue
    from ..models.invoice_v1_totals_gross import InvoiceV1TotalsGross
    from ..models.invoice_v1_totals_net import InvoiceV1TotalsNet
    from ..models.invoice_v1_totals_prepaid import InvoiceV1TotalsPrepaid
    from ..models.invoice_v1_totals_tax import InvoiceV1TotalsTax


T = TypeVar("T", bound="InvoiceV1Totals")


@_attrs_define
class InvoiceV1Totals:
    """
    Attributes:
        net (InvoiceV1TotalsNet): A value and the exact text it was read from; both null if the document does not show
            it.
        tax (InvoiceV1TotalsTax): A value and the exact text it was read from; both null if the document does not show
            it.
        gross (InvoiceV1TotalsGross): A value and the exact text it was read from; both null if the document does not
            show it.
        prepaid (InvoiceV1TotalsPrepaid): A value and the exact text it was read from; both null if the document does
            not show it.
        amount_due (InvoiceV1TotalsAmountDue): A value and the exact text it was read from; both null if the document
            does not show it.
    """

    net: InvoiceV1TotalsNet
    tax: InvoiceV1TotalsTax
    gross: InvoiceV1TotalsGross
    prepaid: InvoiceV1TotalsPrepaid
    amount_due: InvoiceV1TotalsAmountDue

    def to_dict(self) -> dict[str, Any]:
        net = self.net.to_dict()

        tax = self.tax.to_dict()

        gross = self.gross.to_dict()

        prepaid = self.prepaid.to_dict()

        amount_due = self.amount_due.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "net": net,
                "tax": tax,
                "gross": gross,
                "prepaid": prepaid,
                "amount_due": amount_due,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.invoice_v1_totals_amount_due import InvoiceV1TotalsAmountDue
        from ..models.invoice_v1_totals_gross import InvoiceV1TotalsGross
        from ..models.invoice_v1_totals_net import InvoiceV1TotalsNet
        from ..models.invoice_v1_totals_prepaid import InvoiceV1TotalsPrepaid
        from ..models.invoice_v1_totals_tax import InvoiceV1TotalsTax

        d = dict(src_dict)
        net = InvoiceV1TotalsNet.from_dict(d.pop("net"))

        tax = InvoiceV1TotalsTax.from_dict(d.pop("tax"))

        gross = InvoiceV1TotalsGross.from_dict(d.pop("gross"))

        prepaid = InvoiceV1TotalsPrepaid.from_dict(d.pop("prepaid"))

        amount_due = InvoiceV1TotalsAmountDue.from_dict(d.pop("amount_due"))

        invoice_v1_totals = cls(
            net=net,
            tax=tax,
            gross=gross,
            prepaid=prepaid,
            amount_due=amount_due,
        )

        return invoice_v1_totals
