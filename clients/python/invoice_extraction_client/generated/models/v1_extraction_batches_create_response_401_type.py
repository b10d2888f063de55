from enum import StrEnum


class V1ExtractionBatchesCreateResponse401Type(StrEnum):
    VALUE_0 = "/problems/authentication-failed"
    VALUE_1 = "/problems/not-authenticated"

    def __str__(self) -> str:
        return str(self.value)
