from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.batch_detail_schema import BatchDetailSchema

if TYPE_CHECKING:
    from ..models.batch_detail_items_item import BatchDetailItemsItem
    from ..models.batch_detail_options import BatchDetailOptions
    from ..models.batch_detail_states import BatchDetailStates


T = TypeVar("T", bound="BatchDetail")


@_attrs_define
class BatchDetail:
    """
    Attributes:
        batch_id (UUID):
        status_url (str):
        schema (BatchDetailSchema):
        options (BatchDetailOptions): The options of every job, defaults applied.
        file_count (int):
        accepted (int): Files that have a job.
        refused (int): Files refused, each with its problem.
        states (BatchDetailStates): The batch's jobs by state, now.
        created_at (datetime.datetime):
        accepted_at (datetime.datetime | None): When every file had its answer; null while the acceptance runs or if it
            was interrupted (a replay with the same key finishes it).
        completed_at (datetime.datetime | None): When every job of the batch (and every part of a split one) was found
            finished and extraction.batch_completed.v1 was sent; null until then.
        items (list[BatchDetailItemsItem]): A page of the files, in order.
        next_ (None | str): The next page's URL.
        previous (None | str): The previous page's URL.
    """

    batch_id: UUID
    status_url: str
    schema: BatchDetailSchema
    options: BatchDetailOptions
    file_count: int
    accepted: int
    refused: int
    states: BatchDetailStates
    created_at: datetime.datetime
    accepted_at: datetime.datetime | None
    completed_at: datetime.datetime | None
    items: list[BatchDetailItemsItem]
    next_: None | str
    previous: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        batch_id = str(self.batch_id)

        status_url = self.status_url

        schema = self.schema.value

        options = self.options.to_dict()

        file_count = self.file_count

        accepted = self.accepted

        refused = self.refused

        states = self.states.to_dict()

        created_at = self.created_at.isoformat()

        accepted_at: None | str
        if isinstance(self.accepted_at, datetime.datetime):
            accepted_at = self.accepted_at.isoformat()
        else:
            accepted_at = self.accepted_at

        completed_at: None | str
        if isinstance(self.completed_at, datetime.datetime):
            completed_at = self.completed_at.isoformat()
        else:
            completed_at = self.completed_at

        items = []
        for items_item_data in self.items:
            items_item = items_item_data.to_dict()
            items.append(items_item)

        next_: None | str
        next_ = self.next_

        previous: None | str
        previous = self.previous

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "batch_id": batch_id,
                "status_url": status_url,
                "schema": schema,
                "options": options,
                "file_count": file_count,
                "accepted": accepted,
                "refused": refused,
                "states": states,
                "created_at": created_at,
                "accepted_at": accepted_at,
                "completed_at": completed_at,
                "items": items,
                "next": next_,
                "previous": previous,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.batch_detail_items_item import BatchDetailItemsItem
        from ..models.batch_detail_options import BatchDetailOptions
        from ..models.batch_detail_states import BatchDetailStates

        d = dict(src_dict)
        batch_id = UUID(d.pop("batch_id"))

        status_url = d.pop("status_url")

        schema = BatchDetailSchema(d.pop("schema"))

        options = BatchDetailOptions.from_dict(d.pop("options"))

        file_count = d.pop("file_count")

        accepted = d.pop("accepted")

        refused = d.pop("refused")

        states = BatchDetailStates.from_dict(d.pop("states"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_accepted_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                accepted_at_type_0 = datetime.datetime.fromisoformat(data)

                return accepted_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        accepted_at = _parse_accepted_at(d.pop("accepted_at"))

        def _parse_completed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                completed_at_type_0 = datetime.datetime.fromisoformat(data)

                return completed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        completed_at = _parse_completed_at(d.pop("completed_at"))

        items = []
        _items = d.pop("items")
        for items_item_data in _items:
            items_item = BatchDetailItemsItem.from_dict(items_item_data)

            items.append(items_item)

        def _parse_next_(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        next_ = _parse_next_(d.pop("next"))

        def _parse_previous(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        previous = _parse_previous(d.pop("previous"))

        batch_detail = cls(
            batch_id=batch_id,
            status_url=status_url,
            schema=schema,
            options=options,
            file_count=file_count,
            accepted=accepted,
            refused=refused,
            states=states,
            created_at=created_at,
            accepted_at=accepted_at,
            completed_at=completed_at,
            items=items,
            next_=next_,
            previous=previous,
        )

        batch_detail.additional_properties = d
        return batch_detail

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
