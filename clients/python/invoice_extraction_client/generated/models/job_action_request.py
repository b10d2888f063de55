from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.job_filter_request import JobFilterRequest


T = TypeVar("T", bound="JobActionRequest")


@_attrs_define
class JobActionRequest:
    """Rejects members it does not know, so a typo in a field name is an error, not a default.

    Attributes:
        filter_ (JobFilterRequest): Rejects members it does not know, so a typo in a field name is an error, not a
            default.
        dry_run (bool | Unset):  Default: False.
    """

    filter_: JobFilterRequest
    dry_run: bool | Unset = False

    def to_dict(self) -> dict[str, Any]:
        filter_ = self.filter_.to_dict()

        dry_run = self.dry_run

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "filter": filter_,
            }
        )
        if dry_run is not UNSET:
            field_dict["dry_run"] = dry_run

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.job_filter_request import JobFilterRequest

        d = dict(src_dict)
        filter_ = JobFilterRequest.from_dict(d.pop("filter"))

        dry_run = d.pop("dry_run", UNSET)

        job_action_request = cls(
            filter_=filter_,
            dry_run=dry_run,
        )

        return job_action_request
