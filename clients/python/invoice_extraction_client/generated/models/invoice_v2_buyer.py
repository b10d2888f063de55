from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.invoice_v2_buyer_name import InvoiceV2BuyerName
    from ..models.invoice_v2_buyer_vat_id import InvoiceV2BuyerVatId


T = TypeVar("T", bound="InvoiceV2Buyer")


@_attrs_define
class InvoiceV2Buyer:
    """
    Attributes:
        name (InvoiceV2BuyerName): A value and the exact text it was read from; both null if the document does not show
            it.
        vat_id (InvoiceV2BuyerVatId): A value and the exact text it was read from; both null if the document does not
            show it.
    """

    name: InvoiceV2BuyerName
    vat_id: InvoiceV2BuyerVatId

    def to_dict(self) -> dict[str, Any]:
        name = self.name.to_dict()

        vat_id = self.vat_id.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "vat_id": vat_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.invoice_v2_buyer_name import InvoiceV2BuyerName
        from ..models.invoice_v2_buyer_vat_id import InvoiceV2BuyerVatId

        d = dict(src_dict)
        name = InvoiceV2BuyerName.from_dict(d.pop("name"))

        vat_id = InvoiceV2BuyerVatId.from_dict(d.pop("vat_id"))

        invoice_v2_buyer = cls(
            name=name,
            vat_id=vat_id,
        )

        return invoice_v2_buyer
