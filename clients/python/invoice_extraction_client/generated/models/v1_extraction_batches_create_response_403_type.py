from enum import StrEnum


class V1ExtractionBatchesCreateResponse403Type(StrEnum):
    VALUE_0 = "/problems/permission-denied"

    def __str__(self) -> str:
        return str(self.value)
