from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar
from uuid import UUID

from attrs import define as _attrs_define

from ..models.redeliver_filter_states_enum import RedeliverFilterStatesEnum
from ..models.webhook_event_type_enum import WebhookEventTypeEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="RedeliverFilterRequest")


@_attrs_define
class RedeliverFilterRequest:
    """Rejects members it does not know, so a typo in a field name is an error, not a default.

    Attributes:
        states (list[RedeliverFilterStatesEnum] | Unset):
        endpoint_id (UUID | Unset):
        event_type (WebhookEventTypeEnum | Unset): * `extraction.batch_completed.v1` - extraction.batch_completed.v1
            * `extraction.completed.v1` - extraction.completed.v1
            * `extraction.failed.v1` - extraction.failed.v1
            * `extraction.review_required.v1` - extraction.review_required.v1
            * `extraction.split.v1` - extraction.split.v1
        job_id (UUID | Unset):
        since (datetime.datetime | Unset):
        until (datetime.datetime | Unset):
    """

    states: list[RedeliverFilterStatesEnum] | Unset = UNSET
    endpoint_id: UUID | Unset = UNSET
    event_type: WebhookEventTypeEnum | Unset = UNSET
    job_id: UUID | Unset = UNSET
    since: datetime.datetime | Unset = UNSET
    until: datetime.datetime | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        states: list[str] | Unset = UNSET
        if not isinstance(self.states, Unset):
            states = []
            for states_item_data in self.states:
                states_item = states_item_data.value
                states.append(states_item)

        endpoint_id: str | Unset = UNSET
        if not isinstance(self.endpoint_id, Unset):
            endpoint_id = str(self.endpoint_id)

        event_type: str | Unset = UNSET
        if not isinstance(self.event_type, Unset):
            event_type = self.event_type.value

        job_id: str | Unset = UNSET
        if not isinstance(self.job_id, Unset):
            job_id = str(self.job_id)

        since: str | Unset = UNSET
        if not isinstance(self.since, Unset):
            since = self.since.isoformat()

        until: str | Unset = UNSET
        if not isinstance(self.until, Unset):
            until = self.until.isoformat()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if states is not UNSET:
            field_dict["states"] = states
        if endpoint_id is not UNSET:
            field_dict["endpoint_id"] = endpoint_id
        if event_type is not UNSET:
            field_dict["event_type"] = event_type
        if job_id is not UNSET:
            field_dict["job_id"] = job_id
        if since is not UNSET:
            field_dict["since"] = since
        if until is not UNSET:
            field_dict["until"] = until

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        _states = d.pop("states", UNSET)
        states: list[RedeliverFilterStatesEnum] | Unset = UNSET
        if _states is not UNSET:
            states = []
            for states_item_data in _states:
                states_item = RedeliverFilterStatesEnum(states_item_data)

                states.append(states_item)

        _endpoint_id = d.pop("endpoint_id", UNSET)
        endpoint_id: UUID | Unset
        if isinstance(_endpoint_id, Unset):
            endpoint_id = UNSET
        else:
            endpoint_id = UUID(_endpoint_id)

        _event_type = d.pop("event_type", UNSET)
        event_type: WebhookEventTypeEnum | Unset
        if isinstance(_event_type, Unset):
            event_type = UNSET
        else:
            event_type = WebhookEventTypeEnum(_event_type)

        _job_id = d.pop("job_id", UNSET)
        job_id: UUID | Unset
        if isinstance(_job_id, Unset):
            job_id = UNSET
        else:
            job_id = UUID(_job_id)

        _since = d.pop("since", UNSET)
        since: datetime.datetime | Unset
        if isinstance(_since, Unset):
            since = UNSET
        else:
            since = datetime.datetime.fromisoformat(_since)

        _until = d.pop("until", UNSET)
        until: datetime.datetime | Unset
        if isinstance(_until, Unset):
            until = UNSET
        else:
            until = datetime.datetime.fromisoformat(_until)

        redeliver_filter_request = cls(
            states=states,
            endpoint_id=endpoint_id,
            event_type=event_type,
            job_id=job_id,
            since=since,
            until=until,
        )

        return redeliver_filter_request
