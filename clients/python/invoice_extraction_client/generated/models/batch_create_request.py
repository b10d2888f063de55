from __future__ import annotations

import json
from collections.abc import Mapping
from io import BytesIO
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from .. import types
from ..models.schema_enum import SchemaEnum
from ..types import UNSET, File, FileTypes, Unset

if TYPE_CHECKING:
    from ..models.job_options_request import JobOptionsRequest


T = TypeVar("T", bound="BatchCreateRequest")


@_attrs_define
class BatchCreateRequest:
    """A batch: the documents as `files` parts or one zip `archive`, the schema and the options
    of every job. Rejects parts it does not know.

        Attributes:
            files (list[File] | Unset): The documents, one part each (PDF, PNG, JPEG, TIFF, XML or UTF-8 text). Or one
                `archive`.
            archive (File | Unset): A zip archive of the documents. Or `files`.
            schema (SchemaEnum | Unset): * `invoice.v1` - invoice.v1
                * `invoice.v2` - invoice.v2 Default: SchemaEnum.INVOICE_V1.
            options (JobOptionsRequest | Unset): Rejects members it does not know, so a typo in a field name is an error,
                not a default.
    """

    files: list[File] | Unset = UNSET
    archive: File | Unset = UNSET
    schema: SchemaEnum | Unset = SchemaEnum.INVOICE_V1
    options: JobOptionsRequest | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        files: list[FileTypes] | Unset = UNSET
        if not isinstance(self.files, Unset):
            files = []
            for files_item_data in self.files:
                files_item = files_item_data.to_tuple()

                files.append(files_item)

        archive: FileTypes | Unset = UNSET
        if not isinstance(self.archive, Unset):
            archive = self.archive.to_tuple()

        schema: str | Unset = UNSET
        if not isinstance(self.schema, Unset):
            schema = self.schema.value

        options: dict[str, Any] | Unset = UNSET
        if not isinstance(self.options, Unset):
            options = self.options.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if files is not UNSET:
            field_dict["files"] = files
        if archive is not UNSET:
            field_dict["archive"] = archive
        if schema is not UNSET:
            field_dict["schema"] = schema
        if options is not UNSET:
            field_dict["options"] = options

        return field_dict

    def to_multipart(self) -> types.RequestFiles:
        files: types.RequestFiles = []

        if not isinstance(self.files, Unset):
            for files_item_element in self.files:
                files.append(("files", files_item_element.to_tuple()))

        if not isinstance(self.archive, Unset):
            files.append(("archive", self.archive.to_tuple()))

        if not isinstance(self.schema, Unset):
            files.append(("schema", (None, str(self.schema.value).encode(), "text/plain")))

        if not isinstance(self.options, Unset):
            files.append(("options", (None, json.dumps(self.options.to_dict()).encode(), "application/json")))

        return files

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.job_options_request import JobOptionsRequest

        d = dict(src_dict)
        _files = d.pop("files", UNSET)
        files: list[File] | Unset = UNSET
        if _files is not UNSET:
            files = []
            for files_item_data in _files:
                files_item = File(payload=BytesIO(files_item_data))

                files.append(files_item)

        _archive = d.pop("archive", UNSET)
        archive: File | Unset
        if isinstance(_archive, Unset):
            archive = UNSET
        else:
            archive = File(payload=BytesIO(_archive))

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

        batch_create_request = cls(
            files=files,
            archive=archive,
            schema=schema,
            options=options,
        )

        return batch_create_request
