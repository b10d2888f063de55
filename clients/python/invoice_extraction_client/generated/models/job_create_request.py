from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar
from uuid import UUID

from attrs import define as _attrs_define

from ..models.schema_enum import SchemaEnum
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.job_options_request import JobOptionsRequest


T = TypeVar("T", bound="JobCreateRequest")


@_attrs_define
class JobCreateRequest:
    """Rejects members it does not know, so a typo in a field name is an error, not a default.

    Attributes:
        document_id (UUID):
        schema (SchemaEnum | Unset): * `invoice.v1` - invoice.v1
            * `invoice.v2` - invoice.v2 Default: SchemaEnum.INVOICE_V1.
        options (JobOptionsRequest | Unset): Rejects members it does not know, so a typo in a field name is an error,
            not a default.
    """

    document_id: UUID
    schema: SchemaEnum | Unset = SchemaEnum.INVOICE_V1
    options: JobOptionsRequest | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        document_id = str(self.document_id)

        schema: str | Unset = UNSET
        if not isinstance(self.schema, Unset):
            schema = self.schema.value

        options: dict[str, Any] | Unset = UNSET
        if not isinstance(self.options, Unset):
            options = self.options.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "document_id": document_id,
            }
        )
        if schema is not UNSET:
            field_dict["schema"] = schema
        if options is not UNSET:
            field_dict["options"] = options

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.job_options_request import JobOptionsRequest

        d = dict(src_dict)
        document_id = UUID(d.pop("document_id"))

        _schema = d.pop("schema", UNSET)
        schema: SchemaEnum | Unset
        if isinstance(_schema, Unset):
            schema = UNSET
        else:
            schema = SchemaEnum(_schema)

        _options = d.pop("options", UNSET)
        options: JobOptionsRequest | Unset
        if isinstance(_options, Unset):
            options = UNSET
        else:
            options = JobOptionsRequest.from_dict(_options)

        job_create_request = cls(
            document_id=document_id,
            schema=schema,
            options=options,
        )

        return job_create_request
