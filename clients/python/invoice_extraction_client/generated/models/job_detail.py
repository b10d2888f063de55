from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.job_detail_schema import JobDetailSchema
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.job_result import JobResult


T = TypeVar("T", bound="JobDetail")


@_attrs_define
class JobDetail:
    """
    Attributes:
        schema (JobDetailSchema | Unset):
        result (JobResult | None | Unset): The stored result, in the schema the job was accepted with.
    """

    schema: JobDetailSchema | Unset = UNSET
    result: JobResult | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.job_result import JobResult

        schema: str | Unset = UNSET
        if not isinstance(self.schema, Unset):
            schema = self.schema.value

        result: dict[str, Any] | None | Unset
        if isinstance(self.result, Unset):
            result = UNSET
        elif isinstance(self.result, JobResult):
            result = self.result.to_dict()
        else:
            result = self.result

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if schema is not UNSET:
            field_dict["schema"] = schema
        if result is not UNSET:
            field_dict["result"] = result

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.job_result import JobResult

        d = dict(src_dict)
        _schema = d.pop("schema", UNSET)
        schema: JobDetailSchema | Unset
        if isinstance(_schema, Unset):
            schema = UNSET
        else:
            schema = JobDetailSchema(_schema)

        def _parse_result(data: object) -> JobResult | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_job_result_type_0 = JobResult.from_dict(data)

                return componentsschemas_job_result_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobResult | None | Unset, data)

        result = _parse_result(d.pop("result", UNSET))

        job_detail = cls(
            schema=schema,
            result=result,
        )

        job_detail.additional_properties = d
        return job_detail

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
