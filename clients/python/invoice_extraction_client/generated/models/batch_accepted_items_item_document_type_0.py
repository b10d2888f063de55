from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="BatchAcceptedItemsItemDocumentType0")


@_attrs_define
class BatchAcceptedItemsItemDocumentType0:
    """
    Attributes:
        id (UUID):
        version (UUID): Immutable: other bytes are another document.
        sha256 (str):
        size (int): In bytes.
        content_type (str): Sniffed from the bytes, not taken from the client.
        page_count (int | None): A PDF's pages, an image's frames, a text's form-feed pages, 1 for XML; null where they
            could not be counted. The pages of a PDF or an image are shown by /pages/{page}.png.
        created_at (datetime.datetime):
    """

    id: UUID
    version: UUID
    sha256: str
    size: int
    content_type: str
    page_count: int | None
    created_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        version = str(self.version)

        sha256 = self.sha256

        size = self.size

        content_type = self.content_type

        page_count: int | None
        page_count = self.page_count

        created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "version": version,
                "sha256": sha256,
                "size": size,
                "content_type": content_type,
                "page_count": page_count,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        version = UUID(d.pop("version"))

        sha256 = d.pop("sha256")

        size = d.pop("size")

        content_type = d.pop("content_type")

        def _parse_page_count(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        page_count = _parse_page_count(d.pop("page_count"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        batch_accepted_items_item_document_type_0 = cls(
            id=id,
            version=version,
            sha256=sha256,
            size=size,
            content_type=content_type,
            page_count=page_count,
            created_at=created_at,
        )

        batch_accepted_items_item_document_type_0.additional_properties = d
        return batch_accepted_items_item_document_type_0

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
