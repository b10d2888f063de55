from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..models.job_options_request_model_policy import JobOptionsRequestModelPolicy
from ..models.priority_enum import PriorityEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="JobOptionsRequest")


@_attrs_define
class JobOptionsRequest:
    """Rejects members it does not know, so a typo in a field name is an error, not a default.

    Attributes:
        model_policy (JobOptionsRequestModelPolicy | Unset):  Default: JobOptionsRequestModelPolicy.DEFAULT.
        priority (PriorityEnum | Unset): * `interactive` - Interactive
            * `batch` - Batch Default: PriorityEnum.BATCH.
        deadline_seconds (int | Unset):
        split_bundles (bool | Unset): A PDF that holds several invoices becomes one job per invoice (true, the default),
            or is read as one invoice (false).
    """

    model_policy: JobOptionsRequestModelPolicy | Unset = JobOptionsRequestModelPolicy.DEFAULT
    priority: PriorityEnum | Unset = PriorityEnum.BATCH
    deadline_seconds: int | Unset = UNSET
    split_bundles: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        model_policy: str | Unset = UNSET
        if not isinstance(self.model_policy, Unset):
            model_policy = self.model_policy.value

        priority: str | Unset = UNSET
        if not isinstance(self.priority, Unset):
            priority = self.priority.value

        deadline_seconds = self.deadline_seconds

        split_bundles = self.split_bundles

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if model_policy is not UNSET:
            field_dict["model_policy"] = model_policy
        if priority is not UNSET:
            field_dict["priority"] = priority
        if deadline_seconds is not UNSET:
            field_dict["deadline_seconds"] = deadline_seconds
        if split_bundles is not UNSET:
            field_dict["split_bundles"] = split_bundles

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        _model_policy = d.pop("model_policy", UNSET)
        model_policy: JobOptionsRequestModelPolicy | Unset
        if isinstance(_model_policy, Unset):
            model_policy = UNSET
        else:
            model_policy = JobOptionsRequestModelPolicy(_model_policy)

        _priority = d.pop("priority", UNSET)
        priority: PriorityEnum | Unset
        if isinstance(_priority, Unset):
            priority = UNSET
        else:
            priority = PriorityEnum(_priority)

        deadline_seconds = d.pop("deadline_seconds", UNSET)

        split_bundles = d.pop("split_bundles", UNSET)

        job_options_request = cls(
            model_policy=model_policy,
            priority=priority,
            deadline_seconds=deadline_seconds,
            split_bundles=split_bundles,
        )

        return job_options_request
