from enum import StrEnum


class V1ExtractionBatchesRetrieveResponse400Type(StrEnum):
    VALUE_0 = "/problems/validation-error"

    def __str__(self) -> str:
        return str(self.value)
