from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.redeliver_filter_request import RedeliverFilterRequest


T = TypeVar("T", bound="RedeliverRequest")


@_attrs_define
class RedeliverRequest:
    """Rejects members it does not know, so a typo in a field name is an error, not a default.

    Attributes:
        filter_ (RedeliverFilterRequest): Rejects members it does not know, so a typo in a field name is an error, not a
            default.
        dry_run (bool | Unset):  Default: False.
    """

    filter_: RedeliverFilterRequest
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
        from ..models.redeliver_filter_request import RedeliverFilterRequest

        d = dict(src_dict)
        filter_ = RedeliverFilterRequest.from_dict(d.pop("filter"))

        dry_run = d.pop("dry_run", UNSET)

        redeliver_request = cls(
            filter_=filter_,
            dry_run=dry_run,
        )

        return redeliver_request
