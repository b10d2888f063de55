from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.invoice_v1 import InvoiceV1
    from ..models.invoice_v2 import InvoiceV2
    from ..models.validation import Validation


T = TypeVar("T", bound="JobResult")


@_attrs_define
class JobResult:
    """The stored result, in the schema the job was accepted with.

    Attributes:
        output (InvoiceV1 | InvoiceV2 | Unset):
        validation (Validation | Unset):
    """

    output: InvoiceV1 | InvoiceV2 | Unset = UNSET
    validation: Validation | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.invoice_v1 import InvoiceV1

        output: dict[str, Any] | Unset
        if isinstance(self.output, Unset):
            output = UNSET
        elif isinstance(self.output, InvoiceV1):
            output = self.output.to_dict()
        else:
            output = self.output.to_dict()

        validation: dict[str, Any] | Unset = UNSET
        if not isinstance(self.validation, Unset):
            validation = self.validation.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if output is not UNSET:
            field_dict["output"] = output
        if validation is not UNSET:
            field_dict["validation"] = validation

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.invoice_v1 import InvoiceV1
        from ..models.invoice_v2 import InvoiceV2
        from ..models.validation import Validation

        d = dict(src_dict)

        def _parse_output(data: object) -> InvoiceV1 | InvoiceV2 | Unset:
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                output_type_0 = InvoiceV1.from_dict(data)

                return output_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, dict):
                raise TypeError()
            output_type_1 = InvoiceV2.from_dict(data)

            return output_type_1

        output = _parse_output(d.pop("output", UNSET))

        _validation = d.pop("validation", UNSET)
        validation: Validation | Unset
        if isinstance(_validation, Unset):
            validation = UNSET
        else:
            validation = Validation.from_dict(_validation)

        job_result = cls(
            output=output,
            validation=validation,
        )

        job_result.additional_properties = d
        return job_result

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
