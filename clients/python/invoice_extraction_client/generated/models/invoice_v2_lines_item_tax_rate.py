from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.evidence import Evidence


T = TypeVar("T", bound="InvoiceV2LinesItemTaxRate")


@_attrs_define
class InvoiceV2LinesItemTaxRate:
    """A value and the exact text it was read from; both null if the document does not show it.

    Attributes:
        value (None | str): VAT rate in percent, e.g. "19" or "5.5"; null if absent.
        evidence (Evidence | None):
    """

    value: None | str
    evidence: Evidence | None

    def to_dict(self) -> dict[str, Any]:
        from ..models.evidence import Evidence

        value: None | str
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

        def _parse_value(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

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

        invoice_v2_lines_item_tax_rate = cls(
            value=value,
            evidence=evidence,
        )

        return invoice_v2_lines_item_tax_rate
