from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.problem_errors_additional_property_type_1 import (
        ProblemErrorsAdditionalPropertyType1,
    )


T = TypeVar("T", bound="ProblemErrors")


@_attrs_define
class ProblemErrors:
    """validation-error: the messages per field (nested for nested objects and list items)."""

    additional_properties: dict[str, list[str] | ProblemErrorsAdditionalPropertyType1] = _attrs_field(
        init=False, factory=dict
    )

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            if isinstance(prop, list):
                field_dict[prop_name] = prop

            else:
                field_dict[prop_name] = prop.to_dict()

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.problem_errors_additional_property_type_1 import (
            ProblemErrorsAdditionalPropertyType1,
        )

        d = dict(src_dict)
        problem_errors = cls()

        additional_properties = {}
        for prop_name, prop_dict in d.items():

            def _parse_additional_property(data: object) -> list[str] | ProblemErrorsAdditionalPropertyType1:
                try:
                    if not isinstance(data, list):
                        raise TypeError()
                    additional_property_type_0 = cast(list[str], data)

                    return additional_property_type_0
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                if not isinstance(data, dict):
                    raise TypeError()
                additional_property_type_1 = ProblemErrorsAdditionalPropertyType1.from_dict(data)

                return additional_property_type_1

            additional_property = _parse_additional_property(prop_dict)

            additional_properties[prop_name] = additional_property

        problem_errors.additional_properties = additional_properties
        return problem_errors

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> list[str] | ProblemErrorsAdditionalPropertyType1:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: list[str] | ProblemErrorsAdditionalPropertyType1) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
