from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar
from uuid import UUID

from attrs import define as _attrs_define

from ..models.job_filter_states_enum import JobFilterStatesEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="JobFilterRequest")


@_attrs_define
class JobFilterRequest:
    """Rejects members it does not know, so a typo in a field name is an error, not a default.

    Attributes:
        states (list[JobFilterStatesEnum] | Unset):
        created_since (datetime.datetime | Unset):
        created_until (datetime.datetime | Unset):
        reason (str | Unset):
        policy_version (str | Unset):
        job_ids (list[UUID] | Unset):
    """

    states: list[JobFilterStatesEnum] | Unset = UNSET
    created_since: datetime.datetime | Unset = UNSET
    created_until: datetime.datetime | Unset = UNSET
    reason: str | Unset = UNSET
    policy_version: str | Unset = UNSET
    job_ids: list[UUID] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        states: list[str] | Unset = UNSET
        if not isinstance(self.states, Unset):
            states = []
            for states_item_data in self.states:
                states_item = states_item_data.value
                states.append(states_item)

        created_since: str | Unset = UNSET
        if not isinstance(self.created_since, Unset):
            created_since = self.created_since.isoformat()

        created_until: str | Unset = UNSET
        if not isinstance(self.created_until, Unset):
            created_until = self.created_until.isoformat()

        reason = self.reason

        policy_version = self.policy_version

        job_ids: list[str] | Unset = UNSET
        if not isinstance(self.job_ids, Unset):
            job_ids = []
            for job_ids_item_data in self.job_ids:
                job_ids_item = str(job_ids_item_data)
                job_ids.append(job_ids_item)

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if states is not UNSET:
            field_dict["states"] = states
        if created_since is not UNSET:
            field_dict["created_since"] = created_since
        if created_until is not UNSET:
            field_dict["created_until"] = created_until
        if reason is not UNSET:
            field_dict["reason"] = reason
        if policy_version is not UNSET:
            field_dict["policy_version"] = policy_version
        if job_ids is not UNSET:
            field_dict["job_ids"] = job_ids

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        _states = d.pop("states", UNSET)
        states: list[JobFilterStatesEnum] | Unset = UNSET
        if _states is not UNSET:
            states = []
            for states_item_data in _states:
                states_item = JobFilterStatesEnum(states_item_data)

                states.append(states_item)

        _created_since = d.pop("created_since", UNSET)
        created_since: datetime.datetime | Unset
        if isinstance(_created_since, Unset):
            created_since = UNSET
        else:
            created_since = datetime.datetime.fromisoformat(_created_since)

        _created_until = d.pop("created_until", UNSET)
        created_until: datetime.datetime | Unset
        if isinstance(_created_until, Unset):
            created_until = UNSET
        else:
            created_until = datetime.datetime.fromisoformat(_created_until)

        reason = d.pop("reason", UNSET)

        policy_version = d.pop("policy_version", UNSET)

        _job_ids = d.pop("job_ids", UNSET)
        job_ids: list[UUID] | Unset = UNSET
        if _job_ids is not UNSET:
            job_ids = []
            for job_ids_item_data in _job_ids:
                job_ids_item = UUID(job_ids_item_data)

                job_ids.append(job_ids_item)

        job_filter_request = cls(
            states=states,
            created_since=created_since,
            created_until=created_until,
            reason=reason,
            policy_version=policy_version,
            job_ids=job_ids,
        )

        return job_filter_request
