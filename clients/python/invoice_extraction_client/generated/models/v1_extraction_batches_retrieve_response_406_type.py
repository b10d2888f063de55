from enum import StrEnum


class V1ExtractionBatchesRetrieveResponse406Type(StrEnum):
    VALUE_0 = "/problems/not-acceptable"

    def __str__(self) -> str:
        return str(self.value)
