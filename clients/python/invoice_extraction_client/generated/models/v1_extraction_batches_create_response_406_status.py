from enum import IntEnum


class V1ExtractionBatchesCreateResponse406Status(IntEnum):
    VALUE_406 = 406

    def __str__(self) -> str:
        return str(self.value)
