from enum import StrEnum


class V1ExtractionBatchesCreateResponse409Type(StrEnum):
    VALUE_0 = "/problems/idempotency-key-conflict"

    def __str__(self) -> str:
        return str(self.value)
