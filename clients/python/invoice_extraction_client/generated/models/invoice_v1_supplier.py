from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.invoice_v1_supplier_iban import InvoiceV1SupplierIban
    from ..models.invoice_v1_supplier_name import InvoiceV1SupplierName
    from ..models.invoice_v1_supplier_vat_id import InvoiceV1SupplierVatId


T = TypeVar("T", bound="InvoiceV1Supplier")


@_attrs_define
class InvoiceV1Supplier:
    """
    Attributes:
        name (InvoiceV1SupplierName): A value and the exact text it was read from; both null if the document does not
            show it.
        vat_id (InvoiceV1SupplierVatId): A value and the exact text it was read from; both null if the document does not
            show it.
        iban (InvoiceV1SupplierIban): A value and the exact text it was read from; both null if the document does not
            show it.
    """

    name: InvoiceV1SupplierName
    vat_id: InvoiceV1SupplierVatId
    iban: InvoiceV1SupplierIban

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
        from ..models.invoice_v1_supplier_iban import InvoiceV1SupplierIban
        from ..models.invoice_v1_supplier_name import InvoiceV1SupplierName
        from ..models.invoice_v1_supplier_vat_id import InvoiceV1SupplierVatId

        d = dict(src_dict)
        name = InvoiceV1SupplierName.from_dict(d.pop("name"))

        vat_id = InvoiceV1SupplierVatId.from_dict(d.pop("vat_id"))

        iban = InvoiceV1SupplierIban.from_dict(d.pop("iban"))

        invoice_v1_supplier = cls(
            name=name,
            vat_id=vat_id,
            iban=iban,
        )

        return invoice_v1_supplier
