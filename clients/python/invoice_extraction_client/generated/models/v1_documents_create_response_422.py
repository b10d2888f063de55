from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.v1_documents_create_response_422_status import (
    V1DocumentsCreateResponse422Status,
)
from ..models.v1_documents_create_response_422_type import (
    V1DocumentsCreateResponse422Type,
)
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.problem_errors import ProblemErrors


T = TypeVar("T", bound="V1DocumentsCreateResponse422")


@_attrs_define
class V1DocumentsCreateResponse422:
    """
    Attributes:
        type_ (V1DocumentsCreateResponse422Type): Stable, e.g. `/problems/not-found`.
        title (str):
        status (V1DocumentsCreateResponse422Status): The HTTP status.
        detail (str): This occurrence, in words.
        instance (str | Unset): The request path.
        errors (ProblemErrors | Unset): validation-error: the messages per field (nested for nested objects and list
            items).
        job_id (UUID | Unset): idempotency-key-conflict: the job the key was first used for.
        limit (str | Unset): tenant-limit-exceeded: which limit.
        current (int | Unset): tenant-limit-exceeded: the tenant's use of that limit.
        maximum (int | Unset): tenant-limit-exceeded: the limit's value.
        limit_bytes (int | Unset): payload-too-large: the largest body read.
    """

    type_: V1DocumentsCreateResponse422Type
    title: str
    status: V1DocumentsCreateResponse422Status
    detail: str
    instance: str | Unset = UNSET
    errors: ProblemErrors | Unset = UNSET
    job_id: UUID | Unset = UNSET
    limit: str | Unset = UNSET
    current: int | Unset = UNSET
    maximum: int | Unset = UNSET
    limit_bytes: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        type_ = self.type_.value

        title = self.title

        status = self.status.value

        detail = self.detail

        instance = self.instance

        errors: dict[str, Any] | Unset = UNSET
        if not isinstance(self.errors, Unset):
            errors = self.errors.to_dict()

        job_id: str | Unset = UNSET
        if not isinstance(self.job_id, Unset):
            job_id = str(self.job_id)

        limit = self.limit

        current = self.current

        maximum = self.maximum

        limit_bytes = self.limit_bytes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "type": type_,
                "title": title,
                "status": status,
                "detail": detail,
            }
        )
        if instance is not UNSET:
            field_dict["instance"] = instance
        if errors is not UNSET:
            field_dict["errors"] = errors
        if job_id is not UNSET:
            field_dict["job_id"] = job_id
        if limit is not UNSET:
            field_dict["limit"] = limit
        if current is not UNSET:
            field_dict["current"] = current
        if maximum is not UNSET:
            field_dict["maximum"] = maximum
        if limit_bytes is not UNSET:
            field_dict["limit_bytes"] = limit_bytes

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.problem_errors import ProblemErrors

        d = dict(src_dict)
        type_ = V1DocumentsCreateResponse422Type(d.pop("type"))

        title = d.pop("title")

        status = V1DocumentsCreateResponse422Status(d.pop("status"))

        detail = d.pop("detail")

        instance = d.pop("instance", UNSET)

        _errors = d.pop("errors", UNSET)
        errors: ProblemErrors | Unset
        if isinstance(_errors, Unset):
            errors = UNSET
        else:
            errors = ProblemErrors.from_dict(_errors)

        _job_id = d.pop("job_id", UNSET)
        job_id: UUID | Unset
        if isinstance(_job_id, Unset):
            job_id = UNSET
        else:
            job_id = UUID(_job_id)

        limit = d.pop("limit", UNSET)

        current = d.pop("current", UNSET)

        maximum = d.pop("maximum", UNSET)

        limit_bytes = d.pop("limit_bytes", UNSET)

        v1_documents_create_response_422 = cls(
            type_=type_,
            title=title,
            status=status,
            detail=detail,
            instance=instance,
            errors=errors,
            job_id=job_id,
            limit=limit,
            current=current,
            maximum=maximum,
            limit_bytes=limit_bytes,
        )

        v1_documents_create_response_422.additional_properties = d
        return v1_documents_create_response_422

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
