from enum import IntEnum


class V1ExtractionBatchesCreateResponse413Status(IntEnum):
    VALUE_413 = 413

    def __str__(self) -> str:
        return str(self.value)
