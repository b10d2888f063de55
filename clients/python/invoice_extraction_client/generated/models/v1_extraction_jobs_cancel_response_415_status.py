from enum import IntEnum


class V1ExtractionJobsCancelResponse415Status(IntEnum):
    VALUE_415 = 415

    def __str__(self) -> str:
        return str(self.value)
