from enum import StrEnum


class V1ExtractionJobsCancelResponse400Type(StrEnum):
    VALUE_0 = "/problems/malformed-request-body"
    VALUE_1 = "/problems/validation-error"

    def __str__(self) -> str:
        return str(self.value)
