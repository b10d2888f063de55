from enum import StrEnum


class V1ExtractionJobsRerunResponse422Type(StrEnum):
    VALUE_0 = "/problems/too-many-matches"

    def __str__(self) -> str:
        return str(self.value)
