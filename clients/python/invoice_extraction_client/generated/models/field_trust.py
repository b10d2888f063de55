from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.field_trust_sources_item import FieldTrustSourcesItem
from ..models.field_trust_status import FieldTrustStatus

T = TypeVar("T", bound="FieldTrust")


@_attrs_define
class FieldTrust:
    """
    Attributes:
        status (FieldTrustStatus): verified: printed at its evidence (or typed by a reviewer) and every check that read
            it passed; derived: computed from other fields by a stated rule; conflicting: two readings disagree; unverified:
            a check that read it failed, or no one looked for its evidence; missing: null where the policy needs a value.
        blocking (bool): Whether this field's status decides the review: a job goes to review exactly when a blocking
            field is neither verified nor derived.
        sources (list[FieldTrustSourcesItem]): The readings that gave this value (two when a second reading agreed).
        checks (list[str]): The checks that read it.
        failed (list[str]): Those that put it in doubt.
        relocated (bool): Its evidence was moved to where its quote is printed.
        element (None | str): The e-invoice XML element (an XPath) the value was read from.
    """

    status: FieldTrustStatus
    blocking: bool
    sources: list[FieldTrustSourcesItem]
    checks: list[str]
    failed: list[str]
    relocated: bool
    element: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        status = self.status.value

        blocking = self.blocking

        sources = []
        for sources_item_data in self.sources:
            sources_item = sources_item_data.value
            sources.append(sources_item)

        checks = self.checks

        failed = self.failed

        relocated = self.relocated

        element: None | str
        element = self.element

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
                "blocking": blocking,
                "sources": sources,
                "checks": checks,
                "failed": failed,
                "relocated": relocated,
                "element": element,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        status = FieldTrustStatus(d.pop("status"))

        blocking = d.pop("blocking")

        sources = []
        _sources = d.pop("sources")
        for sources_item_data in _sources:
            sources_item = FieldTrustSourcesItem(sources_item_data)

            sources.append(sources_item)

        checks = cast(list[str], d.pop("checks"))

        failed = cast(list[str], d.pop("failed"))

        relocated = d.pop("relocated")

        def _parse_element(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        element = _parse_element(d.pop("element"))

        field_trust = cls(
            status=status,
            blocking=blocking,
            sources=sources,
            checks=checks,
            failed=failed,
            relocated=relocated,
            element=element,
        )

        field_trust.additional_properties = d
        return field_trust

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
