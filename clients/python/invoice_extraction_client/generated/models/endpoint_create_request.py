from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.webhook_event_type_enum import WebhookEventTypeEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="EndpointCreateRequest")


@_attrs_define
class EndpointCreateRequest:
    """Rejects members it does not know, so a typo in a field name is an error, not a default.

    Attributes:
        url (str):
        event_types (list[WebhookEventTypeEnum]):
        description (str | Unset):
    """

    url: str
    event_types: list[WebhookEventTypeEnum]
    description: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        url = self.url

        event_types = []
        for event_types_item_data in self.event_types:
            event_types_item = event_types_item_data.value
            event_types.append(event_types_item)

        description: str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "url": url,
                "event_types": event_types,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        url = d.pop("url")

        event_types = []
        _event_types = d.pop("event_types")
        for event_types_item_data in _event_types:
            event_types_item = WebhookEventTypeEnum(event_types_item_data)

            event_types.append(event_types_item)

        def _parse_description(data: object) -> str | Unset:
            if isinstance(data, Unset):
                return data
            return cast(str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        endpoint_create_request = cls(
            url=url,
            event_types=event_types,
            description=description,
        )

        return endpoint_create_request
