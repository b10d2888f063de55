from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.batch_accepted_items_item_job_type_0_state import (
    BatchAcceptedItemsItemJobType0State,
)

T = TypeVar("T", bound="BatchAcceptedItemsItemJobType0")


@_attrs_define
class BatchAcceptedItemsItemJobType0:
    """
    Attributes:
        job_id (UUID):
        state (BatchAcceptedItemsItemJobType0State):
        status_url (str):
    """

    job_id: UUID
    state: BatchAcceptedItemsItemJobType0State
    status_url: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = str(self.job_id)

        state = self.state.value

        status_url = self.status_url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "state": state,
                "status_url": status_url,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        job_id = UUID(d.pop("job_id"))

        state = BatchAcceptedItemsItemJobType0State(d.pop("state"))

        status_url = d.pop("status_url")

        batch_accepted_items_item_job_type_0 = cls(
            job_id=job_id,
            state=state,
            status_url=status_url,
        )

        batch_accepted_items_item_job_type_0.additional_properties = d
        return batch_accepted_items_item_job_type_0

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
