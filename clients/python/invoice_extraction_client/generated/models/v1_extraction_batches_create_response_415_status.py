from enum import IntEnum


class V1ExtractionBatchesCreateResponse415Status(IntEnum):
    VALUE_415 = 415

    def __str__(self) -> str:
        return str(self.value)
