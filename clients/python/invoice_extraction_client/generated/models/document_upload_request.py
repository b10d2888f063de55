from __future__ import annotations

from collections.abc import Mapping
from io import BytesIO
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from .. import types
from ..types import File

T = TypeVar("T", bound="DocumentUploadRequest")


@_attrs_define
class DocumentUploadRequest:
    """Rejects members it does not know, so a typo in a field name is an error, not a default.

    Attributes:
        file (File): A PDF, PNG, JPEG, TIFF, XML or UTF-8 text document.
    """

    file: File

    def to_dict(self) -> dict[str, Any]:
        file = self.file.to_tuple()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "file": file,
            }
        )

        return field_dict

    def to_multipart(self) -> types.RequestFiles:
        files: types.RequestFiles = []

        files.append(("file", self.file.to_tuple()))

        return files

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        file = File(payload=BytesIO(d.pop("file")))

        document_upload_request = cls(
            file=file,
        )

        return document_upload_request
