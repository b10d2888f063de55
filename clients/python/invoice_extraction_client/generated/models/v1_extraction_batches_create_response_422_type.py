from enum import StrEnum


class V1ExtractionBatchesCreateResponse422Type(StrEnum):
    VALUE_0 = "/problems/archive-empty"
    VALUE_1 = "/problems/archive-unreadable"

    def __str__(self) -> str:
        return str(self.value)
