from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.invoice_v2_document_type_value_type_1 import (
    InvoiceV2DocumentTypeValueType1,
)
from ..models.invoice_v2_document_type_value_type_2_type_1 import (
    InvoiceV2DocumentTypeValueType2Type1,
)
from ..models.invoice_v2_document_type_value_type_3_type_1 import (
    InvoiceV2DocumentTypeValueType3Type1,
)

if TYPE_CHECKING:
    from ..models.evidence import Evidence


T = TypeVar("T", bound="InvoiceV2DocumentType")


@_attrs_define
class InvoiceV2DocumentType:
    """A value and the exact text it was read from; both null if the document does not show it.

    Attributes:
        value (InvoiceV2DocumentTypeValueType1 | InvoiceV2DocumentTypeValueType2Type1 |
            InvoiceV2DocumentTypeValueType3Type1 | None): "invoice" or "credit_note".
        evidence (Evidence | None):
    """

    value: (
        InvoiceV2DocumentTypeValueType1
        | InvoiceV2DocumentTypeValueType2Type1
        | InvoiceV2DocumentTypeValueType3Type1
        | None
    )
    evidence: Evidence | None

    def to_dict(self) -> dict[str, Any]:
        from ..models.evidence import Evidence

        value: None | str
        if (
            isinstance(self.value, InvoiceV2DocumentTypeValueType1)
            or isinstance(self.value, InvoiceV2DocumentTypeValueType2Type1)
            or isinstance(self.value, InvoiceV2DocumentTypeValueType3Type1)
        ):
            value = self.value.value
        else:
            value = self.value

        evidence: dict[str, Any] | None
        if isinstance(self.evidence, Evidence):
            evidence = self.evidence.to_dict()
        else:
            evidence = self.evidence

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "value": value,
                "evidence": evidence,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.evidence import Evidence

        d = dict(src_dict)

        def _parse_value(
            data: object,
        ) -> (
            InvoiceV2DocumentTypeValueType1
            | InvoiceV2DocumentTypeValueType2Type1
            | InvoiceV2DocumentTypeValueType3Type1
            | None
        ):
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                value_type_1 = InvoiceV2DocumentTypeValueType1(data)

                return value_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                value_type_2_type_1 = InvoiceV2DocumentTypeValueType2Type1(data)

                return value_type_2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                value_type_3_type_1 = InvoiceV2DocumentTypeValueType3Type1(data)

                return value_type_3_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(
                InvoiceV2DocumentTypeValueType1
                | InvoiceV2DocumentTypeValueType2Type1
                | InvoiceV2DocumentTypeValueType3Type1
                | None,
                data,
            )

        value = _parse_value(d.pop("value"))

        def _parse_evidence(data: object) -> Evidence | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                evidence_type_0 = Evidence.from_dict(data)

                return evidence_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Evidence | None, data)

        evidence = _parse_evidence(d.pop("evidence"))

        invoice_v2_document_type = cls(
            value=value,
            evidence=evidence,
        )

        return invoice_v2_document_type
