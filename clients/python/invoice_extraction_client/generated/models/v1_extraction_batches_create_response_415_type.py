from enum import StrEnum


class V1ExtractionBatchesCreateResponse415Type(StrEnum):
    VALUE_0 = "/problems/unsupported-media-type"

    def __str__(self) -> str:
        return str(self.value)
