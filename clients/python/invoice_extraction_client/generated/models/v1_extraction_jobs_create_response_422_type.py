from enum import StrEnum


class V1ExtractionJobsCreateResponse422Type(StrEnum):
    VALUE_0 = "/problems/unknown-document"

    def __str__(self) -> str:
        return str(self.value)
