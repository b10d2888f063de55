from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.invoice_v2_supplier_iban import InvoiceV2SupplierIban
    from ..models.invoice_v2_supplier_name import InvoiceV2SupplierName
    from ..models.invoice_v2_supplier_vat_id import InvoiceV2SupplierVatId


T = TypeVar("T", bound="InvoiceV2Supplier")


@_attrs_define
class InvoiceV2Supplier:
    """
    Attributes:
        name (InvoiceV2SupplierName): A value and the exact text it was read from; both null if the document does not
            show it.
        vat_id (InvoiceV2SupplierVatId): A value and the exact text it was read from; both null if the document does not
            show it.
        iban (InvoiceV2SupplierIban): A value and the exact text it was read from; both null if the document does not
            show it.
    """

    name: InvoiceV2SupplierName
    vat_id: InvoiceV2SupplierVatId
    iban: InvoiceV2SupplierIban

    def to_dict(self) -> dict[str, Any]:
        name = self.name.to_dict()

        vat_id = self.vat_id.to_dict()

        iban = self.iban.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "vat_id": vat_id,
                "iban": iban,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.invoice_v2_supplier_iban import InvoiceV2SupplierIban
        from ..models.invoice_v2_supplier_name import InvoiceV2SupplierName
        from ..models.invoice_v2_supplier_vat_id import InvoiceV2SupplierVatId

        d = dict(src_dict)
        name = InvoiceV2SupplierName.from_dict(d.pop("name"))

        vat_id = InvoiceV2SupplierVatId.from_dict(d.pop("vat_id"))

        iban = InvoiceV2SupplierIban.from_dict(d.pop("iban"))

        invoice_v2_supplier = cls(
            name=name,
            vat_id=vat_id,
            iban=iban,
        )

        return invoice_v2_supplier
