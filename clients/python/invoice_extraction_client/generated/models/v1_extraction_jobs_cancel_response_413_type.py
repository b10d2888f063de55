from enum import StrEnum


class V1ExtractionJobsCancelResponse413Type(StrEnum):
    VALUE_0 = "/problems/payload-too-large"

    def __str__(self) -> str:
        return str(self.value)
