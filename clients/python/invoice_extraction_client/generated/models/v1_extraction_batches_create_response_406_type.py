from enum import StrEnum


class V1ExtractionBatchesCreateResponse406Type(StrEnum):
    VALUE_0 = "/problems/not-acceptable"

    def __str__(self) -> str:
        return str(self.value)
