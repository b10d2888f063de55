from enum import IntEnum


class V1ExtractionBatchesCreateResponse409Status(IntEnum):
    VALUE_409 = 409

    def __str__(self) -> str:
        return str(self.value)
