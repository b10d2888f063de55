from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.batch_accepted_items_item_document_type_0 import (
        BatchAcceptedItemsItemDocumentType0,
    )
    from ..models.batch_accepted_items_item_job_type_0 import (
        BatchAcceptedItemsItemJobType0,
    )
    from ..models.problem import Problem


T = TypeVar("T", bound="BatchAcceptedItemsItem")


@_attrs_define
class BatchAcceptedItemsItem:
    """
    Attributes:
        position (int): The file's place in the request, from 0.
        filename (str): The name as sent; never used as a path.
        document (BatchAcceptedItemsItemDocumentType0 | None): Null if refused before storing.
        job (BatchAcceptedItemsItemJobType0 | None): The file's job; null when the file was refused.
        problem (None | Problem): Why the file was refused (RFC 9457); null when it has a job.
    """

    position: int
    filename: str
    document: BatchAcceptedItemsItemDocumentType0 | None
    job: BatchAcceptedItemsItemJobType0 | None
    problem: None | Problem
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.batch_accepted_items_item_document_type_0 import (
            BatchAcceptedItemsItemDocumentType0,
        )
        from ..models.batch_accepted_items_item_job_type_0 import (
            BatchAcceptedItemsItemJobType0,
        )
        from ..models.problem import Problem

        position = self.position

        filename = self.filename

        document: dict[str, Any] | None
        if isinstance(self.document, BatchAcceptedItemsItemDocumentType0):
            document = self.document.to_dict()
        else:
            document = self.document

        job: dict[str, Any] | None
        if isinstance(self.job, BatchAcceptedItemsItemJobType0):
            job = self.job.to_dict()
        else:
            job = self.job

        problem: dict[str, Any] | None
        if isinstance(self.problem, Problem):
            problem = self.problem.to_dict()
        else:
            problem = self.problem

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "position": position,
                "filename": filename,
                "document": document,
                "job": job,
                "problem": problem,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.batch_accepted_items_item_document_type_0 import (
            BatchAcceptedItemsItemDocumentType0,
        )
        from ..models.batch_accepted_items_item_job_type_0 import (
            BatchAcceptedItemsItemJobType0,
        )
        from ..models.problem import Problem

        d = dict(src_dict)
        position = d.pop("position")

        filename = d.pop("filename")

        def _parse_document(data: object) -> BatchAcceptedItemsItemDocumentType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                document_type_0 = BatchAcceptedItemsItemDocumentType0.from_dict(data)

                return document_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BatchAcceptedItemsItemDocumentType0 | None, data)

        document = _parse_document(d.pop("document"))

        def _parse_job(data: object) -> BatchAcceptedItemsItemJobType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                job_type_0 = BatchAcceptedItemsItemJobType0.from_dict(data)

                return job_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BatchAcceptedItemsItemJobType0 | None, data)

        job = _parse_job(d.pop("job"))

        def _parse_problem(data: object) -> None | Problem:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                problem_type_0 = Problem.from_dict(data)

                return problem_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Problem, data)

        problem = _parse_problem(d.pop("problem"))

        batch_accepted_items_item = cls(
            position=position,
            filename=filename,
            document=document,
            job=job,
            problem=problem,
        )

        batch_accepted_items_item.additional_properties = d
        return batch_accepted_items_item

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
