from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.validation_checks_item import ValidationChecksItem
    from ..models.validation_fields import ValidationFields


T = TypeVar("T", bound="Validation")


@_attrs_define
class Validation:
    """
    Attributes:
        policy_version (str | Unset):
        review_required (bool | Unset):
        reasons (list[str] | Unset):
        checks (list[ValidationChecksItem] | Unset):
        fields (ValidationFields | Unset): Each field's trust, keyed by its path as the checks name it (invoice_number,
            totals.gross, lines[0].net_amount). A null field no check needs is not listed.
    """

    policy_version: str | Unset = UNSET
    review_required: bool | Unset = UNSET
    reasons: list[str] | Unset = UNSET
    checks: list[ValidationChecksItem] | Unset = UNSET
    fields: ValidationFields | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        policy_version = self.policy_version

        review_required = self.review_required

        reasons: list[str] | Unset = UNSET
        if not isinstance(self.reasons, Unset):
            reasons = self.reasons

        checks: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.checks, Unset):
            checks = []
            for checks_item_data in self.checks:
                checks_item = checks_item_data.to_dict()
                checks.append(checks_item)

        fields: dict[str, Any] | Unset = UNSET
        if not isinstance(self.fields, Unset):
            fields = self.fields.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if policy_version is not UNSET:
            field_dict["policy_version"] = policy_version
        if review_required is not UNSET:
            field_dict["review_required"] = review_required
        if reasons is not UNSET:
            field_dict["reasons"] = reasons
        if checks is not UNSET:
            field_dict["checks"] = checks
        if fields is not UNSET:
            field_dict["fields"] = fields

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.validation_checks_item import ValidationChecksItem
        from ..models.validation_fields import ValidationFields

        d = dict(src_dict)
        policy_version = d.pop("policy_version", UNSET)

        review_required = d.pop("review_required", UNSET)

        reasons = cast(list[str], d.pop("reasons", UNSET))

        _checks = d.pop("checks", UNSET)
        checks: list[ValidationChecksItem] | Unset = UNSET
        if _checks is not UNSET:
            checks = []
            for checks_item_data in _checks:
                checks_item = ValidationChecksItem.from_dict(checks_item_data)

                checks.append(checks_item)

        _fields = d.pop("fields", UNSET)
        fields: ValidationFields | Unset
        if isinstance(_fields, Unset):
            fields = UNSET
        else:
            fields = ValidationFields.from_dict(_fields)

        validation = cls(
            policy_version=policy_version,
            review_required=review_required,
            reasons=reasons,
            checks=checks,
            fields=fields,
        )

        validation.additional_properties = d
        return validation

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
