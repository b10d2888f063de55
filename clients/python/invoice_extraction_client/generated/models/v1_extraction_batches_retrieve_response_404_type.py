from enum import StrEnum


class V1ExtractionBatchesRetrieveResponse404Type(StrEnum):
    VALUE_0 = "/problems/not-found"

    def __str__(self) -> str:
        return str(self.value)
