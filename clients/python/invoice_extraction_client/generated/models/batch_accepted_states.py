from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="BatchAcceptedStates")


@_attrs_define
class BatchAcceptedStates:
    """The batch's jobs by state, now.

    Attributes:
        accepted (int):
        ready (int):
        running (int):
        retry_scheduled (int):
        succeeded (int):
        review_required (int):
        failed_terminal (int):
        split (int):
    """

    accepted: int
    ready: int
    running: int
    retry_scheduled: int
    succeeded: int
    review_required: int
    failed_terminal: int
    split: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        accepted = self.accepted

        ready = self.ready

        running = self.running

        retry_scheduled = self.retry_scheduled

        succeeded = self.succeeded

        review_required = self.review_required

        failed_terminal = self.failed_terminal

        split = self.split

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "ACCEPTED": accepted,
                "READY": ready,
                "RUNNING": running,
                "RETRY_SCHEDULED": retry_scheduled,
                "SUCCEEDED": succeeded,
                "REVIEW_REQUIRED": review_required,
                "FAILED_TERMINAL": failed_terminal,
                "SPLIT": split,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        accepted = d.pop("ACCEPTED")

        ready = d.pop("READY")

        running = d.pop("RUNNING")

        retry_scheduled = d.pop("RETRY_SCHEDULED")

        succeeded = d.pop("SUCCEEDED")

        review_required = d.pop("REVIEW_REQUIRED")

        failed_terminal = d.pop("FAILED_TERMINAL")

        split = d.pop("SPLIT")

        batch_accepted_states = cls(
            accepted=accepted,
            ready=ready,
            running=running,
            retry_scheduled=retry_scheduled,
            succeeded=succeeded,
            review_required=review_required,
            failed_terminal=failed_terminal,
            split=split,
        )

        batch_accepted_states.additional_properties = d
        return batch_accepted_states

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
