from enum import IntEnum


class V1ExtractionJobsCancelResponse413Status(IntEnum):
    VALUE_413 = 413

    def __str__(self) -> str:
        return str(self.value)
