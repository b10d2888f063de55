from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="Evidence")


@_attrs_define
class Evidence:
    """Where the value is printed.

    Attributes:
        page (int): 1-based page number.
        start (int): Offset of the first character in that page's text.
        end (int): Offset just after the last character (exclusive).
        quote (str): Exactly the page text between start and end.
        boxes (list[list[float]] | None | Unset): One [x0, y0, x1, y1] per printed line the quote covers, fractions of
            the page's width and height, origin top left, to draw on GET /api/v1/documents/{id}/pages/{n}.png; null where
            the page has no geometry (a plain-text upload, the printed e-invoice XML).
    """

    page: int
    start: int
    end: int
    quote: str
    boxes: list[list[float]] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        page = self.page

        start = self.start

        end = self.end

        quote = self.quote

        boxes: list[list[float]] | None | Unset
        if isinstance(self.boxes, Unset):
            boxes = UNSET
        elif isinstance(self.boxes, list):
            boxes = []
            for boxes_type_0_item_data in self.boxes:
                boxes_type_0_item = boxes_type_0_item_data

                boxes.append(boxes_type_0_item)

        else:
            boxes = self.boxes

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "page": page,
                "start": start,
                "end": end,
                "quote": quote,
            }
        )
        if boxes is not UNSET:
            field_dict["boxes"] = boxes

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        page = d.pop("page")

        start = d.pop("start")

        end = d.pop("end")

        quote = d.pop("quote")

        def _parse_boxes(data: object) -> list[list[float]] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                boxes_type_0 = []
                _boxes_type_0 = data
                for boxes_type_0_item_data in _boxes_type_0:
                    boxes_type_0_item = cast(list[float], boxes_type_0_item_data)

                    boxes_type_0.append(boxes_type_0_item)

                return boxes_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[list[float]] | None | Unset, data)

        boxes = _parse_boxes(d.pop("boxes", UNSET))

        evidence = cls(
            page=page,
            start=start,
            end=end,
            quote=quote,
            boxes=boxes,
        )

        return evidence
